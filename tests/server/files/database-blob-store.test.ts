/**
 * The shared blob store (`BLOB_STORE=postgres`, server/files/database-blob-store.ts) against the rules of
 * every blob store: exact sizes, nothing partial ever visible, fresh IDs, a delete that does not cut an
 * open download short, and streaming in both directions without holding a whole file in memory. Runs on
 * the store of the project (SQLite in `default`, PostgreSQL in `postgres`): the SQL is the same.
 */
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatabaseBlobStore } from '../../../server/files/database-blob-store.js';
import { BlobNotFoundError, BlobSizeMismatchError } from '../../../server/files/blob-store.js';
import type { Driver, RootDriver, RunResult, SqlParam, Store } from '../../../server/store/index.js';
import { ManualClock, POSTGRES_TARGET, SQLITE_TARGET, type FreshDatabase } from '../../store/helpers.js';
import { TEST_STORE } from '../harness.js';

const target = TEST_STORE === 'postgres' ? POSTGRES_TARGET : SQLITE_TARGET;
if (!target) throw new Error('TIS_TEST_STORE=postgres but PostgreSQL does not answer');

/** Delegates to the store's driver, recording statements and the largest byte parameter sent. */
class WatchedDriver implements RootDriver {
  statements = 0;
  largestBytes = 0;
  constructor(readonly inner: RootDriver) {}
  get dialect(): RootDriver['dialect'] {
    return this.inner.dialect;
  }
  get forUpdate(): string {
    return this.inner.forUpdate;
  }
  #see(params?: readonly SqlParam[]): void {
    this.statements += 1;
    for (const p of params ?? []) if (p instanceof Uint8Array) this.largestBytes = Math.max(this.largestBytes, p.byteLength);
  }
  get<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    this.#see(params);
    return this.inner.get<T>(sql, params);
  }
  all<T extends object>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    this.#see(params);
    return this.inner.all<T>(sql, params);
  }
  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    this.#see(params);
    return this.inner.run(sql, params);
  }
  transaction<T>(fn: (tx: Driver) => Promise<T>): Promise<T> {
    return this.inner.transaction((tx) =>
      fn({
        dialect: tx.dialect,
        forUpdate: tx.forUpdate,
        get: (sql, params) => (this.#see(params), tx.get(sql, params)),
        all: (sql, params) => (this.#see(params), tx.all(sql, params)),
        run: (sql, params) => (this.#see(params), tx.run(sql, params)),
        transaction: (inner) => tx.transaction(inner),
      }),
    );
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

function pattern(size: number, seed = 7): Buffer {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i += 1) bytes[i] = (i * 31 + seed) & 0xff;
  return bytes;
}

/** `bytes` in pieces of uneven sizes, as a socket delivers them. */
async function* pieces(bytes: Buffer, sizes = [1, 700, 4096, 13, 65_536]): AsyncGenerator<Buffer> {
  let offset = 0;
  for (let i = 0; offset < bytes.length; i += 1) {
    const size = sizes[i % sizes.length] as number;
    yield bytes.subarray(offset, offset + size);
    offset += size;
  }
}

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

async function rows(store: Store): Promise<{ blobs: number; chunks: number }> {
  const b = await store.driver.get<{ n: number }>('SELECT COUNT(*) AS n FROM blobs');
  const c = await store.driver.get<{ n: number }>('SELECT COUNT(*) AS n FROM blob_chunks');
  return { blobs: Number(b?.n), chunks: Number(c?.n) };
}

describe(`DatabaseBlobStore on ${target.name}`, () => {
  let db: FreshDatabase;
  let clock: ManualClock;
  let watched: WatchedDriver;
  let blobs: DatabaseBlobStore;

  beforeEach(async () => {
    clock = new ManualClock();
    db = await target.fresh({ clock });
    watched = new WatchedDriver(db.store.driver);
    blobs = new DatabaseBlobStore(watched, { clock, chunkBytes: 1000 });
  });
  afterEach(async () => {
    await blobs.close();
    await db.done();
  });

  it('stores exactly the bytes it read, in chunks, and streams them back', async () => {
    const bytes = pattern(10_500);
    const stored = await blobs.put(pieces(bytes), bytes.length);
    expect(stored.size).toBe(10_500);
    expect(await rows(db.store)).toEqual({ blobs: 1, chunks: 11 });
    const opened = await blobs.get(stored.id);
    expect(opened.size).toBe(10_500);
    expect((await readAll(opened.stream)).equals(bytes)).toBe(true);
    // A fresh ID every time: the same bytes again never overwrite the blob a file still uses.
    const again = await blobs.put(pieces(bytes), bytes.length);
    expect(again.id).not.toBe(stored.id);
  });

  it('stores an empty file', async () => {
    const stored = await blobs.put(Readable.from([]), 0);
    const opened = await blobs.get(stored.id);
    expect(opened.size).toBe(0);
    expect((await readAll(opened.stream)).length).toBe(0);
  });

  it('refuses a source that runs over or ends short, and keeps nothing', async () => {
    await expect(blobs.put(pieces(pattern(2001)), 2000)).rejects.toBeInstanceOf(BlobSizeMismatchError);
    await expect(blobs.put(pieces(pattern(1999)), 2000)).rejects.toBeInstanceOf(BlobSizeMismatchError);
    expect(await rows(db.store)).toEqual({ blobs: 0, chunks: 0 });
  });

  it('keeps nothing of a source that fails (the client aborted)', async () => {
    async function* aborted(): AsyncGenerator<Buffer> {
      yield pattern(2500);
      throw new Error('aborted');
    }
    await expect(blobs.put(aborted(), 5000)).rejects.toThrow('aborted');
    expect(await rows(db.store)).toEqual({ blobs: 0, chunks: 0 });
  });

  it('shows nothing of an upload still in progress; a sweep removes it once abandoned, never while it moves', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    async function* stalled(): AsyncGenerator<Buffer> {
      yield pattern(2500);
      await hold;
      yield pattern(500);
    }
    const upload = blobs.put(stalled(), 3000);
    // Wait until its first chunks are written.
    for (let i = 0; i < 200 && (await rows(db.store)).chunks < 2; i += 1) await new Promise((r) => setTimeout(r, 5));
    const header = await db.store.driver.get<{ id: string; state: string }>('SELECT id, state FROM blobs');
    expect(header?.state).toBe('writing');
    await expect(blobs.get(header?.id ?? '')).rejects.toBeInstanceOf(BlobNotFoundError);
    // Recently active: a sweep leaves it alone.
    expect(await blobs.sweep(clock.nowMs() + 30 * 60 * 1000)).toBe(0);
    // Idle past the limit (the process that received it died): swept, and the upload cannot complete.
    expect(await blobs.sweep(clock.nowMs() + 2 * 60 * 60 * 1000)).toBe(1);
    expect(await rows(db.store)).toEqual({ blobs: 0, chunks: 0 });
    release();
    await expect(upload).rejects.toThrow(/removed/);
    expect(await rows(db.store)).toEqual({ blobs: 0, chunks: 0 });
  });

  it('keeps streaming a download opened before the delete; the bytes go with a sweep after the grace period', async () => {
    const bytes = pattern(5000);
    const stored = await blobs.put(pieces(bytes), bytes.length);
    const opened = await blobs.get(stored.id);
    await blobs.delete(stored.id);
    await expect(blobs.get(stored.id)).rejects.toBeInstanceOf(BlobNotFoundError);
    expect(await blobs.sweep(clock.nowMs() + 5 * 60 * 1000)).toBe(0);
    expect((await readAll(opened.stream)).equals(bytes)).toBe(true);
    expect(await blobs.sweep(clock.nowMs() + 2 * 60 * 60 * 1000)).toBe(1);
    expect(await rows(db.store)).toEqual({ blobs: 0, chunks: 0 });
    // Deleting what is gone, or was never there, is fine.
    await blobs.delete(stored.id);
    await blobs.delete('blb_aaaaaaaaaaaaaaaaaaaaaaaaaa');
    await expect(blobs.get('../../etc/passwd')).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it('streams a 25 MB file in and out without holding it in memory', async () => {
    const big = new DatabaseBlobStore(watched, { clock });
    const size = 25 * 1_048_576;
    async function* generated(): AsyncGenerator<Buffer> {
      const piece = pattern(65_536, 3);
      for (let sent = 0; sent < size; sent += piece.length) yield piece;
    }
    const stored = await big.put(generated(), size);
    // No statement carried more than one chunk.
    expect(watched.largestBytes).toBe(big.chunkBytes);
    const opened = await big.get(stored.id);
    // Nothing is fetched ahead of the reader: a paused download holds about one chunk.
    const before = watched.statements;
    const iterator = opened.stream[Symbol.asyncIterator]();
    const first = (await iterator.next()).value as Buffer;
    expect(first.length).toBe(big.chunkBytes);
    await new Promise((r) => setTimeout(r, 50));
    expect(watched.statements - before).toBeLessThanOrEqual(2);
    let total = first.length;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) total += (next.value as Buffer).length;
    expect(total).toBe(size);
  }, 120_000);
});
