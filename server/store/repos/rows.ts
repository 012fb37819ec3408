import { schemas } from '../../../generated/2026-09-21/schemas.js';
import { InvalidRowBodyError, RowTooLargeError } from '../errors.js';
import { Coalescer, type Pending } from '../coalesce.js';
import { PostgresDriver } from '../postgres.js';
import type { JsonObject, RepoContext, RowKey, RowKind } from './common.js';
import { isJsonObject, ROW_KEY_WHERE, rowKeyParams } from './common.js';
import type { CredentialEpoch } from './credential-epoch.js';
import { EPOCH_ROW_ID, epochMissing, toCredentialEpoch } from './credential-epoch.js';
import type { MemberRecord, MemberRow } from './directory.js';
import { toMember } from './directory.js';

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

/** Optimistic tries of a PostgreSQL patch before it waits for the row lock (PERF-51). */
const OPTIMISTIC_ATTEMPTS = 3;

/**
 * A patch that sets one member of an object in the row (a one-operation `add` or `replace`), which the
 * store may apply in SQL instead of running the patch function (PERF-51). `tokens` are the JSON
 * Pointer's decoded tokens; `mustExist` (a `replace`) needs the member to be there already, an `add` only
 * its parent object. The caller's function must give the same result for the same row.
 */
export interface RowMemberSet {
  readonly tokens: readonly string[];
  readonly value: unknown;
  readonly mustExist: boolean;
}

function parseStored(text: string): JsonObject {
  const parsed: unknown = JSON.parse(text);
  if (!isJsonObject(parsed)) throw new InvalidRowBodyError('stored row is not a JSON object');
  return parsed;
}

/**
 * A member name `json_set` may take: SQLite's quoted path label has no escapes (so no `"` or `\`), and
 * a name JavaScript would order first (an array-index-like name, e.g. "3") or treat specially
 * (`__proto__`) would not land where `JSON.stringify` of the patched object puts it, so those go the
 * general way. Appending any other new name at the end is where JavaScript's object order puts it too.
 */
