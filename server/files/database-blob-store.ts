/**
 * The blob store several instances share (`BLOB_STORE=postgres`): file bytes in the database every
 * instance already uses, so an upload received by one instance downloads through any other, with no
 * shared volume to mount. Tables `blobs` (one header per blob) and `blob_chunks` (its bytes in order),
 * migration `0004_shared_blobs`.
 *
 * How it keeps the `BlobStore` rules:
 * - Streaming, both ways: an upload is cut into chunks of `chunkBytes` (256 KiB) written one at a time as
 *   the bytes arrive, and a download fetches one chunk when the reader asks for more. At most about two
 *   chunks of a blob are in this process's memory, whatever the file's size.
 * - Nothing partial is visible: the header is `writing` while chunks land, each committed on its own (no
 *   connection is held for the length of a slow upload). One statement flips it to `complete`, and only if
 *   the stored chunks add up to exactly the expected size; `get` sees `complete` blobs only. An upload
 *   abandoned by a crash leaves a `writing` blob that nothing reads; `sweep` removes it once it has been
 *   idle for `abandonedAfterMs` (every chunk written refreshes it, so a slow upload is not swept).
 * - A download opened before a delete keeps streaming (the POSIX behaviour of the local disk): `delete`
 *   only marks the blob `deleted`, which `get` refuses at once, and `sweep` removes its bytes after
 *   `deletedGraceMs`. A reader slower than that loses its stream with an error, never wrong bytes.
 *
 * The SQL is portable (the tables exist on SQLite too, so the migration list is one list), but the
 * service offers this store with PostgreSQL only: on one machine the local disk is simpler and faster.
 */
import { Readable } from 'node:stream';
import type { Clock, Driver, RootDriver } from '../store/index.js';
import { newId, StoreClosedError, systemClock } from '../store/index.js';
import type { BlobStore, OpenedBlob, StoredBlob } from './blob-store.js';
import { BlobNotFoundError, BlobSizeMismatchError } from './blob-store.js';

/** 256 KiB: few round trips for a 25 MB file (100), little memory per transfer. */
export const DEFAULT_CHUNK_BYTES = 262_144;

export interface DatabaseBlobStoreOptions {
  clock?: Clock;
  chunkBytes?: number;
  /** A `writing` blob untouched this long belongs to an upload that will never finish. Default 1 hour. */
  abandonedAfterMs?: number;
  /** How long a deleted blob's bytes stay for downloads already streaming. Default 1 hour. */
  deletedGraceMs?: number;
  /** How often `startSweeping` sweeps. Default 10 minutes. */
  sweepIntervalMs?: number;
  /** Where a failed periodic sweep is reported; the next one tries again. */
  onSweepError?: (err: unknown) => void;
}

type BlobState = 'writing' | 'complete' | 'deleted';

/** Same ID rule as the local disk store: a malformed ID is simply not found. */
const BLOB_ID = /^blb_[a-z2-7]{16,64}$/;
/** Blobs a sweep removes per batch, so one sweep never holds a long transaction. */
const SWEEP_BATCH = 100;

export class DatabaseBlobStore implements BlobStore {
  readonly #db: RootDriver;
  readonly #clock: Clock;
  readonly #chunkBytes: number;
  readonly #abandonedAfterMs: number;
  readonly #deletedGraceMs: number;
  readonly #sweepIntervalMs: number;
  readonly #onSweepError: (err: unknown) => void;
  #timer: NodeJS.Timeout | null = null;
  #sweeping: Promise<unknown> | null = null;

