import { schemas } from '../../../generated/2026-09-21/schemas.js';
import type { Driver } from '../driver.js';
import { FileQuotaError, UploadNotPendingError } from '../errors.js';
import { newId } from '../ids.js';
import type { RepoContext, RowKey, RowKind } from './common.js';
import { bool, ROW_KEY_WHERE, rowKeyParams } from './common.js';

export interface FileLimits {
  maxFiles: number;
  maxTotalBytes: number;
  maxFileBytes: number;
}

/** The contract's limits per row (binary units, decision GAP-06), as the spec states them (decision KIT-20). */
export const FILE_LIMITS: Readonly<FileLimits> = {
  maxFiles: schemas.FileList['x-limits'].files_per_row,
  maxTotalBytes: schemas.FileList['x-limits'].bytes_per_row,
  maxFileBytes: schemas.FileUploadRequest.properties.size.maximum,
};

/** Decision GAP-05: a signed upload form is valid 15 minutes. */
export const UPLOAD_FORM_TTL_SECONDS = 900;

export interface FileRecord {
  key: string;
  size: number;
  contentType: string;
  filename: string;
  attachment: boolean;
  /** Where the bytes are; the blob store is not the database's business. */
  blobId: string;
  /** Milliseconds since the epoch. */
  modified: number;
}

export type UploadState = 'pending' | 'completed' | 'failed' | 'expired';

export interface UploadReservation {
  id: string;
  row: RowKey;
  key: string;
  size: number;
  contentType: string;
  filename: string;
  attachment: boolean;
  /** Fresh for every reservation, so an upload never writes over the blob of the file it replaces. */
  blobId: string;
  state: UploadState;
  createdAt: number;
  expiresAt: number;
  finishedAt: number | null;
}

export interface RowFileUsage {
  /** Completed files. */
  files: number;
  bytes: number;
  /** What the quota counts: distinct keys with a file or an unexpired reservation, and for each key the
   * largest of its file and its pending uploads (any of them may be what remains). */
  slots: number;
  reservedBytes: number;
}

interface FileRow {
  file_key: string;
  size: number;
  content_type: string;
  filename: string;
  attachment: number;
  blob_id: string;
  modified_ms: number;
}

interface ReservationRow {
  id: string;
  app_id: string;
  context_id: string;
  kind: RowKind;
  location_id: string;
  member_id: string;
  file_key: string;
  size: number;
  content_type: string;
  filename: string;
  attachment: number;
  blob_id: string;
  state: UploadState;
  created_at: number;
  expires_at: number;
  finished_at: number | null;
}

const FILE_COLUMNS = 'file_key, size, content_type, filename, attachment, blob_id, modified_ms';
const RESERVATION_COLUMNS = `id, app_id, context_id, kind, location_id, member_id, file_key, size, content_type,
  filename, attachment, blob_id, state, created_at, expires_at, finished_at`;

function toFile(row: FileRow): FileRecord {
  return {
    key: row.file_key,
    size: row.size,
    contentType: row.content_type,
    filename: row.filename,
    attachment: bool(row.attachment),
    blobId: row.blob_id,
    modified: row.modified_ms,
  };
}

type RowKeyColumns = Pick<ReservationRow, 'app_id' | 'context_id' | 'kind' | 'location_id' | 'member_id'>;

function rowKeyFrom(row: RowKeyColumns): RowKey {
  const base = { appId: row.app_id, contextId: row.context_id };
  switch (row.kind) {
    case 'context':
      return { ...base, kind: 'context' };
    case 'location':
      return { ...base, kind: 'location', locationId: row.location_id };
    case 'member':
      return { ...base, kind: 'member', memberId: row.member_id };
    case 'member_location':
      return { ...base, kind: 'member_location', locationId: row.location_id, memberId: row.member_id };
  }
}

function toReservation(row: ReservationRow): UploadReservation {
  return {
    id: row.id,
    row: rowKeyFrom(row),
    key: row.file_key,
    size: row.size,
    contentType: row.content_type,
    filename: row.filename,
    attachment: bool(row.attachment),
    blobId: row.blob_id,
    state: row.state,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    finishedAt: row.finished_at,
  };
}

export interface ReserveUploadInput {
  row: RowKey;
  key: string;
  size: number;
  contentType: string;
  filename: string;
  attachment: boolean;
  ttlSeconds?: number;
  limits?: FileLimits;
  /** Where the upload's bytes will be: an object store names it after the row and key (decision OBJ-03).
   * Default: a fresh `blb_` ID. */
  blobId?: string;
}

