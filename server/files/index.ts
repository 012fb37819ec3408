/**
 * The files services the app constructs once: the blob store (`services.blobs`) and the file transfer
 * (`services.files`: upload forms, the upload target, signed downloads).
 *
 *   const { blobs, files } = await createFileServices({ store, config, clock, log });
 */
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../http/log.js';
import type { Clock, FileLimits, Store } from '../store/index.js';
import type { BlobStore } from './blob-store.js';
import { LocalBlobStore } from './local-blob-store.js';
import { loadFilesSigner } from './signing.js';
import { FileTransfer } from './transfer.js';

declare module '../http/services.js' {
  interface Services {
    blobs: BlobStore;
    files: FileTransfer;
  }
}

export interface FileServicesOptions {
  store: Store;
  config: Pick<Config, 'dataDir' | 'publicUrl'>;
  clock: Clock;
  log: Logger;
  /** Another blob store (tests, or the shared store of a later issue); default: `DATA_DIR/blobs`. */
  blobs?: BlobStore;
  /** Shorter lifetimes or smaller limits for tests; the defaults are the decisions' values. */
  uploadFormTtlMs?: number;
  downloadUrlTtlMs?: number;
  limits?: FileLimits;
}

export async function createFileServices(options: FileServicesOptions): Promise<{ blobs: BlobStore; files: FileTransfer }> {
  let blobs = options.blobs;
  if (!blobs) {
    const local = new LocalBlobStore(join(options.config.dataDir, 'blobs'));
    // Temporary files older than an hour belong to uploads a crash cut short.
    await local.sweepTemporary().catch((err: unknown) => options.log.warn('blob temp sweep failed', { err }));
    blobs = local;
  }
  const signer = await loadFilesSigner(options.store);
  const files = new FileTransfer({
    store: options.store,
    blobs,
    signer,
    clock: options.clock,
    publicUrl: options.config.publicUrl,
    ...(options.uploadFormTtlMs === undefined ? {} : { uploadFormTtlMs: options.uploadFormTtlMs }),
    ...(options.downloadUrlTtlMs === undefined ? {} : { downloadUrlTtlMs: options.downloadUrlTtlMs }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    onOrphanBlob: (blobId, err) => options.log.warn('could not delete a blob no file uses any more', { blobId, err }),
  });
  return { blobs, files };
}

export type { BlobStore, OpenedBlob, StoredBlob } from './blob-store.js';
export { BlobNotFoundError, BlobSizeMismatchError } from './blob-store.js';
export { LocalBlobStore } from './local-blob-store.js';
export { FilesError } from './errors.js';
export { FileTransfer, UPLOAD_FORM_TTL_MS, DOWNLOAD_URL_TTL_MS } from './transfer.js';
export type { FileDetail, FileSummary, UploadFormAnswer, FileTransferOptions } from './transfer.js';
export { FilesSigner, loadFilesSigner } from './signing.js';
export { downloadHeaders, contentDisposition } from './download.js';
export { parseUploadRequest, checkFileKey, FILE_KEY_MESSAGE, MAX_FILE_BYTES } from './upload-request.js';
export { MAX_UPLOAD_BODY_BYTES, CLOSE_CONNECTION } from './multipart.js';
export { resolveContentType, contentTypeOfName } from './mime.js';
