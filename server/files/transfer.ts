/**
 * The files of a row, end to end: listing, reading with a signed download URL, signing an upload form
 * (with the quota check), receiving the upload, serving downloads and deleting. The row has already
 * been found and authorized by the caller (the row guard); this module owns what happens to files.
 *
 * The one invariant that matters most: a stored file is only ever replaced by a database commit that
 * points its key at a complete, durable new blob. The old blob is deleted after that commit, so a failed,
 * refused or abandoned upload never costs the file it meant to replace.
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { schemas } from '../../generated/2026-09-21/schemas.js';
import { fillMessage } from '../../rules/messages.js';
import type { Clock, FileLimits, FileRecord, RowKey, Store, UploadReservation } from '../store/index.js';
import { FILE_LIMITS, FileQuotaError, UploadNotPendingError } from '../store/index.js';
import type { BlobStore } from './blob-store.js';
import { BlobNotFoundError } from './blob-store.js';
import { contentDisposition } from './download.js';
import { FilesError } from './errors.js';
import { resolveContentType } from './mime.js';
import { MAX_UPLOAD_BODY_BYTES, receiveUpload } from './multipart.js';
import { keyObjectPrefix, rowObjectPrefix } from './object-keys.js';
import type { DirectObjectStore, ObjectInfo } from './direct-store.js';
import { isDirectStore } from './direct-store.js';
import type { FilesSigner, UploadPolicy } from './signing.js';
import type { UploadRequest } from './upload-request.js';
import { sizeTooLargeMessage } from './upload-request.js';

/** Decision GAP-05: a signed upload form is valid 15 minutes. */
export const UPLOAD_FORM_TTL_MS = 15 * 60 * 1000;
/** Decision GAP-07: a download URL lives 5 minutes. */
export const DOWNLOAD_URL_TTL_MS = 5 * 60 * 1000;
/**
 * Decision OBJ-05: how far past its form's end an object may be stamped and still count (clock skew
 * between the service and the store, S3's whole seconds, a slow upload that started in time); and how long
 * after its form's end an upload with nothing arrived stays pending.
 */
export const LATE_UPLOAD_TOLERANCE_MS = 5 * 60 * 1000;
/**
 * Decision OBJ-21: the object store's sweep runs this often on every instance, and removes an object no
 * record uses only once it is this old (an accepted upload's copy exists a moment before its record, a
 * migrated file's copy a little longer).
 */
export const OBJECT_SWEEP_INTERVAL_MS = 60 * 60 * 1000;
export const UNUSED_OBJECT_AGE_MS = 60 * 60 * 1000;

export interface FileSummary {
  key: string;
  size: number;
  modified: number;
}

export interface FileDetail extends FileSummary {
  content_type: string;
  url: string;
  expires: number;
}

export interface UploadFormAnswer {
  url: string;
  /** Opaque to tools: the embedded store's `policy` and `signature`, or a bucket's presigned POST fields. */
  fields: Record<string, string>;
}

export interface FileTransferOptions {
  store: Store;
  blobs: BlobStore;
  signer: FilesSigner;
  clock: Clock;
  /** Origin of every URL handed out (L-01). */
  publicUrl: string;
  /** Lifetimes, shortened by tests; default to the decisions' values. */
  uploadFormTtlMs?: number;
  downloadUrlTtlMs?: number;
  limits?: FileLimits;
  maxUploadBodyBytes?: number;
  /** Decision OBJ-05's tolerance; shortened by tests. */
  lateUploadToleranceMs?: number;
  /** Where a blob that could not be deleted is reported (it is garbage, never data loss). */
  onOrphanBlob?: (blobId: string, err: unknown) => void;
  /** Where an upload an object store received but the service refused is reported (OBJ-05). */
  onRefusedUpload?: (upload: { id: string; reason: string }) => void;
}

export interface OpenedDownload {
  file: FileRecord;
  stream: Readable;
  size: number;
  /** Milliseconds the signed URL has left: how long a browser may keep what it answers (H-06). */
  remainingMs: number;
}

interface AdmittedUpload {
  policy: UploadPolicy;
  reservation: UploadReservation;
}

const DOWNLOAD_MESSAGES = {
  invalid: schemas.DownloadToken['x-messages'].invalid,
  expired: schemas.DownloadToken['x-messages'].expired,
  gone: schemas.DownloadToken['x-messages'].file_gone,
} as const;