  constructor(db: RootDriver, options: DatabaseBlobStoreOptions = {}) {
    this.#db = db;
    this.#clock = options.clock ?? systemClock;
    this.#chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    if (!Number.isSafeInteger(this.#chunkBytes) || this.#chunkBytes < 1 || this.#chunkBytes > 16 * 1_048_576) {
      throw new RangeError('chunkBytes must be a whole number of bytes between 1 and 16 MiB');
    }
    this.#abandonedAfterMs = options.abandonedAfterMs ?? 60 * 60 * 1000;
    this.#deletedGraceMs = options.deletedGraceMs ?? 60 * 60 * 1000;
    this.#sweepIntervalMs = options.sweepIntervalMs ?? 10 * 60 * 1000;
    this.#onSweepError = options.onSweepError ?? (() => undefined);
  }

  get chunkBytes(): number {
    return this.#chunkBytes;
  }

  async put(source: AsyncIterable<Uint8Array> | Readable, expectedSize: number): Promise<StoredBlob> {
    if (!Number.isSafeInteger(expectedSize) || expectedSize < 0) throw new RangeError('expectedSize must be a whole number of bytes');
    const id = newId('blb');
    const now = this.#clock.nowMs();
    await this.#db.run('INSERT INTO blobs (id, size, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?)', [
      id,
      expectedSize,
      'writing',
      now,
      now,
    ]);
    try {
      let received = 0;
      let seq = 0;
      // Bytes waiting to fill the next chunk; never more than one chunk plus one incoming piece.
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      const flush = async (bytes: number): Promise<void> => {
        const all = pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, pendingBytes);
        const chunk = all.subarray(0, bytes);
        const rest = all.subarray(bytes);
        pending = rest.byteLength > 0 ? [rest] : [];
        pendingBytes = rest.byteLength;
        await this.#writeChunk(id, seq, chunk);
        seq += 1;
      };
      for await (const piece of source) {
        received += piece.byteLength;
        // Stop at the first byte over: a source that lies about its size costs no more than it signed.
        if (received > expectedSize) throw new BlobSizeMismatchError(expectedSize, received);
        if (piece.byteLength === 0) continue;
        pending.push(Buffer.isBuffer(piece) ? piece : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength));
        pendingBytes += piece.byteLength;
        while (pendingBytes >= this.#chunkBytes) await flush(this.#chunkBytes);
      }
      if (received !== expectedSize) throw new BlobSizeMismatchError(expectedSize, received);
      if (pendingBytes > 0) await flush(pendingBytes);
      // The commit: one statement, and only if every byte is there (a sweep or a delete that took the
      // blob meanwhile leaves nothing to flip, and the upload fails instead of pointing at nothing).
      const committed = await this.#db.run(
        `UPDATE blobs SET state = 'complete', updated_at = ?
          WHERE id = ? AND state = 'writing'
            AND (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM blob_chunks WHERE blob_id = ?) = ?
            AND (SELECT COUNT(*) FROM blob_chunks WHERE blob_id = ?) = ?`,
        [this.#clock.nowMs(), id, id, expectedSize, id, seq],
      );
      if (committed.changes !== 1) throw new Error(`blob ${id} could not be completed: it was removed or is missing bytes`);
      return { id, size: received };
    } catch (err) {
      await this.#purge(id).catch(() => undefined);
      throw err;
    }
  }

  async get(id: string): Promise<OpenedBlob> {
    if (!BLOB_ID.test(id)) throw new BlobNotFoundError(id);
    const header = await this.#db.get<{ size: number; state: BlobState }>('SELECT size, state FROM blobs WHERE id = ?', [id]);
    if (!header || header.state !== 'complete') throw new BlobNotFoundError(id);
    return { stream: this.#reader(id, header.size), size: header.size };
  }

  /** Hidden from `get` at once; the bytes go with a later sweep (see the module comment). */
  async delete(id: string): Promise<void> {
    if (!BLOB_ID.test(id)) return;
    await this.#db.run(`UPDATE blobs SET state = 'deleted', updated_at = ? WHERE id = ? AND state <> 'deleted'`, [
      this.#clock.nowMs(),
      id,
    ]);
  }

  /**
   * Removes abandoned uploads and the bytes of deleted blobs past their grace period; returns how many
   * blobs went. Several instances may sweep at once: each removal is idempotent.
   */
  async sweep(now = this.#clock.nowMs()): Promise<number> {
    let removed = 0;
    for (const [state, olderThan] of [
      ['writing', now - this.#abandonedAfterMs],
      ['deleted', now - this.#deletedGraceMs],
    ] as const) {
      for (;;) {
        const batch = await this.#db.all<{ id: string }>(
          'SELECT id FROM blobs WHERE state = ? AND updated_at <= ? ORDER BY updated_at, id LIMIT ?',
          [state, olderThan, SWEEP_BATCH],
        );
        for (const { id } of batch) {
          // The state is checked again under the delete: an upload that wrote a chunk since is left alone.
          if (await this.#purge(id, state, olderThan)) removed += 1;
        }
        if (batch.length < SWEEP_BATCH) break;
      }
    }
    return removed;
  }

  /** Sweeps now and then every `sweepIntervalMs` until `close()`; the timer never keeps the process alive. */
  startSweeping(): void {
    if (this.#timer) return;
    const run = (): void => {
      if (this.#sweeping) return;
      this.#sweeping = this.sweep()
        .catch((err: unknown) => {
          if (err instanceof StoreClosedError) this.#stopTimer();
          else this.#onSweepError(err);
        })
        .finally(() => {
          this.#sweeping = null;
        });
    };
    this.#timer = setInterval(run, this.#sweepIntervalMs);
    this.#timer.unref();
    run();
  }

  /** Stops the periodic sweep and waits for one in progress; the database belongs to the store. */
  async close(): Promise<void> {
    this.#stopTimer();
    await this.#sweeping;
  }

  #stopTimer(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** One chunk, and the header's `updated_at` with it, so a live upload never looks abandoned. */
  async #writeChunk(id: string, seq: number, data: Buffer): Promise<void> {
    await this.#db.transaction(async (tx: Driver) => {
      const touched = await tx.run(`UPDATE blobs SET updated_at = ? WHERE id = ? AND state = 'writing'`, [this.#clock.nowMs(), id]);
      if (touched.changes !== 1) throw new Error(`blob ${id} was removed while it was being written`);
      await tx.run('INSERT INTO blob_chunks (blob_id, seq, data) VALUES (?, ?, ?)', [id, seq, data]);
    });
  }

  /** Removes a blob's rows (only in `state` and not touched since `notAfter`, when given). */
  async #purge(id: string, state?: BlobState, notAfter?: number): Promise<boolean> {
    return this.#db.transaction(async (tx: Driver) => {
      if (state !== undefined && notAfter !== undefined) {
        const header = await tx.get<{ id: string }>(
          `SELECT id FROM blobs WHERE id = ? AND state = ? AND updated_at <= ?${tx.forUpdate}`,
          [id, state, notAfter],
        );
        if (!header) return false;
      }
      await tx.run('DELETE FROM blob_chunks WHERE blob_id = ?', [id]);
      return (await tx.run('DELETE FROM blobs WHERE id = ?', [id])).changes === 1;
    });
  }

  /** Fetches chunk after chunk, each only when the consumer wants more bytes. */
  #reader(id: string, size: number): Readable {
    const db = this.#db;
    async function* chunks(): AsyncGenerator<Buffer> {
      let sent = 0;
      for (let seq = 0; sent < size; seq += 1) {
        const row = await db.get<{ data: Buffer | Uint8Array }>('SELECT data FROM blob_chunks WHERE blob_id = ? AND seq = ?', [id, seq]);
        if (!row) throw new Error(`blob ${id} lost its bytes while being read (chunk ${seq}); it was deleted and swept`);
        const data = Buffer.isBuffer(row.data) ? row.data : Buffer.from(row.data);
        sent += data.byteLength;
        if (sent > size) throw new Error(`blob ${id} holds more bytes than its size ${size}`);
        yield data;
      }
    }
    // Byte mode with the smallest high-water mark: one chunk is fetched only after the last was taken.
    return Readable.from(chunks(), { objectMode: false, highWaterMark: 1 });
  }
}