const PLAIN_MEMBER = /^(?!\d+$)(?!__proto__$)[^"\\\u0000-\u001f]+$/;

/** `$."a"."b"` for the tokens, or null when a token is not a plain member name. */
function sqliteJsonPath(tokens: readonly string[]): string | null {
  let path = '$';
  for (const token of tokens) {
    if (!PLAIN_MEMBER.test(token)) return null;
    path += `."${token}"`;
  }
  return path;
}

/** SQLite's JSON functions refused the stored text or the value (e.g. nested deeper than they parse). */
function isSqliteJsonRefusal(err: unknown): boolean {
  return err instanceof Error && (err as { code?: unknown }).code === 'SQLITE_ERROR' && /JSON/i.test(err.message);
}

/** A row's object as it is stored: its compact JSON text and that text's UTF-8 bytes (decision GAP-06). */
export interface SerializedRow {
  readonly body: string;
  readonly size: number;
}

/**
 * The stored form of a row's object, made once per write: throws `InvalidRowBodyError` for anything but
 * an object and `RowTooLargeError` over `maxBytes`.
 */
export function serializeRow(value: unknown, maxBytes: number): SerializedRow {
  if (!isJsonObject(value)) throw new InvalidRowBodyError();
  const body = JSON.stringify(value);
  const size = Buffer.byteLength(body, 'utf8');
  if (size > maxBytes) throw new RowTooLargeError(size, maxBytes);
  return { body, size };
}

/** What a row request reads before it is decided (`RowsRepo.readForRequest`), all from one statement. */
export interface RowRequestRead {
  /** The credential epoch as this statement saw it (PERF-180). */
  epoch: CredentialEpoch;
  /** The user's membership in the row's course; null for no such member, or no user. */
  member: MemberRecord | null;
  /** The row's stored text, when asked for: null for a row never written. */
  body?: string | null;
}

const REQUEST_READ_COLUMNS = `e.generation, e.failures_window, m.id AS m_id, m.context_id AS m_context_id,
  m.user_id AS m_user_id, m.group_names AS m_group_names, m.created_at AS m_created_at, m.updated_at AS m_updated_at`;
const REQUEST_READ_MEMBER = 'LEFT JOIN members m ON m.context_id = ? AND m.user_id = ?';
/** The epoch's one row drives the statement, so it answers one row whether or not the others exist. */
const REQUEST_READ = `SELECT ${REQUEST_READ_COLUMNS} FROM credential_epoch e ${REQUEST_READ_MEMBER} WHERE e.id = ?`;
const REQUEST_READ_WITH_ROW = `SELECT ${REQUEST_READ_COLUMNS}, r.body AS r_body FROM credential_epoch e ${REQUEST_READ_MEMBER}
  LEFT JOIN storage_rows r ON r.app_id = ? AND r.context_id = ? AND r.kind = ? AND r.location_id = ? AND r.member_id = ?
  WHERE e.id = ?`;

/**
 * Many requests' reads (PERF-210) in one statement whatever their number, the keys as one JSON array (one
 * named prepared statement, PERF-130). The epoch's one row is read once for all of them; each key's
 * membership and row are found through their unique indexes (LATERAL with LIMIT and a scalar subquery,
 * so the planner cannot turn them into scans joined by hash against the estimated hundred keys).
 */
const REQUEST_READ_MANY = `SELECT k.i, ${REQUEST_READ_COLUMNS},
    CASE WHEN k.w THEN (SELECT r.body FROM storage_rows r WHERE r.app_id = k.a AND r.context_id = k.c
      AND r.kind = k.kd AND r.location_id = k.l AND r.member_id = k.mb) END AS r_body
  FROM credential_epoch e
  CROSS JOIN json_to_recordset(?::json) AS k(i integer, c text, u text, w boolean, a text, kd text, l text, mb text)
  LEFT JOIN LATERAL (SELECT id, context_id, user_id, group_names, created_at, updated_at FROM members
    WHERE members.context_id = k.c AND members.user_id = k.u LIMIT 1) m ON true
  WHERE e.id = ?`;

interface RequestReadRow {
  generation: number | string;
  failures_window: number | string;
  m_id: string | null;
  m_context_id: string;
  m_user_id: string;
  m_group_names: string;
  m_created_at: number;
  m_updated_at: number;
  r_body?: string | null;
}

function toRequestRead(row: RequestReadRow, withRow: boolean): RowRequestRead {
  const read: RowRequestRead = {
    epoch: toCredentialEpoch(row.generation, row.failures_window),
    member:
      row.m_id === null
        ? null
        : toMember({
            id: row.m_id,
            context_id: row.m_context_id,
            user_id: row.m_user_id,
            group_names: row.m_group_names,
            created_at: row.m_created_at,
            updated_at: row.m_updated_at,
          } satisfies MemberRow),
  };
  if (withRow) read.body = row.r_body ?? null;
  return read;
}

/** A PUT waiting for its batch on PostgreSQL (PERF-183). */
interface PendingPut {
  readonly id: string;
  readonly params: readonly [string, string, RowKind, string, string];
  readonly body: string;
  readonly size: number;
  readonly updatedAt: number;
}

/** A PostgreSQL patch waiting in its row's queue (PERF-211). */
interface QueuedPatch {
  readonly fn: RowPatchFn;
  readonly maxBytes: number;
  resolve(record: RowRecord): void;
  reject(err: unknown): void;
}

/** At most this many queued patches of one row share one conditional write (PERF-211). */
const PATCH_GROUP_MAX = 256;

/** A row guard's read waiting for its batch on PostgreSQL (PERF-210). */
interface PendingRead {
  readonly params: readonly [string, string, RowKind, string, string];
  readonly userId: string | null;
  readonly row: boolean;
}

/** At most this many PUTs share one statement; the rest take the next. */
const PUTS = { maxBatch: 256, maxInFlight: 1 };
/**
 * At most this many row guards' reads share one statement, one batch in flight (PERF-210): with two, a read
 * arriving while one was in flight mostly went alone in the second, and a warm GET cost the instance 0.77 ms
 * of CPU against 0.41 ms with one.
 */
const READS = { maxBatch: 128, maxInFlight: 1 };

const UPSERT_ROW = `INSERT INTO storage_rows (app_id, context_id, kind, location_id, member_id, body, size_bytes, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (app_id, context_id, kind, location_id, member_id)
       DO UPDATE SET body = excluded.body, size_bytes = excluded.size_bytes, updated_at = excluded.updated_at`;

/**
 * Many rows' upserts as one statement whatever their number: the rows travel as one JSON array, so the text
 * (one named prepared statement, PERF-130) is the same for a batch of 1 or 256.
 */
const UPSERT_ROWS = `INSERT INTO storage_rows (app_id, context_id, kind, location_id, member_id, body, size_bytes, updated_at)
       SELECT app_id, context_id, kind, location_id, member_id, body, size_bytes, updated_at
       FROM json_to_recordset(?::json) AS r(app_id text, context_id text, kind text, location_id text, member_id text,
         body text, size_bytes integer, updated_at bigint)
       ON CONFLICT (app_id, context_id, kind, location_id, member_id)
       DO UPDATE SET body = excluded.body, size_bytes = excluded.size_bytes, updated_at = excluded.updated_at`;

/**
 * The four JSON storage rows. Bodies are kept as compact JSON text so a GET returns the stored text
 * untouched (no re-serialization, and the key order of the write, decision GAP-37).
 */
export class RowsRepo {
  /** PostgreSQL patches of a row by this process (PERF-51) waiting while a group of them is written (PERF-211). */
  readonly #patching = new Map<string, QueuedPatch[]>();
  /** PostgreSQL PUTs that arrived while a batch was being written (PERF-183), in arrival order. */
  readonly #puts = new Coalescer<PendingPut, void>((batch) => this.#writeBatch(batch), PUTS);
  /** PostgreSQL row guards' reads that arrived while a batch was being read (PERF-210). */
  readonly #reads = new Coalescer<PendingRead, RowRequestRead>((batch) => this.#readBatch(batch), READS);

  constructor(private readonly ctx: RepoContext) {}

  /**
   * What the row guard reads (PERF-180), in one statement: the credential epoch (which confirms the one the
   * request took on trust), the membership of `userId` in the row's course, and, with `row`, the row's
   * stored text (a GET answers with it; a PATCH starts from it). One snapshot of all three: on PostgreSQL
   * one statement, shared with the reads that arrived while another was in flight (PERF-210); on SQLite one
   * read. Reading the row before the request is decided reveals nothing: the
   * text is handed on only if the guard allows the request.
   */
  async readForRequest(key: RowKey, options: { userId: string | null; row: boolean }): Promise<RowRequestRead> {
    const read: PendingRead = { params: rowKeyParams(key), userId: options.userId, row: options.row };
    return this.ctx.db instanceof PostgresDriver ? this.#reads.submit(read) : this.#readOne(read);
  }

  async #readOne({ params, userId, row: withRow }: PendingRead): Promise<RowRequestRead> {
    const member = [params[1], userId];
    const row = withRow
      ? await this.ctx.db.get<RequestReadRow>(REQUEST_READ_WITH_ROW, [...member, ...params, EPOCH_ROW_ID])
      : await this.ctx.db.get<RequestReadRow>(REQUEST_READ, [...member, EPOCH_ROW_ID]);
    if (!row) throw epochMissing();
    return toRequestRead(row, withRow);
  }

  /**
   * The reads of a batch in one statement (PERF-210); each answered from its own result row. If the
   * statement fails, each read runs again alone and gets its own outcome: one read's error is never another's.
   */
  async #readBatch(batch: readonly Pending<PendingRead, RowRequestRead>[]): Promise<void> {
    const only = batch.length === 1 ? batch[0] : undefined;
    if (only) {
      await this.#readOne(only.input).then(only.resolve, only.reject);
      return;
    }
    const keys = batch.map(({ input: { params: [a, c, kd, l, mb], userId, row } }, i) => ({ i, c, u: userId, w: row, a, kd, l, mb }));
    let rows: (RequestReadRow & { i: number })[];
    try {
      rows = await this.ctx.db.all<RequestReadRow & { i: number }>(REQUEST_READ_MANY, [JSON.stringify(keys), EPOCH_ROW_ID]);
    } catch {
      for (const { input, resolve, reject } of batch) {
        await this.#readOne(input).then(resolve, reject);
      }
      return;
    }
    const byIndex = new Map(rows.map((row) => [row.i, row]));
    batch.forEach(({ input, resolve, reject }, i) => {
      const row = byIndex.get(i);
      if (row) resolve(toRequestRead(row, input.row));
      else reject(epochMissing());
    });
  }

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
    return this.putSerialized(key, serializeRow(value, options.maxBytes));
  }

  /** Replaces the whole row with what `serializeRow` made (which checked it against the caller's limit). */
  async putSerialized(key: RowKey, { body, size }: SerializedRow): Promise<{ size: number }> {
    const params = rowKeyParams(key);
    const updatedAt = this.ctx.clock.nowMs();
    if (this.ctx.db instanceof PostgresDriver) {
      await this.#puts.submit({ id: params.join('\u0000'), params, body, size, updatedAt });
    } else {
      await this.ctx.db.run(UPSERT_ROW, [...params, body, size, updatedAt]);
    }
    return { size };
  }

  /**
   * PostgreSQL's PUTs outside a transaction, grouped (PERF-183): while one statement is in flight the
   * PUTs that arrive wait, then go together in the next, one statement and one commit (one WAL flush, with
   * `synchronous_commit` on) for all of them. With none in flight a PUT goes at once, alone. Each PUT is
   * answered when the statement that holds it has committed, never before. Two PUTs of one row in one
   * statement: the later one's text is written (PostgreSQL's upsert cannot touch a row twice), as if they
   * had run one after the other in the order they arrived; a later arrival never goes in an earlier
   * statement. Rows are written in key order, so two instances' batches lock shared rows in one order. If
   * the statement fails, each PUT of it is written again alone, in arrival order, and answered with its
   * own outcome: one PUT's error is never another's.
   */
  async #writeBatch(batch: readonly Pending<PendingPut, void>[]): Promise<void> {
    const db = this.ctx.db;
    const only = batch.length === 1 ? batch[0] : undefined;
    if (only) {
      const put = only.input;
      await db.run(UPSERT_ROW, [...put.params, put.body, put.size, put.updatedAt]).then(() => only.resolve(), only.reject);
      return;
    }
    const latest = new Map<string, PendingPut>();
    for (const { input } of batch) latest.set(input.id, input);
    const rows = [...latest.values()]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map(({ params: [app_id, context_id, kind, location_id, member_id], body, size, updatedAt }) => ({
        app_id,
        context_id,
        kind,
        location_id,
        member_id,
        body,
        size_bytes: size,
        updated_at: updatedAt,
      }));
    try {
      await db.run(UPSERT_ROWS, [JSON.stringify(rows)]);
    } catch {
      for (const { input: put, resolve, reject } of batch) {
        await db.run(UPSERT_ROW, [...put.params, put.body, put.size, put.updatedAt]).then(() => resolve(), reject);
      }
      return;
    }
    for (const put of batch) put.resolve();
  }

  /**
   * Read-modify-write of one row: concurrent patches of different keys all land. `fn` must be quick and
   * pure (it may run more than once, on the row as it stood at each try); if it throws, or its result
   * is over `maxBytes`, nothing is written and the row is unchanged.
   *
   * How many statements that takes (PERF-51): on SQLite, a `memberSet` the SQL can express is one UPDATE
   * (`json_set` on the stored text, which keeps every other byte of it); anything else is the SELECT and
   * an upsert under `BEGIN IMMEDIATE`. On PostgreSQL (whose JSON functions cannot edit text in place:
   * `jsonb` reorders keys), a read and one conditional write that lands only if the row is still the text
   * that was read, tried again on a conflict; after a few conflicts, under the row lock.
   */
  async patchRow(
    key: RowKey,
    fn: RowPatchFn,
    options: RowWriteOptions & {
      memberSet?: RowMemberSet | undefined;
      /**
       * The row's stored text (null: no row) as a statement of this request read it moments ago
       * (`readForRequest`). On PostgreSQL the first conditional write starts from it instead of reading
       * again (PERF-182), when no patch of this process is queued on the row (behind one, from the text
       * that one wrote, PERF-184): a stale text only makes that write miss and read again.
       */
      read?: string | null | undefined;
    },
  ): Promise<RowRecord> {
    const db = this.ctx.db;
    if (db.dialect === 'sqlite') {
      if (options.memberSet) {
        const done = await this.#setMemberInSql(key, options.memberSet, options.maxBytes);
        if (done) return done;
      }
      return this.#patchLocked(key, fn, options.maxBytes);
    }
    // This process's patches of one row queue rather than race, and those queued while one is being written
    // go together (PERF-211): only another instance's write can make the conditional write miss.
    const id = rowKeyParams(key).join('\u0000');
    return new Promise<RowRecord>((resolve, reject) => {
      const patch: QueuedPatch = { fn, maxBytes: options.maxBytes, resolve, reject };
      const queued = this.#patching.get(id);
      if (queued) {
        queued.push(patch);
        return;
      }
      const queue = [patch];
      this.#patching.set(id, queue);
      void this.#drainRow(id, key, queue, options.read);
    });
  }

  /**
   * Writes the row's queued patches, a group at a time in arrival order, until none is left. The first group
   * starts from `read`, the text the first patch's request read; each later one from the text the group
   * before it wrote (PERF-184), or from a read of the row if that group wrote nothing.
   */
  async #drainRow(id: string, key: RowKey, queue: QueuedPatch[], read: string | null | undefined): Promise<void> {
    let known = read;
    try {
      while (queue.length > 0) known = await this.#patchGroup(key, queue.splice(0, PATCH_GROUP_MAX), known);
    } finally {
      this.#patching.delete(id);
    }
  }

  /**
   * One conditional write for a group of patches (PERF-211): each patch runs on the object the one before it
   * made, in arrival order, and the last text is written only if the row still holds the text they started
   * from. Each patch is then answered with the row as its own patch left it, as if the group had run one
   * patch after another with nothing between them; a patch whose function throws or whose result is too
   * large is refused alone and the next one runs on the object before it. A miss (another instance wrote
   * meanwhile) reads the row and runs the whole group again on it; after a few misses each patch of the group
   * is written alone under the row's lock and answered with its own outcome. A statement that fails fails
   * every patch of the group with its error: it is the row's (its lock, its course), not one patch's.
   * Answers the text the row now holds, or undefined when that is not known.
   */
  async #patchGroup(key: RowKey, group: readonly QueuedPatch[], known: string | null | undefined): Promise<string | null | undefined> {
    const db = this.ctx.db;
    const params = rowKeyParams(key);
    try {
      for (let attempt = 0; attempt < OPTIMISTIC_ATTEMPTS; attempt += 1) {
        const current =
          attempt === 0 && known !== undefined
            ? known
            : ((await db.get<{ body: string }>(`SELECT body FROM storage_rows WHERE ${ROW_KEY_WHERE}`, params))?.body ?? null);
        // Each patch's outcome, and what the row holds after the last one that ran on it (null: none did).
        const outcomes: (SerializedRow | { refused: unknown })[] = [];
        let next: SerializedRow | null = null;
        for (const patch of group) {
          try {
            next = serializeRow(patch.fn(parseStored(next?.body ?? current ?? EMPTY_ROW)), patch.maxBytes);
            outcomes.push(next);
          } catch (refused) {
            outcomes.push({ refused });
          }
        }
        if (next === null) {
          for (const [i, patch] of group.entries()) patch.reject((outcomes[i] as { refused: unknown }).refused);
          return undefined;
        }
        const now = this.ctx.clock.nowMs();
        const written =
          current !== null
            ? await db.run(
                `UPDATE storage_rows SET body = ?, size_bytes = ?, updated_at = ? WHERE ${ROW_KEY_WHERE} AND body = ?`,
                [next.body, next.size, now, ...params, current],
              )
            : await db.run(
                `INSERT INTO storage_rows (app_id, context_id, kind, location_id, member_id, body, size_bytes, updated_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                 ON CONFLICT (app_id, context_id, kind, location_id, member_id) DO NOTHING`,
                [...params, next.body, next.size, now],
              );
        if (written.changes > 0) {
          for (const [i, patch] of group.entries()) {
            const outcome = outcomes[i] as SerializedRow | { refused: unknown };
            if ('refused' in outcome) patch.reject(outcome.refused);
            else patch.resolve({ body: outcome.body, size: outcome.size, updatedAt: now });
          }
          return next.body;
        }
      }
    } catch (err) {
      // A statement of the row failed (a lock held beyond the timeout, the course deleted, a lost
      // connection): nothing was written, and each patch of the group would meet the same, after waiting
      // its own turn; each is answered with it at once.
      for (const patch of group) patch.reject(err);
      return undefined;
    }
    // Many writers on this one row: wait for its lock instead of reading again and again.
    for (const patch of group) await this.#patchLocked(key, patch.fn, patch.maxBytes).then(patch.resolve, patch.reject);
    return undefined;
  }

  /**
   * One UPDATE that sets the member with `json_set` on the stored text, when the member's path is one
   * SQLite's path syntax names unambiguously and the result would be byte for byte what `fn` gives
   * (see `RowMemberSet`). Null: not done this way (no such row, the parent is not an object, a `replace`
   * of an absent member, a path it cannot name, or a document SQLite's JSON refuses, e.g. nested deeper
   * than it parses); the caller then runs the general path, which gives the contract's answer.
   */
  async #setMemberInSql(key: RowKey, set: RowMemberSet, maxBytes: number): Promise<RowRecord | null> {
    const path = sqliteJsonPath(set.tokens);
    if (path === null || set.tokens.length === 0) return null;
    const parent = sqliteJsonPath(set.tokens.slice(0, -1)) as string;
    const now = this.ctx.clock.nowMs();
    try {
      return await this.ctx.db.transaction(async (tx) => {
        const row = await tx.get<{ body: string; size_bytes: number }>(
          `UPDATE storage_rows SET (body, size_bytes, updated_at) =
             (SELECT v, octet_length(v), ? FROM (SELECT json_set(storage_rows.body, ?, json(?)) AS v))
           WHERE ${ROW_KEY_WHERE} AND json_type(body, ?) = 'object'${set.mustExist ? ' AND json_type(body, ?) IS NOT NULL' : ''}
           RETURNING body, size_bytes`,
          [now, path, JSON.stringify(set.value), ...rowKeyParams(key), parent, ...(set.mustExist ? [path] : [])],
        );
        if (!row) return null;
        // Over the limit: thrown inside the transaction, so the UPDATE rolls back.
        if (row.size_bytes > maxBytes) throw new RowTooLargeError(row.size_bytes, maxBytes);
        return { body: row.body, size: row.size_bytes, updatedAt: now };
      });
    } catch (err) {
      if (isSqliteJsonRefusal(err)) return null;
      throw err;
    }
  }

  /** The read and the write in one transaction holding the row's lock (SQLite: the write lock). */
  #patchLocked(key: RowKey, fn: RowPatchFn, maxBytes: number): Promise<RowRecord> {
    const params = rowKeyParams(key);
    return this.ctx.db.transaction(async (tx) => {
      const now = this.ctx.clock.nowMs();
      if (tx.dialect === 'postgres') {
        // FOR UPDATE cannot lock a row that does not exist yet: materialize it first. (SQLite's
        // BEGIN IMMEDIATE already excludes every other writer.)
        await tx.run(
          `INSERT INTO storage_rows (app_id, context_id, kind, location_id, member_id, body, size_bytes, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (app_id, context_id, kind, location_id, member_id) DO NOTHING`,
          [...params, EMPTY_ROW, EMPTY_ROW.length, now],
        );
      }
      const current = await tx.get<{ body: string }>(`SELECT body FROM storage_rows WHERE ${ROW_KEY_WHERE}${tx.forUpdate}`, params);
      const { body, size } = serializeRow(fn(parseStored(current?.body ?? EMPTY_ROW)), maxBytes);
      await tx.run(UPSERT_ROW, [...params, body, size, now]);
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
