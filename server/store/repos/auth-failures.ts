import type { RepoContext } from './common.js';

/**
 * Failed authentications counted per bucket (a client address, a credential prefix) and fixed window
 * (decision H-05). Kept in the store so that every instance on one database counts the same failures.
 */
export class AuthFailuresRepo {
  constructor(private readonly ctx: RepoContext) {}

  /**
   * Adds failures to buckets of one window in one transaction (a burst of refusals is one commit); the
   * count of each bucket after the addition.
   */
  async record(increments: ReadonlyMap<string, number>, windowStart: number): Promise<Map<string, number>> {
    return this.ctx.db.transaction(async (tx) => {
      const out = new Map<string, number>();
      for (const [bucket, add] of increments) {
        const row = await tx.get<{ failures: number | string }>(
          `INSERT INTO auth_failures (bucket, window_start, failures) VALUES (?, ?, ?)
           ON CONFLICT (bucket, window_start) DO UPDATE SET failures = auth_failures.failures + excluded.failures
           RETURNING failures`,
          [bucket, windowStart, add],
        );
        out.set(bucket, Number(row?.failures ?? add));
      }
      return out;
    });
  }

  /** The failures of each bucket in the window (0 when none). */
  async counts(buckets: readonly string[], windowStart: number): Promise<Map<string, number>> {
    const out = new Map<string, number>(buckets.map((b) => [b, 0]));
    if (buckets.length === 0) return out;
    const rows = await this.ctx.db.all<{ bucket: string; failures: number | string }>(
      `SELECT bucket, failures FROM auth_failures WHERE window_start = ? AND bucket IN (${buckets.map(() => '?').join(', ')})`,
      [windowStart, ...buckets],
    );
    for (const row of rows) out.set(row.bucket, Number(row.failures));
    return out;
  }

  /** Forgets windows that started before `beforeMs`. */
  async sweep(beforeMs: number): Promise<number> {
    return (await this.ctx.db.run('DELETE FROM auth_failures WHERE window_start < ?', [beforeMs])).changes;
  }
}