/**
 * Files kept beside rows, and the reservations of signed uploads. The bytes live in a blob store the
 * caller owns: this repository hands out blob IDs and says which blob to delete after a commit, never
 * before, so an abandoned or failed upload can never cost the file it was meant to replace.
 */
export class FilesRepo {
  constructor(private readonly ctx: RepoContext) {}

  /** The row's completed files, by key. Pending uploads are not listed (decision GAP-35). */
  async list(row: RowKey): Promise<FileRecord[]> {
    const rows = await this.ctx.db.all<FileRow>(
      `SELECT ${FILE_COLUMNS} FROM files WHERE ${ROW_KEY_WHERE} ORDER BY file_key`,
      rowKeyParams(row),
    );
    return rows.map(toFile);
  }

  async get(row: RowKey, key: string): Promise<FileRecord | null> {
    const found = await this.ctx.db.get<FileRow>(`SELECT ${FILE_COLUMNS} FROM files WHERE ${ROW_KEY_WHERE} AND file_key = ?`, [
      ...rowKeyParams(row),
      key,
    ]);
    return found ? toFile(found) : null;
  }

  async usage(row: RowKey): Promise<RowFileUsage> {
    return computeUsage(this.ctx.db, row, this.ctx.clock.nowMs(), null);
  }

  /**
   * Checks the row's quota and reserves the upload, in one transaction, so two signings racing for the
   * last slot or the last bytes cannot both win. While its form is valid a reservation counts against
   * the quota (decision GAP-35). Writing to an existing key replaces that file: it takes no new slot,
   * and the key is counted once, at the larger of its current and its pending sizes, because until an
   * upload completes the old file stays.
   */
  async reserveUpload(input: ReserveUploadInput): Promise<UploadReservation> {
    const limits = input.limits ?? FILE_LIMITS;
    if (input.size > limits.maxFileBytes) throw new FileQuotaError('file_size', limits.maxFileBytes, input.size);
    const params = rowKeyParams(input.row);
    return this.ctx.db.transaction(async (tx) => {
      await lockContext(tx, input.row.contextId);
      const now = this.ctx.clock.nowMs();
      checkQuota(await computeUsage(tx, input.row, now, { key: input.key, size: input.size }), limits);
      const id = newId('upl');
      await tx.run(
        `INSERT INTO upload_reservations (id, app_id, context_id, kind, location_id, member_id, file_key, size,
           content_type, filename, attachment, blob_id, state, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
        [
          id,
          ...params,
          input.key,
          input.size,
          input.contentType,
          input.filename,
          input.attachment,
          input.blobId ?? newId('blb'),
          now,
          now + (input.ttlSeconds ?? UPLOAD_FORM_TTL_SECONDS) * 1000,
        ],
      );
      const reservation = await readReservation(tx, id, '');
      if (!reservation) throw new Error('reservation vanished inside its own transaction');
      return reservation;
    });
  }

  async getReservation(id: string): Promise<UploadReservation | null> {
    return readReservation(this.ctx.db, id, '');
  }

  /**
   * The upload's bytes are stored under its blob ID: points the key at the new blob, atomically.
   * Returns the blob the file used before (delete it after this resolves) or null for a new key.
   * A reservation that outlived its form is accepted only if the row's quota still allows it, since
   * once expired it stopped holding its space.
   */
  async completeUpload(
    id: string,
    options: { limits?: FileLimits } = {},
  ): Promise<{ file: FileRecord; replacedBlobId: string | null }> {
    return this.ctx.db.transaction(async (tx) => {
      const unlocked = await readReservation(tx, id, '');
      if (!unlocked) throw new UploadNotPendingError('unknown', id);
      // Same lock order as reserveUpload (course, then reservation), so the two cannot deadlock.
      await lockContext(tx, unlocked.row.contextId);
      const reservation = await readReservation(tx, id, tx.forUpdate);
      if (!reservation) throw new UploadNotPendingError('unknown', id);
      if (reservation.state !== 'pending') throw new UploadNotPendingError('not_pending', id);
      const now = this.ctx.clock.nowMs();
      if (reservation.expiresAt <= now) {
        const usage = await computeUsage(tx, reservation.row, now, { key: reservation.key, size: reservation.size });
        checkQuota(usage, options.limits ?? FILE_LIMITS);
      }
      const params = rowKeyParams(reservation.row);
      const previous = await tx.get<{ blob_id: string }>(
        `SELECT blob_id FROM files WHERE ${ROW_KEY_WHERE} AND file_key = ?${tx.forUpdate}`,
        [...params, reservation.key],
      );
      await tx.run(
        `INSERT INTO files (app_id, context_id, kind, location_id, member_id, file_key, size, content_type, filename,
           attachment, blob_id, modified_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (app_id, context_id, kind, location_id, member_id, file_key) DO UPDATE SET
           size = excluded.size, content_type = excluded.content_type, filename = excluded.filename,
           attachment = excluded.attachment, blob_id = excluded.blob_id, modified_ms = excluded.modified_ms`,
        [
          ...params,
          reservation.key,
          reservation.size,
          reservation.contentType,
          reservation.filename,
          reservation.attachment,
          reservation.blobId,
          now,
        ],
      );
      await tx.run("UPDATE upload_reservations SET state = 'completed', finished_at = ? WHERE id = ?", [now, id]);
      const file = await new FilesRepo({ db: tx, clock: this.ctx.clock }).get(reservation.row, reservation.key);
      if (!file) throw new Error('file vanished inside its own transaction');
      return { file, replacedBlobId: previous?.blob_id ?? null };
    });
  }

  /** The upload failed or was refused: frees the reservation and returns its blob ID to clean up, or null
   * when it was not pending. The file it meant to replace is untouched. */
  async failUpload(id: string): Promise<string | null> {
    const row = await this.ctx.db.get<{ blob_id: string }>(
      "UPDATE upload_reservations SET state = 'failed', finished_at = ? WHERE id = ? AND state = 'pending' RETURNING blob_id",
      [this.ctx.clock.nowMs(), id],
    );
    return row?.blob_id ?? null;
  }

  /**
   * The row's uploads still pending, oldest first (with `key`, that key's only), whatever their forms'
   * expiry: with an object store the service learns of a completed upload only when it looks (OBJ-05).
   */
  async pendingUploads(row: RowKey, key?: string): Promise<UploadReservation[]> {
    const rows = await this.ctx.db.all<ReservationRow>(
      `SELECT ${RESERVATION_COLUMNS} FROM upload_reservations WHERE ${ROW_KEY_WHERE} AND state = 'pending'` +
        `${key === undefined ? '' : ' AND file_key = ?'} ORDER BY created_at, id`,
      key === undefined ? rowKeyParams(row) : [...rowKeyParams(row), key],
    );
    return rows.map(toReservation);
  }

  /** An upload whose form ended long ago with nothing arrived: no longer pending. True when it was. */
  async expireUpload(id: string): Promise<boolean> {
    const row = await this.ctx.db.get<{ id: string }>(
      "UPDATE upload_reservations SET state = 'expired', finished_at = ? WHERE id = ? AND state = 'pending' RETURNING id",
      [this.ctx.clock.nowMs(), id],
    );
    return row !== undefined && row !== null;
  }

  /** Stored files of every row, by blob ID, a page at a time (`tis files migrate`). */
  async listAllFiles(after: string, limit: number): Promise<Array<FileRecord & { row: RowKey }>> {
    const rows = await this.ctx.db.all<FileRow & RowKeyColumns>(
      `SELECT app_id, context_id, kind, location_id, member_id, ${FILE_COLUMNS} FROM files WHERE blob_id > ? ORDER BY blob_id LIMIT ?`,
      [after, limit],
    );
    return rows.map((found) => ({ ...toFile(found), row: rowKeyFrom(found) }));
  }

  /**
   * Which of `blobIds` the records still use: a file's blob, or the blob an upload still pending may fill
   * (an object store's sweep keeps these, decision OBJ-21).
   */
  async blobsInUse(blobIds: readonly string[]): Promise<Set<string>> {
    const used = new Set<string>();
    // Batches well under SQLite's bound-parameter limit.
    for (let start = 0; start < blobIds.length; start += 400) {
      const batch = blobIds.slice(start, start + 400);
      const marks = batch.map(() => '?').join(', ');
      const rows = await this.ctx.db.all<{ blob_id: string }>(
        `SELECT blob_id FROM files WHERE blob_id IN (${marks})
         UNION SELECT blob_id FROM upload_reservations WHERE state = 'pending' AND blob_id IN (${marks})`,
        [...batch, ...batch],
      );
      for (const row of rows) used.add(row.blob_id);
    }
    return used;
  }

  /** Points the file that uses `from` at `to` (a copy of its bytes); false when no file uses `from` any more. */
  async moveBlob(from: string, to: string): Promise<boolean> {
    const row = await this.ctx.db.get<{ blob_id: string }>('UPDATE files SET blob_id = ? WHERE blob_id = ? RETURNING blob_id', [to, from]);
    return row !== undefined && row !== null;
  }

  /** Deletes the file; returns its blob ID (delete it after this resolves), or null if there was none. */
  async deleteFile(row: RowKey, key: string): Promise<string | null> {
    const deleted = await this.ctx.db.get<{ blob_id: string }>(
      `DELETE FROM files WHERE ${ROW_KEY_WHERE} AND file_key = ? RETURNING blob_id`,
      [...rowKeyParams(row), key],
    );
    return deleted?.blob_id ?? null;
  }

  /**
   * Marks pending reservations that expired before `before` as expired and returns their blob IDs
   * (bytes of an upload that never completed). The default leaves a 15-minute grace after the form's
   * end, for an upload still in flight.
   */
  async sweepExpiredReservations(
    before: number = this.ctx.clock.nowMs() - UPLOAD_FORM_TTL_SECONDS * 1000,
  ): Promise<string[]> {
    const rows = await this.ctx.db.all<{ blob_id: string }>(
      `UPDATE upload_reservations SET state = 'expired', finished_at = ?
       WHERE state = 'pending' AND expires_at <= ? RETURNING blob_id`,
      [this.ctx.clock.nowMs(), before],
    );
    return rows.map((r) => r.blob_id);
  }

  /**
   * Throws `FileQuotaError` when one more upload of `size` bytes to `key` would not fit the row now. A
   * cheap early answer without a lock (the upload target asks before reading a file's bytes); the
   * decision that counts is the one `reserveUpload` and `storeUpload` make in their transactions.
   */
  async checkFits(row: RowKey, key: string, size: number, limits: FileLimits = FILE_LIMITS): Promise<void> {
    checkQuota(await computeUsage(this.ctx.db, row, this.ctx.clock.nowMs(), { key, size }), limits);
  }

  /** The file that uses `blobId`, with its row: what a signed download names (issue 3, files helper). */
  async getByBlob(blobId: string): Promise<(FileRecord & { row: RowKey }) | null> {
    const found = await this.ctx.db.get<FileRow & RowKeyColumns>(
      `SELECT app_id, context_id, kind, location_id, member_id, ${FILE_COLUMNS} FROM files WHERE blob_id = ?`,
      [blobId],
    );
    if (!found) return null;
    return { ...toFile(found), row: rowKeyFrom(found) };
  }

  /**
   * Stores an upload whose bytes are already in the blob store under `blobId` (a fresh blob for every
   * use of a form, so a form used twice never writes over the blob of the file it stored the first time,
   * decision S-02). In one transaction: re-checks the row's quota with this file in it (the check when
   * the upload lands), points the key at the new blob, and marks the reservation completed. A completed
   * reservation may store again while its form is valid (the caller checks the form's expiry); a failed
   * or swept one may not, nor a completed one with `onlyPending` (an object store's upload is settled once,
   * decision OBJ-05). Returns the blob the key used before, to delete after this resolves.
   */
  async storeUpload(
    id: string,
    blob: { blobId: string; size: number },
    options: { limits?: FileLimits; modified?: number; onlyPending?: boolean } = {},
  ): Promise<{ file: FileRecord; replacedBlobId: string | null; reservation: UploadReservation }> {
    return this.ctx.db.transaction(async (tx) => {
      const unlocked = await readReservation(tx, id, '');
      if (!unlocked) throw new UploadNotPendingError('unknown', id);
      await lockContext(tx, unlocked.row.contextId);
      const reservation = await readReservation(tx, id, tx.forUpdate);
      if (!reservation) throw new UploadNotPendingError('unknown', id);
      if (reservation.state !== 'pending' && (reservation.state !== 'completed' || options.onlyPending)) {
        throw new UploadNotPendingError('not_pending', id);
      }
      if (blob.size !== reservation.size) throw new Error('stored blob size differs from the reserved size');
      const now = this.ctx.clock.nowMs();
      checkQuota(await computeUsage(tx, reservation.row, now, { key: reservation.key, size: reservation.size }), options.limits ?? FILE_LIMITS);
      const params = rowKeyParams(reservation.row);
      const previous = await tx.get<{ blob_id: string }>(
        `SELECT blob_id FROM files WHERE ${ROW_KEY_WHERE} AND file_key = ?${tx.forUpdate}`,
        [...params, reservation.key],
      );
      await tx.run(
        `INSERT INTO files (app_id, context_id, kind, location_id, member_id, file_key, size, content_type, filename,
           attachment, blob_id, modified_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (app_id, context_id, kind, location_id, member_id, file_key) DO UPDATE SET
           size = excluded.size, content_type = excluded.content_type, filename = excluded.filename,
           attachment = excluded.attachment, blob_id = excluded.blob_id, modified_ms = excluded.modified_ms`,
        [
          ...params,
          reservation.key,
          reservation.size,
          reservation.contentType,
          reservation.filename,
          reservation.attachment,
          blob.blobId,
          // An object store knows when the bytes arrived, which may be before the service learned of it.
          options.modified ?? now,
        ],
      );
      if (reservation.state === 'pending') {
        await tx.run("UPDATE upload_reservations SET state = 'completed', finished_at = ? WHERE id = ?", [now, id]);
      }
      const file = await new FilesRepo({ db: tx, clock: this.ctx.clock }).get(reservation.row, reservation.key);
      if (!file) throw new Error('file vanished inside its own transaction');
      const replacedBlobId = previous && previous.blob_id !== blob.blobId ? previous.blob_id : null;
      return { file, replacedBlobId, reservation };
    });
  }

  /**
   * Discards every file and reservation of the tool in the course (a Sandbox reset, decision GAP-39);
   * returns the blob IDs to delete: the files', and those of uploads whose forms are still usable or only
   * just ended (pending, or already settled: with an object store a form posted again writes its object
   * again, decision OBJ-21). An object that lands later no record names, and the object store's sweep
   * removes it.
   */
  async deleteForContext(appId: string, contextId: string, formsEndedSince: number = this.ctx.clock.nowMs() - UPLOAD_FORM_TTL_SECONDS * 1000): Promise<string[]> {
    return this.ctx.db.transaction(async (tx) => {
      const files = await tx.all<{ blob_id: string }>(
        'DELETE FROM files WHERE app_id = ? AND context_id = ? RETURNING blob_id',
        [appId, contextId],
      );
      const uploads = await tx.all<{ blob_id: string }>(
        "DELETE FROM upload_reservations WHERE app_id = ? AND context_id = ? AND (state = 'pending' OR expires_at > ?) RETURNING blob_id",
        [appId, contextId, formsEndedSince],
      );
      await tx.run('DELETE FROM upload_reservations WHERE app_id = ? AND context_id = ?', [appId, contextId]);
      // A completed upload of an embedded store names its file's blob: one delete is enough.
      return [...new Set([...files, ...uploads].map((r) => r.blob_id))];
    });
  }
}

/** Serializes quota decisions within a course on PostgreSQL (SQLite writers are serialized already). */
async function lockContext(tx: Driver, contextId: string): Promise<void> {
  await tx.get(`SELECT id FROM contexts WHERE id = ?${tx.forUpdate}`, [contextId]);
}

async function readReservation(db: Driver, id: string, suffix: string): Promise<UploadReservation | null> {
  const row = await db.get<ReservationRow>(`SELECT ${RESERVATION_COLUMNS} FROM upload_reservations WHERE id = ?${suffix}`, [
    id,
  ]);
  return row ? toReservation(row) : null;
}

/**
 * Quota usage of a row, optionally with one more upload for `extra.key` added. `extra` is not yet
 * stored; a reservation being completed is still pending and counts once, through its key.
 */
async function computeUsage(
  db: Driver,
  row: RowKey,
  now: number,
  extra: { key: string; size: number } | null,
): Promise<RowFileUsage> {
  const params = rowKeyParams(row);
  const files = await db.all<{ file_key: string; size: number }>(
    `SELECT file_key, size FROM files WHERE ${ROW_KEY_WHERE}`,
    params,
  );
  const pending = await db.all<{ file_key: string; size: number }>(
    `SELECT file_key, size FROM upload_reservations WHERE ${ROW_KEY_WHERE} AND state = 'pending' AND expires_at > ?`,
    [...params, now],
  );
  const worst = new Map<string, number>();
  const consider = (key: string, size: number): void => {
    worst.set(key, Math.max(worst.get(key) ?? 0, size));
  };
  let bytes = 0;
  for (const f of files) {
    bytes += f.size;
    consider(f.file_key, f.size);
  }
  for (const p of pending) consider(p.file_key, p.size);
  if (extra) consider(extra.key, extra.size);
  let reservedBytes = 0;
  for (const size of worst.values()) reservedBytes += size;
  return { files: files.length, bytes, slots: worst.size, reservedBytes };
}

function checkQuota(usage: RowFileUsage, limits: FileLimits): void {
  if (usage.slots > limits.maxFiles) throw new FileQuotaError('file_count', limits.maxFiles, usage.slots);
  if (usage.reservedBytes > limits.maxTotalBytes) {
    throw new FileQuotaError('total_bytes', limits.maxTotalBytes, usage.reservedBytes);
  }
}
