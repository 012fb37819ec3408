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
import { DatabaseBlobStore } from './database-blob-store.js';
import { LocalBlobStore } from './local-blob-store.js';
import { loadFilesSigner } from './signing.js';
import { FileTransfer, OBJECT_SWEEP_INTERVAL_MS, UNUSED_OBJECT_AGE_MS } from './transfer.js';

declare module '../http/services.js' {
  interface Services {
    blobs: BlobStore;
    files: FileTransfer;
  }
}

export interface FileServicesOptions {
  store: Store;
  config: Pick<Config, 'dataDir' | 'publicUrl'> & Partial<Pick<Config, 'blobStore' | 's3'>>;
  clock: Clock;
  log: Logger;
  /** Another blob store (tests); default: as `config.blobStore` says, `DATA_DIR/blobs` when absent. */
  blobs?: BlobStore;
  /** Shorter lifetimes or smaller limits for tests; the defaults are the decisions' values. */
  uploadFormTtlMs?: number;
  downloadUrlTtlMs?: number;
  limits?: FileLimits;
  lateUploadToleranceMs?: number;
}

export async function createFileServices(options: FileServicesOptions): Promise<{ blobs: BlobStore; files: FileTransfer }> {
  let blobs = options.blobs;
  if (!blobs && options.config.blobStore === 's3') {
    // Config refuses BLOB_STORE=s3 without its settings; this guards embedders that build a Config.
    if (!options.config.s3) throw new Error('BLOB_STORE=s3 needs S3_BUCKET and S3_REGION');
    // Loaded only here: the AWS SDK costs start-up time and memory a service without a bucket never needs.
    const { S3BlobStore } = await import('./s3-blob-store.js');
    const bucket = new S3BlobStore(options.config.s3);
    // Objects no record uses (OBJ-21), also those an instance that is gone left behind.
    bucket.startSweeping({
      inUse: (names) => options.store.files.blobsInUse(names),
      nowMs: () => options.clock.nowMs(),
      olderThanMs: UNUSED_OBJECT_AGE_MS,
      intervalMs: OBJECT_SWEEP_INTERVAL_MS,
      onError: (err) => options.log.warn('object store sweep failed', { err }),
    });
    blobs = bucket;
  }
  if (!blobs && options.config.blobStore === 'postgres') {
    // Config refuses BLOB_STORE=postgres without DATABASE_URL; this guards embedders that build a Config.
    if (options.store.dialect !== 'postgres') {
      throw new Error('BLOB_STORE=postgres keeps files in the PostgreSQL database: open the store with DATABASE_URL');
    }
    const shared = new DatabaseBlobStore(options.store.driver, {
      clock: options.clock,
      onSweepError: (err) => options.log.warn('shared blob store sweep failed', { err }),
    });
    // Abandoned uploads and deleted files' bytes, also of instances that are gone.
    shared.startSweeping();
    blobs = shared;
  }
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
    ...(options.lateUploadToleranceMs === undefined ? {} : { lateUploadToleranceMs: options.lateUploadToleranceMs }),
    onOrphanBlob: (blobId, err) => options.log.warn('could not delete a blob no file uses any more', { blobId, err }),
    onRefusedUpload: (upload) => options.log.info('an upload that reached the bucket was refused', { upload_id: upload.id, reason: upload.reason }),
  });
  return { blobs, files };
}

export type { BlobOwner, BlobStore, OpenedBlob, StoredBlob } from './blob-store.js';
export { BlobNotFoundError, BlobSizeMismatchError } from './blob-store.js';
export { LocalBlobStore } from './local-blob-store.js';
export { isDirectStore } from './direct-store.js';
export type { DirectObjectStore, ObjectInfo, ObjectSweepOptions, ObjectsInUse, SignedPost } from './direct-store.js';
// The S3 store itself (and the AWS SDK) is imported from './s3-blob-store.js' by those who need it.
export type { S3BlobStore } from './s3-blob-store.js';
export { fileObjectName, keyObjectPrefix, rowObjectPrefix, isFileObjectName } from './object-keys.js';
export type { S3Settings } from './s3-settings.js';
export { DatabaseBlobStore, DEFAULT_CHUNK_BYTES } from './database-blob-store.js';
export type { DatabaseBlobStoreOptions } from './database-blob-store.js';
export { FilesError, ObjectStoreUnavailableError } from './errors.js';
export { FileTransfer, UPLOAD_FORM_TTL_MS, DOWNLOAD_URL_TTL_MS, LATE_UPLOAD_TOLERANCE_MS, OBJECT_SWEEP_INTERVAL_MS, UNUSED_OBJECT_AGE_MS } from './transfer.js';
export type { FileDetail, FileSummary, UploadFormAnswer, FileTransferOptions } from './transfer.js';
export { FilesSigner, loadFilesSigner } from './signing.js';
export { downloadHeaders, contentDisposition } from './download.js';
export { parseUploadRequest, checkFileKey, FILE_KEY_MESSAGE, MAX_FILE_BYTES } from './upload-request.js';
export { MAX_UPLOAD_BODY_BYTES, CLOSE_CONNECTION } from './multipart.js';
export { resolveContentType, contentTypeOfName } from './mime.js';
