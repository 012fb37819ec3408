import type { RepoContext } from './common.js';

/** The one row of `credential_epoch` (migration 0100, decisions PERF-20 and PERF-21). */
export interface CredentialEpoch {
  /** Changes with every change to a tool or an api.token, in the same transaction. */
  generation: number;
  /** The latest throttle window in which any instance counted a failed authentication; -1 before any. */
  failuresWindow: number;
}

export class CredentialEpochRepo {
  constructor(private readonly ctx: RepoContext) {}

  async read(): Promise<CredentialEpoch> {
    const row = await this.ctx.db.get<{ generation: number | string; failures_window: number | string }>(
      'SELECT generation, failures_window FROM credential_epoch WHERE id = 1',
    );
    // The row is written by the migration and never deleted; its absence would mean a broken schema.
    if (!row) throw new Error('credential_epoch has no row: the store was not migrated');
    return { generation: Number(row.generation), failuresWindow: Number(row.failures_window) };
  }
}
