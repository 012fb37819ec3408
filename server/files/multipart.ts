/**
 * The receiving end of a signed upload form: a streaming `multipart/form-data` reader. The fields come
 * first; when the `file` part begins, the fields before it are checked (signature, expiry, reservation)
 * before a single byte is stored, then the bytes stream into the blob store while being counted. Nothing
 * is buffered whole in memory, and nothing is stored unless the form is complete and well ordered.
 */
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import busboy from 'busboy';
import { schemas } from '../../generated/2026-09-21/schemas.js';
import { fillMessage } from '../../rules/messages.js';
import type { BlobOwner, BlobStore, StoredBlob } from './blob-store.js';
import { BlobSizeMismatchError } from './blob-store.js';
import { FilesError } from './errors.js';

/** Decision S-03: a 25 MB file and 64 KB of form fields. */
export const MAX_UPLOAD_FIELDS_BYTES = 65_536;
const MAX_UPLOAD_FILE_BYTES = 26_214_400;
export const MAX_UPLOAD_BODY_BYTES = MAX_UPLOAD_FILE_BYTES + MAX_UPLOAD_FIELDS_BYTES;

/** Decision KIT-24: the upload target's answers, as the spec states them on the upload body. */
const MESSAGES = schemas.UploadFormBody['x-messages'];

export interface ReceiveUploadOptions<T> {
  blobs: BlobStore;
  /**
   * Checks the fields sent before `file` (the credential of the upload): throws a `FilesError` to refuse,
   * or returns what the caller needs later and the exact number of bytes the file must have. Called when
   * the `file` part begins, or at the end of a form that has none (so a forged form is refused as such).
   */
  admit(fields: ReadonlyMap<string, string>): Promise<{ admitted: T; expectedSize: number; owner?: BlobOwner }>;
  maxBodyBytes?: number;
}

export interface ReceivedUpload<T> {
  admitted: T;
  blob: StoredBlob;
}

/** Set on a refusal after which the rest of the request is not worth reading: close the connection. */
export const CLOSE_CONNECTION = Symbol('closeConnection');

export function isMultipartFormData(contentType: string | undefined): boolean {
  return contentType !== undefined && /^multipart\/form-data\s*(;|$)/i.test(contentType.trim());
}

/**
 * Reads the upload. Resolves with the stored blob once the whole form is read and valid; the caller
 * commits it or deletes it. Rejects with a `FilesError` (nothing stored) otherwise.
 */
