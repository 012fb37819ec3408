/**
 * Files in a bucket of an S3-compatible object store (`BLOB_STORE=s3`, decisions OBJ-01 to OBJ-08). The
 * service never carries a file's bytes on the way in or out: a file PUT answers a presigned POST to the
 * bucket, a read answers a presigned GET, and what arrived is checked by listing the row's prefix (the
 * service's record moves only then, to a copy no form names, OBJ-05 and OBJ-20; objects no record uses are
 * swept, OBJ-21). `put` and `get` stream through the service only for
 * `tis files migrate` and for a form an embedded store signed before the switch.
 *
 * Blob IDs here are object names (object-keys.ts), so every other part of the service (the files table,
 * a Sandbox reset, `delete`) keeps handling opaque IDs.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { newId } from '../store/ids.js';
import type { BlobOwner, BlobStore, OpenedBlob, StoredBlob } from './blob-store.js';
import { BlobNotFoundError, BlobSizeMismatchError } from './blob-store.js';
import { ObjectStoreUnavailableError } from './errors.js';
import { fileObjectName, isFileObjectName } from './object-keys.js';
import type { S3Settings } from './s3-settings.js';
import type { ObjectInfo, ObjectsInUse, ObjectSweepOptions, SignedPost, DirectUploadTerms, DirectDownloadTerms, DirectObjectStore } from './direct-store.js';

export interface S3BlobStoreOptions extends S3Settings {
  /** Another client (tests); default: one built from the settings and the SDK's default credential chain. */
  client?: S3Client;
}

export function createS3Client(settings: S3Settings): S3Client {
  return new S3Client({
    region: settings.region,
    ...(settings.endpoint === null ? {} : { endpoint: settings.endpoint }),
    forcePathStyle: settings.forcePathStyle,
    // Checksums only where S3 requires them: several S3-compatible stores refuse or mangle the trailing
    // checksums newer SDKs send by default, and the service checks sizes (and `migrate` checksums) itself.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // No logger: the SDK's request logs could carry signed URLs. Credentials come from the default chain.
  });
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function isMissing(err: unknown): boolean {
  if (err instanceof NoSuchKey || err instanceof NotFound) return true;
  return statusOf(err) === 404;
}

/** The source of a conditional copy is no longer the version named (S3 and MinIO answer 412). */
function isChanged(err: unknown): boolean {
  return statusOf(err) === 412 || (err as { name?: string } | null)?.name === 'PreconditionFailed';
}

/** Where every file object lives (OBJ-03): the sweep looks nowhere else. */
const FILE_OBJECTS_PREFIX = 'contexts/';

/**
 * Runs one call to the bucket (or one signing, which resolves credentials): a missing object and the
 * service's own refusals pass as they are; anything else (connection refused, a timeout, a 5xx, credentials
 * that cannot be resolved, access denied) is the object store failing: `ObjectStoreUnavailableError`,
 * answered 503 with `Retry-After` (OBJ-10).
 */
async function atBucket<T>(operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (isMissing(err) || isChanged(err) || err instanceof BlobSizeMismatchError || err instanceof BlobNotFoundError || err instanceof ObjectStoreUnavailableError) throw err;
    throw new ObjectStoreUnavailableError(operation, { cause: err });
  }
}

export class S3BlobStore implements DirectObjectStore {
  readonly direct = true as const;
  readonly bucket: string;
  readonly client: S3Client;
  #timer: NodeJS.Timeout | null = null;
  #sweeping: Promise<unknown> | null = null;

  constructor(options: S3BlobStoreOptions) {
    this.bucket = options.bucket;
    this.client = options.client ?? createS3Client(options);
  }

  newObjectName(owner: BlobOwner): string {
    return fileObjectName(owner.row, owner.key, newId('blb'));
  }

