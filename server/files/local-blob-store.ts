/**
 * The default blob store: files on the local disk under `DATA_DIR/blobs`. A blob is written to
 * `tmp/`, fsynced, then renamed into place (and its directory fsynced), so a blob that exists under its
 * ID is complete and durable, and a crash leaves at most a temporary file, which `sweepTemporary` removes.
 */
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { newId } from '../store/ids.js';
import type { BlobStore, OpenedBlob, StoredBlob } from './blob-store.js';
import { BlobNotFoundError, BlobSizeMismatchError } from './blob-store.js';

/** IDs are ours (`newId('blb')`), but a path is built from them: anything else is refused outright. */
const BLOB_ID = /^blb_[a-z2-7]{16,64}$/;

function isErrno(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

export class LocalBlobStore implements BlobStore {
  readonly #root: string;
  readonly #tmp: string;
  #ready: Promise<void> | null = null;

  constructor(root: string) {
    this.#root = root;
    this.#tmp = join(root, 'tmp');
  }

  get root(): string {
    return this.#root;
  }

  #ensureDirs(): Promise<void> {
    this.#ready ??= mkdir(this.#tmp, { recursive: true }).then(() => undefined);
    return this.#ready;
  }

  /** Two-character fan-out keeps directories small with many blobs. */
  #pathOf(id: string): { dir: string; file: string } {
    const dir = join(this.#root, LocalBlobStore.relativePath(id).slice(0, 2));
    return { dir, file: join(dir, id) };
  }

  /** Where a blob lives under the root, `/`-separated (backups name their members after it, OPS-21). */
  static relativePath(id: string): string {
    if (!BLOB_ID.test(id)) throw new BlobNotFoundError(id);
    return `${id.slice(4, 6)}/${id}`;
  }

  async put(source: AsyncIterable<Uint8Array> | Readable, expectedSize: number): Promise<StoredBlob> {
    await this.#ensureDirs();
    const id = newId('blb');
    const tmpFile = join(this.#tmp, `${id}.part`);
    let handle: FileHandle | null = await open(tmpFile, 'wx', 0o600);
    let received = 0;
    try {
      for await (const chunk of source) {
        received += chunk.byteLength;
        // Stop at the first byte over: an upload that lies about its size costs no more disk than it signed.
        if (received > expectedSize) throw new BlobSizeMismatchError(expectedSize, received);
        await handle.write(chunk);
      }
      if (received !== expectedSize) throw new BlobSizeMismatchError(expectedSize, received);
      await handle.sync();
      await handle.close();
      handle = null;
      const { dir, file } = this.#pathOf(id);
      await mkdir(dir, { recursive: true });
      await rename(tmpFile, file);
      await syncDirectory(dir);
      return { id, size: received };
    } catch (err) {
      if (handle) await handle.close().catch(() => undefined);
      await unlink(tmpFile).catch(() => undefined);
      throw err;
    }
  }

  async get(id: string): Promise<OpenedBlob> {
    const { file } = this.#pathOf(id);
    let handle: FileHandle;
    try {
      // Opened before returning: a delete after this point cannot take the bytes away from this reader.
      handle = await open(file, 'r');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) throw new BlobNotFoundError(id);
      throw err;
    }
    try {
      const { size } = await handle.stat();
      // The stream owns the handle from here and closes it when it ends or is destroyed.
      return { stream: handle.createReadStream({ autoClose: true }), size };
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }

  async delete(id: string): Promise<void> {
    let file: string;
    try {
      file = this.#pathOf(id).file;
    } catch {
      return;
    }
    await rm(file, { force: true });
  }

  async exists(id: string): Promise<boolean> {
    try {
      await stat(this.#pathOf(id).file);
      return true;
    } catch {
      return false;
    }
  }

  /** Removes temporary files older than `olderThanMs` (left by a crash mid-upload); returns how many. */
  async sweepTemporary(olderThanMs = 60 * 60 * 1000, now = Date.now()): Promise<number> {
    await this.#ensureDirs();
    let removed = 0;
    for (const name of await readdir(this.#tmp)) {
      const path = join(this.#tmp, name);
      try {
        const info = await stat(path);
        if (now - info.mtimeMs >= olderThanMs) {
          await rm(path, { force: true });
          removed += 1;
        }
      } catch {
        // Gone already: another sweeper or the upload finishing.
      }
    }
    return removed;
  }
}

/** Makes a rename durable: the directory entry is on disk once this resolves. */
async function syncDirectory(dir: string): Promise<void> {
  let handle: FileHandle | null = null;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (err) {
    // Some platforms (Windows) cannot open a directory; the rename itself is still atomic there.
    if (!isErrno(err, 'EISDIR') && !isErrno(err, 'EPERM') && !isErrno(err, 'EINVAL')) throw err;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
