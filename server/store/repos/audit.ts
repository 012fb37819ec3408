import { newId } from '../ids.js';
import type { JsonObject, RepoContext } from './common.js';
import { parseJson } from './common.js';

export type AuditActorKind = 'operator' | 'platform_token' | 'builder';

export interface AuditRecord {
  id: string;
  at: number;
  actor: { kind: AuditActorKind; id: string | null; name: string };
  action: string;
  target: string | null;
  /** The tool the entry is about, for the per-tool filter; null for builders and operators. */
  appId: string | null;
  /** The address the request came from, as the trusted proxies name it (H-21); null for entries before it was kept. */
  clientAddress: string | null;
  detail: JsonObject;
}

interface AuditRow {
  id: string;
  at: number;
  actor_kind: AuditActorKind;
  actor_id: string | null;
  actor_name: string;
  action: string;
  target: string | null;
  app_id: string | null;
  client_address: string | null;
  detail: string;
}

function toRecord(row: AuditRow): AuditRecord {
  return {
    id: row.id,
    at: Number(row.at),
    actor: { kind: row.actor_kind, id: row.actor_id, name: row.actor_name },
    action: row.action,
    target: row.target,
    appId: row.app_id,
    clientAddress: row.client_address ?? null,
    detail: parseJson<JsonObject>(row.detail, {}),
  };
}

/** Where a page of the log starts: the last entry of the page before, as (at, id). */
export type AuditPosition = [number, string];

/**
 * The audit log (decision OPS-03): append-only, read newest first by (at, id), so a page boundary is exact
 * even when several entries share a millisecond.
 */
export class AuditRepo {
  constructor(private readonly ctx: RepoContext) {}

  async append(entry: Omit<AuditRecord, 'id' | 'at'>): Promise<AuditRecord> {
    const record: AuditRecord = { id: newId('aud'), at: this.ctx.clock.nowMs(), ...entry };
    await this.ctx.db.run(
      `INSERT INTO audit_log (id, at, actor_kind, actor_id, actor_name, action, target, app_id, client_address, detail)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        record.id,
        record.at,
        record.actor.kind,
        record.actor.id,
        record.actor.name,
        record.action,
        record.target,
        record.appId,
        record.clientAddress,
        JSON.stringify(record.detail),
      ],
    );
    return record;
  }

  /** One page, newest first; `limit + 1` rows are read to know whether another page follows. */
  async list(input: { appId?: string; after?: AuditPosition; limit: number }): Promise<{ items: AuditRecord[]; more: boolean }> {
    const where: string[] = [];
    const params: Array<string | number> = [];
    if (input.appId !== undefined) {
      where.push('app_id = ?');
      params.push(input.appId);
    }
    if (input.after !== undefined) {
      where.push('(at < ? OR (at = ? AND id < ?))');
      params.push(input.after[0], input.after[0], input.after[1]);
    }
    const rows = await this.ctx.db.all<AuditRow>(
      `SELECT id, at, actor_kind, actor_id, actor_name, action, target, app_id, client_address, detail FROM audit_log
       ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY at DESC, id DESC LIMIT ?`,
      [...params, input.limit + 1],
    );
    return { items: rows.slice(0, input.limit).map(toRecord), more: rows.length > input.limit };
  }
}
