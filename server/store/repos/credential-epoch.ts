import type { BatchResult, BatchStatement } from '../driver.js';
import type { RepoContext } from './common.js';

/** The one row of `credential_epoch` (migration 0100, decisions PERF-20 and PERF-21). */
export interface CredentialEpoch {
  /** Changes with every change to a tool or an api.token, in the same transaction. */
  generation: number;
  /** The latest throttle window in which any instance counted a failed authentication; -1 before any. */
  failuresWindow: number;
}

/** The one row's id (the migration writes it, nothing deletes it). */
export const EPOCH_ROW_ID = 1;

/** An epoch from its columns, as a statement that joins the row reads them (PERF-180). */
export function toCredentialEpoch(generation: number | string, failuresWindow: number | string): CredentialEpoch {
  return { generation: Number(generation), failuresWindow: Number(failuresWindow) };
}

// The row's id as a parameter: a statement with one is a named prepared statement on PostgreSQL
// (PERF-130), parsed and planned once per connection (PERF-181).
const EPOCH_READ = 'SELECT generation, failures_window FROM credential_epoch WHERE id = ?';

type EpochRow = { generation: number | string; failures_window: number | string };

/** The read of `read()` as a statement of a transaction's batch (a score's first exchange, PERF-216). */
export function credentialEpochStatement(): BatchStatement {
  return { sql: EPOCH_READ, params: [EPOCH_ROW_ID] };
}

/** The row is written by the migration and never deleted; its absence would mean a broken schema. */
export function epochMissing(): Error {
  return new Error('credential_epoch has no row: the store was not migrated');
}

function epochOf(row: EpochRow | undefined): CredentialEpoch {
  if (!row) throw epochMissing();
  return toCredentialEpoch(row.generation, row.failures_window);
}

/** The epoch out of `credentialEpochStatement`'s result. */
export function credentialEpochOf(result: BatchResult | undefined): CredentialEpoch {
  return epochOf(result?.rows[0] as EpochRow | undefined);
}

export class CredentialEpochRepo {
  constructor(private readonly ctx: RepoContext) {}

  async read(): Promise<CredentialEpoch> {
    return epochOf(await this.ctx.db.get<EpochRow>(EPOCH_READ, [EPOCH_ROW_ID]));
  }
}
