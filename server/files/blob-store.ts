/**
 * Where the bytes of stored files live. The database keeps which blob a file uses; a blob store only
 * keeps bytes under opaque IDs. The local disk is the default; the store several instances share
 * (database-blob-store.ts, `BLOB_STORE=postgres`) and a bucket of an object store (s3-blob-store.ts,
 * `BLOB_STORE=s3`, which tools reach directly) implement the same three calls.
 *
 * Rules every implementation keeps:
 * - `put` never makes a blob visible under its ID until all `expectedSize` bytes are durable, so a crash
 *   or a refused upload leaves no partial blob behind (temporary data is the store's own business);
 * - IDs are fresh for every `put`: a new upload never overwrites the blob a stored file still uses, so the
 *   old file keeps downloading until the database points the key at the new blob;
 * - `get` of a blob deleted after the stream was opened keeps streaming what was opened (POSIX semantics on
 *   the local disk), and `delete` of an absent blob is not an error.
 */
import type { Readable } from 'node:stream';
import type { RowKey } from '../store/index.js';

export interface StoredBlob {
  id: string;
  size: number;
}

export interface OpenedBlob {
  /** The bytes; the caller must consume or destroy it. */
  stream: Readable;
  size: number;
}

/** Whose file a blob holds: an object store names its objects after it (decision OBJ-03). */
export interface BlobOwner {
  row: RowKey;
  key: string;
}

export interface BlobStore {
  /**
   * Stores exactly `expectedSize` bytes read from `source`. Rejects with `BlobSizeMismatchError` as soon
   * as the source passes `expectedSize`, or when it ends short of it, and keeps nothing. A source that
   * errors (the client aborted) rejects with that error and keeps nothing. `owner` is the file the blob
   * is for; stores that name blobs after it need it, the embedded ones ignore it.
   */
  put(source: AsyncIterable<Uint8Array> | Readable, expectedSize: number, owner?: BlobOwner): Promise<StoredBlob>;
  /** Opens a blob for reading; rejects with `BlobNotFoundError` when no blob has the ID. */
  get(id: string): Promise<OpenedBlob>;
  /** Removes a blob; absent is fine. */
  delete(id: string): Promise<void>;
  /** Stops background work (a periodic sweep) before the store beneath closes; optional. */
  close?(): Promise<void>;
}

export class BlobSizeMismatchError extends Error {
  constructor(
    readonly expected: number,
    /** Bytes seen before stopping; more than `expected` means the source ran over and was cut off. */
    readonly received: number,
  ) {
    super(`blob size mismatch: expected ${expected} bytes, received ${received > expected ? `more than ${expected}` : received}`);
    this.name = 'BlobSizeMismatchError';
  }
}

export class BlobNotFoundError extends Error {
  constructor(readonly id: string) {
    super(`no blob ${id}`);
    this.name = 'BlobNotFoundError';
  }
}
