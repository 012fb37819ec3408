import { schemas } from '../../../generated/2026-09-21/schemas.js';
import { InvalidRowBodyError, RowTooLargeError } from '../errors.js';
import type { JsonObject, RepoContext, RowKey, RowKind } from './common.js';
import { isJsonObject, ROW_KEY_WHERE, rowKeyParams } from './common.js';

/**
 * Decision GAP-06: binary units, counted on the UTF-8 bytes of the compact JSON. The limit per level is the
 * Row schema's `x-limits` (decision KIT-20); the type makes a level the spec leaves out a compile error here.
 */
const ROW_MAX_BYTES: Readonly<Record<RowKind, number>> = schemas.Row['x-limits'].max_bytes;
export const MEMBER_ROW_MAX_BYTES = ROW_MAX_BYTES.member;
export const SHARED_ROW_MAX_BYTES = ROW_MAX_BYTES.context;

export function rowMaxBytes(kind: RowKind): number {
  return ROW_MAX_BYTES[kind];
}

export interface RowWriteOptions {
  /** The caller's limit for this row; a larger body is refused and nothing is written. */
  maxBytes: number;
}

export interface RowRecord {
  /** Compact JSON text of the object, exactly as last written. */
  body: string;
  /** UTF-8 bytes of `body`. */
  size: number;
  updatedAt: number;
}

/** A pure function from the current object to the next; throwing aborts the patch and writes nothing. */
export type RowPatchFn = (current: JsonObject) => JsonObject;

const EMPTY_ROW = '{}';

function serialize(value: unknown, maxBytes: number): { body: string; size: number } {
  if (!isJsonObject(value)) throw new InvalidRowBodyError();
  const body = JSON.stringify(value);
  const size = Buffer.byteLength(body, 'utf8');
  if (size > maxBytes) throw new RowTooLargeError(size, maxBytes);
  return { body, size };
}

/**
 * The four JSON storage rows. Bodies are kept as compact JSON text so a GET returns the stored text
 * untouched (no re-serialization, and the key order of the write, decision GAP-37).
 */
export class RowsRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** The row's JSON text; a never-written row reads as `{}`. */
  async getRow(key: RowKey): Promise<string> {
    return (await this.getRecord(key))?.body ?? EMPTY_ROW;
  }

  async getRecord(key: RowKey): Promise<RowRecord | null> {
    const row = await this.ctx.db.get<{ body: string; size_bytes: number; updated_at: number }>(
      `SELECT body, size_bytes, updated_at FROM storage_rows WHERE ${ROW_KEY_WHERE}`,
      rowKeyParams(key),
    );
    return row ? { body: row.body, size: row.size_bytes, updatedAt: row.updated_at } : null;
  }

  /** Replaces the whole row. Throws `RowTooLargeError` (nothing written) over `maxBytes`. */
  async putRow(key: RowKey, value: JsonObject, options: RowWriteOptions): Promise<{ size: number }> {
    const { body, size } = serialize(value, options.maxBytes);
    await this.ctx.db.run(
      `INSERT INTO storage_rows (app_id, context_id, kind, location_id, member_id, body, size_bytes, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (app_id, context_id, kind, location_id, member_id)
       DO UPDATE SET body = excluded.body, size_bytes = excluded.size_bytes, updated_at = excluded.updated_at`,
      [...rowKeyParams(key), body, size, this.ctx.clock.nowMs()],
    );
    return { size };
  }

  /**
   * Read-modify-write under the row lock: concurrent patches of different keys all land. `fn` runs
   * inside the transaction, so it must be quick and pure; if it throws, or its result is over
   * `maxBytes`, the transaction rolls back and the row is unchanged.
   */
  async patchRow(key: RowKey, fn: RowPatchFn, options: RowWriteOptions): Promise<RowRecord> {
    const params = rowKeyParams(key);
    return this.ctx.db.transaction(async (tx) => {
      const now = this.ctx.clock.nowMs();
      // Materialize the row first: on PostgreSQL, FOR UPDATE cannot lock a row that does not exist yet.
      await tx.run(
        `INSERT INTO storage_rows (app_id, context_id, kind, location_id, member_id, body, size_bytes, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (app_id, context_id, kind, location_id, member_id) DO NOTHING`,
        [...params, EMPTY_ROW, EMPTY_ROW.length, now],
      );
      const current = await tx.get<{ body: string }>(
        `SELECT body FROM storage_rows WHERE ${ROW_KEY_WHERE}${tx.forUpdate}`,
        params,
      );
      const parsed: unknown = JSON.parse(current?.body ?? EMPTY_ROW);
      if (!isJsonObject(parsed)) throw new InvalidRowBodyError('stored row is not a JSON object');
      const { body, size } = serialize(fn(parsed), options.maxBytes);
      await tx.run(`UPDATE storage_rows SET body = ?, size_bytes = ?, updated_at = ? WHERE ${ROW_KEY_WHERE}`, [
        body,
        size,
        now,
        ...params,
      ]);
      return { body, size, updatedAt: now };
    });
  }

  async deleteRow(key: RowKey): Promise<boolean> {
    const result = await this.ctx.db.run(`DELETE FROM storage_rows WHERE ${ROW_KEY_WHERE}`, rowKeyParams(key));
    return result.changes > 0;
  }

  /** Discards every row of the tool in the course (a Sandbox reset, decision GAP-39). */
  async deleteForContext(appId: string, contextId: string): Promise<number> {
    const result = await this.ctx.db.run('DELETE FROM storage_rows WHERE app_id = ? AND context_id = ?', [
      appId,
      contextId,
    ]);
    return result.changes;
  }
}