const UPLOAD_MESSAGES = {
  invalid: schemas.UploadForm['x-messages'].invalid,
  expired: schemas.UploadForm['x-messages'].expired,
} as const;

export class FileTransfer {
  readonly #o: Required<Omit<FileTransferOptions, 'onOrphanBlob' | 'onRefusedUpload'>> &
    Pick<FileTransferOptions, 'onOrphanBlob' | 'onRefusedUpload'>;
  /** Set when tools reach the blob store directly (an object store): forms and URLs are its own. */
  readonly #direct: DirectObjectStore | null;

  constructor(options: FileTransferOptions) {
    this.#o = {
      uploadFormTtlMs: UPLOAD_FORM_TTL_MS,
      downloadUrlTtlMs: DOWNLOAD_URL_TTL_MS,
      limits: FILE_LIMITS,
      maxUploadBodyBytes: MAX_UPLOAD_BODY_BYTES,
      lateUploadToleranceMs: LATE_UPLOAD_TOLERANCE_MS,
      ...options,
      publicUrl: options.publicUrl.replace(/\/+$/, ''),
    };
    this.#direct = isDirectStore(options.blobs) ? options.blobs : null;
    // The store keeps a form's life in whole seconds.
    if (!Number.isSafeInteger(this.#o.uploadFormTtlMs / 1000) || this.#o.uploadFormTtlMs <= 0) {
      throw new RangeError('uploadFormTtlMs must be a positive whole number of seconds');
    }
    if (!Number.isSafeInteger(this.#o.downloadUrlTtlMs) || this.#o.downloadUrlTtlMs <= 0) {
      throw new RangeError('downloadUrlTtlMs must be a positive whole number of milliseconds');
    }
    // A presigned GET lives whole seconds.
    if (this.#direct && !Number.isSafeInteger(this.#o.downloadUrlTtlMs / 1000)) {
      throw new RangeError('downloadUrlTtlMs must be a whole number of seconds with an object store');
    }
  }

  /** Whether tools post to and download from the blob store itself (an object store). */
  get direct(): boolean {
    return this.#direct !== null;
  }

  get limits(): FileLimits {
    return this.#o.limits;
  }

  /** Stored files by key (decision S-02); uploads in flight are not listed (GAP-35). */
  async list(row: RowKey): Promise<FileSummary[]> {
    await this.settle(row);
    const files = await this.#o.store.files.list(row);
    // Sorted here as well as in SQL: collations differ between engines, and "by key" means by code unit.
    return files
      .map((f) => ({ key: f.key, size: f.size, modified: f.modified }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async read(row: RowKey, key: string): Promise<FileDetail> {
    await this.settle(row, key);
    const file = await this.#o.store.files.get(row, key);
    if (!file) throw new FilesError(404, 'file_not_found', `no file with key ${key} in this row`);
    const expires = this.#o.clock.nowMs() + this.#o.downloadUrlTtlMs;
    let url: string;
    if (this.#direct) {
      // Decision OBJ-06: the bucket serves the bytes, with the headers the contract's rules give set
      // through S3's response overrides.
      url = await this.#direct.signDownload(file.blobId, {
        contentType: file.contentType,
        contentDisposition: contentDisposition(file.filename, file.attachment),
        expiresInSeconds: this.#o.downloadUrlTtlMs / 1000,
      });
    } else {
      url = `${this.#o.publicUrl}/v1/downloads/${this.#o.signer.signDownload({ blob: file.blobId, expires })}`;
    }
    return { key: file.key, size: file.size, modified: file.modified, content_type: file.contentType, url, expires };
  }

  /**
   * Reserves the upload in the row's quota and signs its form. The reservation and the quota check are
   * one transaction in the store, so two signings racing for the last slot cannot both win.
   */
  async requestUpload(row: RowKey, key: string, request: UploadRequest): Promise<UploadFormAnswer> {
    if (request.size > this.#o.limits.maxFileBytes) {
      throw new FilesError(422, 'file_too_large', sizeTooLargeMessage(this.#o.limits.maxFileBytes));
    }
    const contentType = resolveContentType(request.mimetype || undefined, request.filename || undefined, key);
    // The quota counts what really arrived: uploads completed since the row was last looked at included.
    await this.settle(row);
    let reservation: UploadReservation;
    try {
      reservation = await this.#o.store.files.reserveUpload({
        row,
        key,
        size: request.size,
        contentType,
        filename: request.filename || key,
        attachment: request.attachment,
        ttlSeconds: this.#o.uploadFormTtlMs / 1000,
        limits: this.#o.limits,
        // A fresh object for every upload (OBJ-04), named after the row and key (OBJ-03).
        ...(this.#direct ? { blobId: this.#direct.newObjectName({ row, key }) } : {}),
      });
    } catch (err) {
      throw this.#quotaProblem(err, request.size);
    }
    const policy: UploadPolicy = {
      upload: reservation.id,
      row,
      key,
      size: reservation.size,
      content_type: reservation.contentType,
      filename: reservation.filename,
      attachment: reservation.attachment,
      expires: reservation.expiresAt,
    };
    if (this.#direct) {
      try {
        return await this.#direct.signUpload(reservation.blobId, {
          size: reservation.size,
          contentType: reservation.contentType,
          expiresAt: reservation.expiresAt,
          now: this.#o.clock.nowMs(),
        });
      } catch (err) {
        // Nothing signed: the reservation must not hold quota for a form nobody got.
        await this.#o.store.files.failUpload(reservation.id);
        throw err;
      }
    }
    // Decision L-05 / OBJ-02: outside the API's `/v1`, like a bucket.
    return { url: `${this.#o.publicUrl}/uploads`, fields: this.#o.signer.signUpload(policy) };
  }

  /** Decision S-02: 204 also when no file had the key; an upload in flight is not cancelled. */
  async delete(row: RowKey, key: string): Promise<void> {
    // An upload that completed before the DELETE is part of what it deletes.
    await this.settle(row, key);
    const blobId = await this.#o.store.files.deleteFile(row, key);
    if (blobId) await this.#deleteBlob(blobId);
  }

  /**
   * The upload target. Resolves once the file is stored and listed; rejects with a `FilesError` and
   * stores nothing otherwise.
   */
  async receive(req: IncomingMessage): Promise<FileRecord> {
    const { admitted, blob } = await receiveUpload<AdmittedUpload>(req, {
      blobs: this.#o.blobs,
      maxBodyBytes: this.#o.maxUploadBodyBytes,
      admit: async (fields) => {
        const a = await this.#admit(fields);
        return { admitted: a, expectedSize: a.policy.size, owner: { row: a.reservation.row, key: a.reservation.key } };
      },
    });
    let stored: Awaited<ReturnType<Store['files']['storeUpload']>>;
    try {
      stored = await this.#o.store.files.storeUpload(admitted.reservation.id, { blobId: blob.id, size: blob.size }, { limits: this.#o.limits });
    } catch (err) {
      await this.#deleteBlob(blob.id);
      if (err instanceof UploadNotPendingError) throw new FilesError(403, 'upload_form_expired', UPLOAD_MESSAGES.expired);
      throw this.#quotaProblem(err, blob.size);
    }
    if (stored.replacedBlobId) await this.#deleteBlob(stored.replacedBlobId);
    return stored.file;
  }

  /**
   * A signed download: the signature first (403), then its expiry (403), then the file it names (404
   * once that file was replaced or deleted, decision S-02). The blob is opened before this resolves, so
   * a replacement committed while the bytes stream cannot cut the download short.
   */
  async openDownload(token: string): Promise<OpenedDownload> {
    const grant = this.#o.signer.verifyDownload(token);
    if (!grant) throw new FilesError(403, 'invalid_download_signature', DOWNLOAD_MESSAGES.invalid);
    if (grant.expires <= this.#o.clock.nowMs()) throw new FilesError(403, 'download_expired', DOWNLOAD_MESSAGES.expired);
    const file = await this.#o.store.files.getByBlob(grant.blob);
    if (!file) throw new FilesError(404, 'file_not_found', DOWNLOAD_MESSAGES.gone);
    try {
      const opened = await this.#o.blobs.get(file.blobId);
      return { file, stream: opened.stream, size: opened.size, remainingMs: grant.expires - this.#o.clock.nowMs() };
    } catch (err) {
      if (err instanceof BlobNotFoundError) throw new FilesError(404, 'file_not_found', DOWNLOAD_MESSAGES.gone);
      throw err;
    }
  }

  /**
   * Decision OBJ-05: learns what arrived in the bucket for the row's pending uploads (with `key`, that
   * key's) and moves the record accordingly. One listing of the prefix answers for all of them. An object
   * is accepted only if its size is the signed size and it was stamped no later than the form's end (plus
   * the tolerance), and the copy kept of it answers a HEAD with the signed size and content type (OBJ-30);
   * then the key points at it and the object it replaces is deleted. Anything else is
   * refused and its object deleted, and the file it meant to replace stays. Uploads are applied in the
   * order they arrived, so the last one wins. Nothing to do with an embedded store, whose upload target
   * records an upload as it lands.
   */
  async settle(row: RowKey, key?: string): Promise<void> {
    const direct = this.#direct;
    if (!direct) return;
    const pending = await this.#o.store.files.pendingUploads(row, key);
    if (pending.length === 0) return;
    const objects = await direct.list(key === undefined ? rowObjectPrefix(row) : keyObjectPrefix(row, key));
    const now = this.#o.clock.nowMs();
    const arrived: Array<{ reservation: UploadReservation; object: ObjectInfo }> = [];
    for (const reservation of pending) {
      const object = objects.get(reservation.blobId);
      if (object) arrived.push({ reservation, object });
      else if (reservation.expiresAt + this.#o.lateUploadToleranceMs <= now && (await this.#o.store.files.expireUpload(reservation.id))) {
        // Nothing came in time; should something still land (a store that ignores the policy), it is garbage.
        await this.#deleteBlob(reservation.blobId);
      }
    }
    arrived.sort((a, b) => a.object.lastModified - b.object.lastModified || a.reservation.createdAt - b.reservation.createdAt);
    for (const { reservation, object } of arrived) await this.#settleArrived(direct, reservation, object);
  }

  async #settleArrived(direct: DirectObjectStore, reservation: UploadReservation, object: ObjectInfo): Promise<void> {
    const refuse = async (reason: string): Promise<void> => {
      if ((await this.#o.store.files.failUpload(reservation.id)) !== null) {
        this.#o.onRefusedUpload?.({ id: reservation.id, reason });
        await this.#deleteBlob(reservation.blobId);
      }
    };
    if (object.size !== reservation.size) return refuse(`size ${object.size} is not the signed ${reservation.size}`);
    if (object.lastModified > reservation.expiresAt + this.#o.lateUploadToleranceMs) return refuse('arrived after the form expired');
    const current = await this.#o.store.files.get(reservation.row, reservation.key);
    // A later upload of the key is already the file: this older one never replaces it.
    if (current && current.modified > object.lastModified) return refuse('superseded by a later upload');
    // Decision OBJ-20: the file is kept under a name no form ever named, so a form posted again after this
    // (which a store enforcing no policy takes, whatever its size or time) writes an object nothing serves
    // or counts. The copy stays inside the store, of the version just checked where the store honours
    // the condition, and is checked again when read back.
    const kept = direct.newObjectName({ row: reservation.row, key: reservation.key });
    const copy = await direct.copy(reservation.blobId, kept, object.etag === undefined ? {} : { ifMatch: object.etag });
    // Gone or written again since the listing: the next look decides.
    if (!copy) return;
    // Decision OBJ-30: the object itself, as a HEAD of what is kept answers it, must be what was signed. A
    // store that enforces no POST policy keeps whatever `Content-Type` field the post carried, and the
    // listing says nothing of it; a download would otherwise be served with the signed type over other bytes.
    const problem =
      copy.size !== reservation.size
        ? `size ${copy.size} is not the signed ${reservation.size}`
        : copy.contentType !== reservation.contentType
          ? `content type ${JSON.stringify(copy.contentType ?? null)} is not the signed ${JSON.stringify(reservation.contentType)}`
          : null;
    if (problem !== null) {
      await this.#deleteBlob(kept);
      return refuse(problem);
    }
    let stored: Awaited<ReturnType<Store['files']['storeUpload']>>;
    try {
      stored = await this.#o.store.files.storeUpload(
        reservation.id,
        { blobId: kept, size: copy.size },
        { limits: this.#o.limits, modified: object.lastModified, onlyPending: true },
      );
    } catch (err) {
      await this.#deleteBlob(kept);
      // Another instance settled it meanwhile.
      if (err instanceof UploadNotPendingError) return;
      // Past its form's end it held no quota, and the row filled up meanwhile.
      if (err instanceof FileQuotaError) return refuse('over quota after the form expired');
      throw err;
    }
    // The form's own object: what a later post of the form writes, and nothing reads.
    await this.#deleteBlob(reservation.blobId);
    if (stored.replacedBlobId) await this.#deleteBlob(stored.replacedBlobId);
  }

  /** The fields before `file` are the upload's credential. */
  async #admit(fields: ReadonlyMap<string, string>): Promise<AdmittedUpload> {
    const encoded = fields.get('policy');
    const signature = fields.get('signature');
    const policy = encoded !== undefined && signature !== undefined ? this.#o.signer.verifyUpload(encoded, signature) : null;
    if (!policy) throw new FilesError(403, 'invalid_upload_signature', UPLOAD_MESSAGES.invalid);
    if (policy.expires <= this.#o.clock.nowMs()) throw new FilesError(403, 'upload_form_expired', UPLOAD_MESSAGES.expired);
    const reservation = await this.#o.store.files.getReservation(policy.upload);
    // Gone (a Sandbox reset discarded it) or swept: the form no longer holds anything, like an expired one.
    if (!reservation || (reservation.state !== 'pending' && reservation.state !== 'completed')) {
      throw new FilesError(403, 'upload_form_expired', UPLOAD_MESSAGES.expired);
    }
    if (!policyMatches(policy, reservation)) throw new FilesError(403, 'invalid_upload_signature', UPLOAD_MESSAGES.invalid);
    // A form used before holds no reservation any more: say now, not after reading the bytes, that the
    // file no longer fits. The check that decides is the one when the upload lands.
    try {
      await this.#o.store.files.checkFits(reservation.row, reservation.key, reservation.size, this.#o.limits);
    } catch (err) {
      throw this.#quotaProblem(err, reservation.size);
    }
    return { policy, reservation };
  }

  #quotaProblem(err: unknown, size: number): unknown {
    if (!(err instanceof FileQuotaError)) return err;
    const limits = this.#o.limits;
    switch (err.reason) {
      case 'file_size':
        return new FilesError(422, 'file_too_large', sizeTooLargeMessage(limits.maxFileBytes));
      case 'file_count':
        return new FilesError(422, 'too_many_files', fillMessage(QUOTA_MESSAGES.too_many_files, { files_per_row: limits.maxFiles }));
      case 'total_bytes':
        // `requested` is what the row would hold with this file: the rest is what others hold or reserve.
        return new FilesError(
          422,
          'file_bytes_quota_exceeded',
          fillMessage(QUOTA_MESSAGES.too_many_bytes, { bytes_per_row: limits.maxTotalBytes, held: Math.max(0, err.requested - size), size }),
        );
    }
  }

  async #deleteBlob(blobId: string): Promise<void> {
    try {
      await this.#o.blobs.delete(blobId);
    } catch (err) {
      this.#o.onOrphanBlob?.(blobId, err);
    }
  }
}

/** The quota's messages as the spec words them (FileList's `x-messages`, decision KIT-20). */
const QUOTA_MESSAGES = schemas.FileList['x-messages'];

function sameRow(a: RowKey, b: RowKey): boolean {
  const loc = (k: RowKey): string => (k.kind === 'location' || k.kind === 'member_location' ? k.locationId : '');
  const mem = (k: RowKey): string => (k.kind === 'member' || k.kind === 'member_location' ? k.memberId : '');
  return a.appId === b.appId && a.contextId === b.contextId && a.kind === b.kind && loc(a) === loc(b) && mem(a) === mem(b);
}

/** A policy is the service's only if it says what the reservation it names holds. */
function policyMatches(policy: UploadPolicy, reservation: UploadReservation): boolean {
  return (
    sameRow(policy.row, reservation.row) &&
    policy.key === reservation.key &&
    policy.size === reservation.size &&
    policy.content_type === reservation.contentType &&
    policy.filename === reservation.filename &&
    policy.attachment === reservation.attachment &&
    policy.expires === reservation.expiresAt
  );
}
