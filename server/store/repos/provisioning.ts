import type { Driver } from '../driver.js';
import type { RepoContext } from './common.js';

export type ProvisioningState = 'pending' | 'provisioned' | 'failed';

/** A course level (`locationId` absent) or a location level of one tool in one course. */
export interface ProvisioningLevel {
  appId: string;
  contextId: string;
  locationId?: string;
}

export interface ProvisioningRecord {
  appId: string;
  contextId: string;
  locationId: string | null;
  state: ProvisioningState;
  lastRequestAt: number | null;
  lastError: string | null;
  provisionedAt: number | null;
  updatedAt: number;
}

interface ProvisioningRow {
  app_id: string;
  context_id: string;
  location_id?: string;
  state: ProvisioningState;
  last_request_at: number | null;
  last_error: string | null;
  provisioned_at: number | null;
  updated_at: number;
}

/** Decision GAP-16: a level whose last request failed, or is older than this, is asked again. */
export const PROVISION_RETRY_AFTER_MS = 60_000;

function target(level: ProvisioningLevel): { table: string; where: string; params: string[]; columns: string } {
  return level.locationId === undefined
    ? {
        table: 'context_provisioning',
        where: 'app_id = ? AND context_id = ?',
        params: [level.appId, level.contextId],
        columns: 'app_id, context_id',
      }
    : {
        table: 'location_provisioning',
        where: 'app_id = ? AND context_id = ? AND location_id = ?',
        params: [level.appId, level.contextId, level.locationId],
        columns: 'app_id, context_id, location_id',
      };
}

function toRecord(row: ProvisioningRow): ProvisioningRecord {
  return {
    appId: row.app_id,
    contextId: row.context_id,
    locationId: row.location_id ?? null,
    state: row.state,
    lastRequestAt: row.last_request_at,
    lastError: row.last_error,
    provisionedAt: row.provisioned_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Provisioning state of the context and location levels. A level with no record has never been asked
 * for and is unprovisioned; member levels are never unprovisioned and have no records.
 */
export class ProvisioningRepo {
  constructor(private readonly ctx: RepoContext) {}

  async get(level: ProvisioningLevel): Promise<ProvisioningRecord | null> {
    return read(this.ctx.db, level, '');
  }

  async isProvisioned(level: ProvisioningLevel): Promise<boolean> {
    return (await this.get(level))?.state === 'provisioned';
  }

  /**
   * Decides, atomically, whether this caller sends the provision request: yes when the level is not
   * provisioned and has no request in flight younger than `retryAfterMs` (a failed one does not count).
   * Two launches racing for an unprovisioned course thus send one request, not two.
   */
  async claimRequest(
    level: ProvisioningLevel,
    options: { retryAfterMs?: number } = {},
  ): Promise<{ send: boolean; record: ProvisioningRecord }> {
    const retryAfterMs = options.retryAfterMs ?? PROVISION_RETRY_AFTER_MS;
    return this.ctx.db.transaction(async (tx) => {
      const t = target(level);
      const now = this.ctx.clock.nowMs();
      const inserted = await tx.run(
        `INSERT INTO ${t.table} (${t.columns}, state, last_request_at, updated_at)
         VALUES (${t.params.map(() => '?').join(', ')}, 'pending', ?, ?)
         ON CONFLICT (${t.columns}) DO NOTHING`,
        [...t.params, now, now],
      );
      let send = inserted.changes === 1;
      if (!send) {
        const current = await read(tx, level, tx.forUpdate);
        if (
          current &&
          current.state !== 'provisioned' &&
          (current.state === 'failed' || current.lastRequestAt === null || now - current.lastRequestAt >= retryAfterMs)
        ) {
          await tx.run(`UPDATE ${t.table} SET state = 'pending', last_request_at = ?, updated_at = ? WHERE ${t.where}`, [
            now,
            now,
            ...t.params,
          ]);
          send = true;
        }
      }
      const record = await read(tx, level, '');
      if (!record) throw new Error('provisioning record vanished inside its own transaction');
      return { send, record };
    });
  }

  /** The request failed; a level already provisioned (the tool PUT before we saw the failure) stays so. */
  async markFailed(level: ProvisioningLevel, error: string): Promise<ProvisioningRecord | null> {
    const t = target(level);
    await this.ctx.db.run(
      `UPDATE ${t.table} SET state = 'failed', last_error = ?, updated_at = ? WHERE ${t.where} AND state <> 'provisioned'`,
      [error, this.ctx.clock.nowMs(), ...t.params],
    );
    return this.get(level);
  }

  /** The tool's provision PUT, or a level that needs no request (decision GAP-17). Idempotent (NS-09). */
  async markProvisioned(level: ProvisioningLevel): Promise<ProvisioningRecord> {
    return this.ctx.db.transaction(async (tx) => {
      const t = target(level);
      const now = this.ctx.clock.nowMs();
      await tx.run(
        `INSERT INTO ${t.table} (${t.columns}, state, provisioned_at, updated_at)
         VALUES (${t.params.map(() => '?').join(', ')}, 'provisioned', ?, ?)
         ON CONFLICT (${t.columns}) DO NOTHING`,
        [...t.params, now, now],
      );
      await tx.run(
        `UPDATE ${t.table} SET state = 'provisioned', provisioned_at = ?, last_error = NULL, updated_at = ?
         WHERE ${t.where} AND state <> 'provisioned'`,
        [now, now, ...t.params],
      );
      const record = await read(tx, level, '');
      if (!record) throw new Error('provisioning record vanished inside its own transaction');
      return record;
    });
  }

  /** Forgets every level of the tool in the course, so the next launch provisions again (GAP-39). */
  async resetContext(appId: string, contextId: string): Promise<void> {
    await this.ctx.db.transaction(async (tx) => {
      await tx.run('DELETE FROM context_provisioning WHERE app_id = ? AND context_id = ?', [appId, contextId]);
      await tx.run('DELETE FROM location_provisioning WHERE app_id = ? AND context_id = ?', [appId, contextId]);
    });
  }
}

async function read(db: Driver, level: ProvisioningLevel, suffix: string): Promise<ProvisioningRecord | null> {
  const t = target(level);
  const row = await db.get<ProvisioningRow>(
    `SELECT ${t.columns}, state, last_request_at, last_error, provisioned_at, updated_at FROM ${t.table}
     WHERE ${t.where}${suffix}`,
    t.params,
  );
  return row ? toRecord(row) : null;
}