  /**
   * The presigned POST of OBJ-02: the policy pins the bucket, the exact object name, the exact size
   * (`content-length-range` size..size), the content type and the expiry (the SDK adds the bucket, the
   * name and its own `x-amz-*` fields as exact-match conditions).
   */
  async signUpload(name: string, terms: DirectUploadTerms): Promise<SignedPost> {
    this.#checkName(name);
    // S3 policies carry whole seconds; a little short of the form's end, so the bucket never accepts later
    // than the service would.
    const seconds = Math.max(1, Math.floor((terms.expiresAt - terms.now - 5) / 1000));
    const signed = await atBucket('sign an upload', () => createPresignedPost(this.client, {
      Bucket: this.bucket,
      Key: name,
      Conditions: [
        ['content-length-range', terms.size, terms.size],
        ['eq', '$Content-Type', terms.contentType],
      ],
      Fields: { 'Content-Type': terms.contentType },
      Expires: seconds,
    }));
    return { url: signed.url, fields: { ...signed.fields } };
  }

  /** A presigned GET whose response headers are set through S3's response overrides (OBJ-06). */
  async signDownload(name: string, terms: DirectDownloadTerms): Promise<string> {
    this.#checkName(name);
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: name,
      ResponseContentType: terms.contentType,
      ResponseContentDisposition: terms.contentDisposition,
      ResponseCacheControl: 'private, no-store',
    });
    return atBucket('sign a download', () => getSignedUrl(this.client, command, { expiresIn: terms.expiresInSeconds }));
  }

  async list(prefix: string): Promise<Map<string, ObjectInfo>> {
    const found = new Map<string, ObjectInfo>();
    for await (const page of this.#pages(prefix)) for (const [name, info] of page) found.set(name, info);
    return found;
  }

  /** The objects under `prefix`, one listing page (up to 1000) at a time. */
  async *#pages(prefix: string): AsyncGenerator<Array<[string, ObjectInfo]>> {
    let token: string | undefined;
    do {
      const continuation = token;
      const page = await atBucket('list objects', () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ...(continuation ? { ContinuationToken: continuation } : {}) })),
      );
      const objects: Array<[string, ObjectInfo]> = [];
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue;
        objects.push([
          object.Key,
          { size: object.Size ?? 0, lastModified: object.LastModified?.getTime() ?? 0, ...(object.ETag ? { etag: object.ETag } : {}) },
        ]);
      }
      yield objects;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async copy(from: string, to: string, options: { ifMatch?: string } = {}): Promise<ObjectInfo | null> {
    this.#checkName(from);
    this.#checkName(to);
    try {
      await atBucket('copy an object', () => this.client.send(new CopyObjectCommand({
        Bucket: this.bucket,
        Key: to,
        // Object names hold only URL-safe characters (OBJ-03), so the source needs no escaping.
        CopySource: `${this.bucket}/${from}`,
        ...(options.ifMatch ? { CopySourceIfMatch: options.ifMatch } : {}),
      })));
    } catch (err) {
      if (isMissing(err) || isChanged(err)) return null;
      throw err;
    }
    // What the copy holds, read back: a store that ignores the condition may have copied a later write.
    return this.stat(to);
  }

  /**
   * Removes every file object that no record uses and that is older than `olderThanMs` (OBJ-21): a form
   * posted again after its upload was accepted, an upload that landed after its form was given up, the
   * objects of a Sandbox reset or of deleted rows, a delete that failed. One listing of the bucket's file
   * objects, a page at a time; the records are asked about each page at once. Returns how many went.
   */
  async sweepUnused(options: Pick<ObjectSweepOptions, 'inUse' | 'nowMs' | 'olderThanMs'>): Promise<number> {
    let removed = 0;
    for await (const page of this.#pages(FILE_OBJECTS_PREFIX)) {
      // Read the clock per page: a long listing must not age objects that were new when it began.
      const cutoff = options.nowMs() - options.olderThanMs;
      const candidates = page.filter(([name, info]) => isFileObjectName(name) && info.lastModified <= cutoff).map(([name]) => name);
      if (candidates.length === 0) continue;
      const used = await options.inUse(candidates);
      for (const name of candidates) {
        if (used.has(name)) continue;
        await this.delete(name);
        removed += 1;
      }
    }
    return removed;
  }

  /** Sweeps every `intervalMs` until `close()`; the timer never keeps the process alive. */
  startSweeping(options: ObjectSweepOptions): void {
    if (this.#timer) return;
    const run = (): void => {
      if (this.#sweeping) return;
      this.#sweeping = this.sweepUnused(options)
        .catch((err: unknown) => options.onError(err))
        .finally(() => {
          this.#sweeping = null;
        });
    };
    this.#timer = setInterval(run, options.intervalMs);
    this.#timer.unref();
  }

  async stat(name: string): Promise<ObjectInfo | null> {
    this.#checkName(name);
    try {
      const head = await atBucket('read an object', () => this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: name })));
      return {
        size: head.ContentLength ?? 0,
        lastModified: head.LastModified?.getTime() ?? 0,
        ...(head.ETag ? { etag: head.ETag } : {}),
        ...(head.ContentType !== undefined ? { contentType: head.ContentType } : {}),
      };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  /**
   * Streams exactly `expectedSize` bytes into a fresh object of `owner`'s key (a form signed by an
   * embedded store before the switch). The bytes are counted on the way, so a short or long source
   * is refused and its object removed.
   */
  async put(source: AsyncIterable<Uint8Array> | Readable, expectedSize: number, owner?: BlobOwner): Promise<StoredBlob> {
    if (!owner) throw new TypeError('an object store names every object after its row and key: put needs the owner');
    const name = this.newObjectName(owner);
    await this.putObject(name, source, expectedSize);
    return { id: name, size: expectedSize };
  }

  /**
   * Writes one object of exactly `size` bytes. With `md5` (base64) the store checks the bytes it received
   * against it (`Content-MD5`). Returns the SHA-256 of what was sent.
   */
  async putObject(
    name: string,
    source: AsyncIterable<Uint8Array> | Readable,
    size: number,
    options: { contentType?: string; md5?: string } = {},
  ): Promise<{ sha256: string }> {
    this.#checkName(name);
    const hash = createHash('sha256');
    let received = 0;
    async function* counted(): AsyncGenerator<Uint8Array> {
      for await (const chunk of source) {
        received += chunk.byteLength;
        if (received > size) throw new BlobSizeMismatchError(size, received);
        hash.update(chunk);
        yield chunk;
      }
      if (received !== size) throw new BlobSizeMismatchError(size, received);
    }
    try {
      await atBucket('write an object', () => this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: name,
          Body: Readable.from(counted()),
          ContentLength: size,
          ...(options.contentType ? { ContentType: options.contentType } : {}),
          ...(options.md5 ? { ContentMD5: options.md5 } : {}),
        }),
      ));
    } catch (err) {
      await this.delete(name).catch(() => undefined);
      throw err;
    }
    return { sha256: hash.digest('hex') };
  }

  async get(id: string): Promise<OpenedBlob> {
    if (!isFileObjectName(id)) throw new BlobNotFoundError(id);
    try {
      const got = await atBucket('read an object', () => this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: id })));
      if (!got.Body) throw new BlobNotFoundError(id);
      return { stream: got.Body as Readable, size: got.ContentLength ?? 0 };
    } catch (err) {
      if (isMissing(err)) throw new BlobNotFoundError(id);
      throw err;
    }
  }

  async delete(id: string): Promise<void> {
    // Not a file object: an embedded store's blob ID, which names nothing in the bucket.
    if (!isFileObjectName(id)) return;
    await atBucket('delete an object', () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: id })));
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#sweeping;
    this.client.destroy();
  }

  #checkName(name: string): void {
    if (!isFileObjectName(name)) throw new RangeError(`not a file object name: ${JSON.stringify(name)}`);
  }
}