export function receiveUpload<T>(req: IncomingMessage, options: ReceiveUploadOptions<T>): Promise<ReceivedUpload<T>> {
  const maxBodyBytes = options.maxBodyBytes ?? MAX_UPLOAD_BODY_BYTES;
  if (!isMultipartFormData(req.headers['content-type'])) {
    return Promise.reject(new FilesError(415, 'unsupported_media_type', MESSAGES.not_multipart));
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBodyBytes) return Promise.reject(tooLarge(maxBodyBytes));

  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      limits: { fieldSize: MAX_UPLOAD_FIELDS_BYTES, fields: 64, files: 8, parts: 72, headerPairs: 32 },
    });
  } catch (err) {
    return Promise.reject(malformed(err));
  }

  return new Promise<ReceivedUpload<T>>((resolve, reject) => {
    const fields = new Map<string, string>();
    let received = 0;
    let fileSeen = false;
    let partAfterFile = false;
    /** The first reason to refuse; later ones do not replace it. */
    let refusal: FilesError | null = null;
    let admitted: { admitted: T; expectedSize: number; owner?: BlobOwner } | null = null;
    let stored: Promise<StoredBlob | null> = Promise.resolve(null);
    let tap: PassThrough | null = null;
    let settled = false;

    const refuse = (error: FilesError): void => {
      refusal ??= error;
    };

    const finish = (outcome: () => Promise<ReceivedUpload<T>>): void => {
      if (settled) return;
      settled = true;
      req.off('data', count);
      outcome().then(resolve, reject);
    };

    /** Keeps reading (and counting) whatever is left, so the answer can be sent on an idle connection. */
    const drain = (): void => {
      req.unpipe(parser);
      req.resume();
    };

    const abort = (error: FilesError, keepReading = true): void => {
      tap?.destroy(error);
      if (keepReading) drain();
      parser.destroy();
      finish(async () => {
        const blob = await stored.catch(() => null);
        if (blob) await options.blobs.delete(blob.id).catch(() => undefined);
        throw error;
      });
    };

    function count(chunk: Buffer): void {
      received += chunk.length;
      if (received > maxBodyBytes) {
        // Stop reading: nobody should make the service read (or wait for) more than any upload can be.
        req.unpipe(parser);
        req.pause();
        const error = tooLarge(maxBodyBytes);
        Object.assign(error, { [CLOSE_CONNECTION]: true });
        if (settled) req.destroy();
        else abort(error, false);
      }
    }
    req.on('data', count);

    req.on('close', () => {
      if (!req.complete) abort(new FilesError(422, 'upload_incomplete', MESSAGES.incomplete));
    });
    req.on('error', () => {
      abort(new FilesError(422, 'upload_incomplete', MESSAGES.incomplete));
    });

    parser.on('field', (name, value) => {
      if (fileSeen) partAfterFile = true;
      // The first of repeated names counts, as in the signed form; a `file` sent as text is no file.
      else if (!fields.has(name)) fields.set(name, value);
    });

    parser.on('file', (name, stream) => {
      // The parser fails a part it cannot finish (the client went away); the outcome is decided below.
      stream.on('error', () => undefined);
      if (fileSeen) {
        partAfterFile = true;
        stream.resume();
        return;
      }
      if (name !== 'file') {
        // A part this version does not name, before the file: ignored, like unknown fields.
        stream.resume();
        return;
      }
      fileSeen = true;
      const snapshot = new Map(fields);
      stored = (async () => {
        try {
          admitted = await options.admit(snapshot);
        } catch (err) {
          stream.resume();
          if (err instanceof FilesError) {
            refuse(err);
            return null;
          }
          throw err;
        }
        const through = new PassThrough();
        through.on('error', () => undefined);
        tap = through;
        stream.pipe(through);
        try {
          return await options.blobs.put(through, admitted.expectedSize, admitted.owner);
        } catch (err) {
          stream.unpipe(through);
          stream.resume();
          if (err instanceof BlobSizeMismatchError) {
            refuse(new FilesError(422, 'upload_size_mismatch', MESSAGES.size_mismatch));
            return null;
          }
          throw err;
        }
      })();
      // Settled in `close`; keep an early rejection from counting as unhandled meanwhile.
      stored.catch(() => undefined);
    });

    parser.on('error', (err) => {
      abort(malformed(err));
    });

    parser.on('close', () => {
      finish(async () => {
        const blob = await stored;
        const discard = async (): Promise<void> => {
          if (blob) await options.blobs.delete(blob.id).catch(() => undefined);
        };
        if (refusal) {
          await discard();
          throw refusal;
        }
        if (!fileSeen) {
          // The signature is the upload's credential: a forged or expired form is refused as such first
          // (403); anything else `admit` would say about the file (422) is moot without one.
          try {
            await options.admit(fields);
          } catch (err) {
            if (!(err instanceof FilesError) || err.status !== 422) throw err;
          }
          throw new FilesError(422, 'upload_file_missing', MESSAGES.file_missing);
        }
        if (partAfterFile) {
          await discard();
          throw new FilesError(422, 'upload_file_not_last', MESSAGES.file_not_last);
        }
        if (!blob || !admitted) throw new Error('upload finished without a stored blob');
        return { admitted: admitted.admitted, blob };
      });
    });

    req.pipe(parser);
  });
}

function tooLarge(maxBodyBytes: number): FilesError {
  return new FilesError(
    413,
    'upload_too_large',
    maxBodyBytes === MAX_UPLOAD_BODY_BYTES
      ? fillMessage(MESSAGES.too_large, {
          limit: MAX_UPLOAD_BODY_BYTES,
          file_limit: MAX_UPLOAD_FILE_BYTES,
          fields_limit: MAX_UPLOAD_FIELDS_BYTES,
        })
      : fillMessage(MESSAGES.too_large_limit, { limit: maxBodyBytes }),
  );
}

function malformed(err: unknown): FilesError {
  const reason = err instanceof Error ? err.message : String(err);
  return new FilesError(422, 'malformed_upload', fillMessage(MESSAGES.malformed, { reason }));
}
