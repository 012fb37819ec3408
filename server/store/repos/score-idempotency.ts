import type { RepoContext } from './common.js';
import type { Clock } from '../time.js';

/** One `Idempotency-Key` of a tool's score submissions (decision H-07). */
export interface IdempotencyRecord {
  appId: string;
  key: string;
  /** Digest of what the first request asked (URL and body); another request under the key differs. */
  fingerprint: string;
  /** The first request's attempt, null while it is being published. */
  attemptId: string | null;
  createdAt: number;
}

export interface IdempotencyRow {
  app_id: string;
  idempotency_key: string;
  fingerprint: string;
  attempt_id: string | null;
  created_at: number | string;
}

export const toIdempotencyRecord = (row: IdempotencyRow): IdempotencyRecord => ({
  appId: row.app_id,
  key: row.idempotency_key,
  fingerprint: row.fingerprint,
  attemptId: row.attempt_id,
  createdAt: Number(row.created_at),
});

export class ScoreIdempotencyRepo {
  constructor(private readonly ctx: RepoContext) {}

  /**
   * Claims the key for a new request, or returns the record that holds it. A record older than
   * `staleBeforeMs` (created before it) no longer holds the key: it is replaced by the new claim.
   */
  async claim(
    appId: string,
    key: string,
    fingerprint: string,
    staleBefore: { keptMs: number; unfinishedMs: number },
  ): Promise<{ claimed: true } | { claimed: false; held: IdempotencyRecord }> {
    return this.ctx.db.transaction(async (tx) => {
      const now = this.ctx.clock.nowMs();
      const inserted = await tx.run(
        `INSERT INTO score_idempotency (app_id, idempotency_key, fingerprint, attempt_id, created_at)
         VALUES (?, ?, ?, NULL, ?) ON CONFLICT (app_id, idempotency_key) DO NOTHING`,
        [appId, key, fingerprint, now],
      );
      if (inserted.changes > 0) return { claimed: true as const };
      // PostgreSQL: hold the row, so two requests taking over an expired key cannot both win.
      const lock = tx.dialect === 'postgres' ? ' FOR UPDATE' : '';
      const row = await tx.get<IdempotencyRow>(
        `SELECT app_id, idempotency_key, fingerprint, attempt_id, created_at FROM score_idempotency
         WHERE app_id = ? AND idempotency_key = ?${lock}`,
        [appId, key],
      );
      if (!row) return { claimed: false as const, held: { appId, key, fingerprint, attemptId: null, createdAt: now } };
      const held = toIdempotencyRecord(row);
      const expired =
        held.createdAt <= now - staleBefore.keptMs || (held.attemptId === null && held.createdAt <= now - staleBefore.unfinishedMs);
      if (!expired) return { claimed: false as const, held };
      await tx.run(
        `UPDATE score_idempotency SET fingerprint = ?, attempt_id = NULL, created_at = ? WHERE app_id = ? AND idempotency_key = ?`,
        [fingerprint, now, appId, key],
      );
      return { claimed: true as const };
    });
  }

  async complete(appId: string, key: string, attemptId: string): Promise<void> {
    await this.ctx.db.run('UPDATE score_idempotency SET attempt_id = ? WHERE app_id = ? AND idempotency_key = ?', [attemptId, appId, key]);
  }

  /** A claim whose request ended without an attempt (refused before publishing) frees its key. */
  async release(appId: string, key: string): Promise<void> {
    await this.ctx.db.run('DELETE FROM score_idempotency WHERE app_id = ? AND idempotency_key = ? AND attempt_id IS NULL', [appId, key]);
  }

  /** Forgets keys older than `keptMs`. */
  async sweep(keptMs: number): Promise<number> {
    return (await this.ctx.db.run('DELETE FROM score_idempotency WHERE created_at < ?', [this.ctx.clock.nowMs() - keptMs])).changes;
  }
}

/**
 * `ScoreIdempotencyRepo.claim` as ONE statement, for PostgreSQL's score transaction, which sends it in its
 * first exchange (decision PERF-173): a new key is inserted, an expired one taken over, and either returns
 * a row; a key held by a live record returns none. `ON CONFLICT DO UPDATE` locks the conflicting row even
 * when its WHERE leaves it unchanged, so the held row is locked as `FOR UPDATE` locked it (H-07).
 */
export function claimStatement(
  clock: Clock,
  appId: string,
  key: string,
  fingerprint: string,
  staleBefore: { keptMs: number; unfinishedMs: number },
): { sql: string; params: Array<string | number> } {
  const now = clock.nowMs();
  return {
    sql: `INSERT INTO score_idempotency (app_id, idempotency_key, fingerprint, attempt_id, created_at)
          VALUES (?, ?, ?, NULL, ?)
          ON CONFLICT (app_id, idempotency_key) DO UPDATE
            SET fingerprint = excluded.fingerprint, attempt_id = NULL, created_at = excluded.created_at
            WHERE score_idempotency.created_at <= ?
               OR (score_idempotency.attempt_id IS NULL AND score_idempotency.created_at <= ?)
          RETURNING 1 AS claimed`,
    params: [appId, key, fingerprint, now, now - staleBefore.keptMs, now - staleBefore.unfinishedMs],
  };
}

/** The record holding a key `claimStatement` could not claim (already locked by it). */
export function heldStatement(appId: string, key: string): { sql: string; params: string[] } {
  return {
    sql: `SELECT app_id, idempotency_key, fingerprint, attempt_id, created_at FROM score_idempotency
          WHERE app_id = ? AND idempotency_key = ?`,
    params: [appId, key],
  };
}
