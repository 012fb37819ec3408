/**
 * What a blob store that tools reach directly offers (OBJ-01): kept apart from the S3 implementation so
 * that the service loads the AWS SDK only when `BLOB_STORE=s3` says so (PERF-26: cold start and memory).
 */
import type { BlobOwner, BlobStore } from './blob-store.js';

/** What the bucket says about one object. */
export interface ObjectInfo {
  size: number;
  /** `Last-Modified` in milliseconds (S3 gives whole seconds). */
  lastModified: number;
  /** The store's `ETag` of this version of the object, when it said. */
  etag?: string;
  /** Its `Content-Type`, as a HEAD answers it (a listing does not say). */
  contentType?: string;
}

/** Which of these object names the service's records still use (a file, or an upload still pending). */
export type ObjectsInUse = (names: string[]) => Promise<Set<string>>;

export interface ObjectSweepOptions {
  inUse: ObjectsInUse;
  /** Now, by the service's clock. */
  nowMs: () => number;
  /** An unused object is removed only once it is this old (OBJ-21). */
  olderThanMs: number;
  /** How often `startSweeping` sweeps. */
  intervalMs: number;
  /** Where a failed periodic sweep is reported; the next one tries again. */
  onError: (err: unknown) => void;
}

export interface SignedPost {
  url: string;
  fields: Record<string, string>;
}

export interface DirectUploadTerms {
  size: number;
  contentType: string;
  /** End of the form's life, milliseconds since the epoch (the reservation's `expiresAt`). */
  expiresAt: number;
  /** The service clock's now, so the policy's life is the reservation's whatever the SDK's clock says. */
  now: number;
}

export interface DirectDownloadTerms {
  contentType: string;
  contentDisposition: string;
  expiresInSeconds: number;
}

/**
 * What a blob store that tools reach directly offers beyond `BlobStore`: signing, and listing what
 * arrived. `FileTransfer` switches to direct transfer when its blob store has these (`isDirectStore`).
 */
export interface DirectObjectStore extends BlobStore {
  readonly direct: true;
  /** The object name an upload of `key` in `row` goes to: fresh for every call (OBJ-04). */
  newObjectName(owner: BlobOwner): string;
  signUpload(name: string, terms: DirectUploadTerms): Promise<SignedPost>;
  signDownload(name: string, terms: DirectDownloadTerms): Promise<string>;
  /** Every object under `prefix`, by name. */
  list(prefix: string): Promise<Map<string, ObjectInfo>>;
  stat(name: string): Promise<ObjectInfo | null>;
  /**
   * Copies an object inside the store (the bytes never reach the service) and answers what the copy is,
   * read back with a HEAD (size and content type); null when the source is gone or, with `ifMatch`, is no
   * longer that version (OBJ-20, OBJ-30).
   */
  copy(from: string, to: string, options?: { ifMatch?: string }): Promise<ObjectInfo | null>;
}

export function isDirectStore(blobs: BlobStore): blobs is DirectObjectStore {
  return (blobs as Partial<DirectObjectStore>).direct === true;
}
