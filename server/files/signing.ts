/**
 * Signed upload forms and download URLs: HMAC-SHA256 under one secret that every instance shares (kept
 * in the store, so any instance verifies what another signed). The two kinds of signature are computed
 * over different prefixes, so a download token can never pass as an upload policy or the reverse.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RowKey, RowKind, Store } from '../store/index.js';

/** Name of the shared secret in the store's `service_secrets`. */
export const FILES_SECRET_NAME = 'files.hmac.v1';

/** What an upload form allows: exactly one file, of exactly this size, into this key of this row. */
export interface UploadPolicy {
  /** The reservation that holds the upload's place in the row's quota (decision GAP-35). */
  upload: string;
  row: RowKey;
  key: string;
  size: number;
  content_type: string;
  filename: string;
  attachment: boolean;
  /** End of the form's life, in milliseconds since the epoch (decision GAP-05). */
  expires: number;
}

/** What a download URL names: one stored blob, until `expires` (decision GAP-07). */
export interface DownloadGrant {
  blob: string;
  expires: number;
}

const UPLOAD_PREFIX = 'tis/upload-policy/v1\n';
const DOWNLOAD_PREFIX = 'tis/download/v1\n';

const ROW_KINDS: readonly RowKind[] = ['context', 'location', 'member', 'member_location'];

export class FilesSigner {
  readonly #key: Buffer;

  constructor(secret: string | Buffer) {
    this.#key = typeof secret === 'string' ? Buffer.from(secret, 'base64url') : secret;
    if (this.#key.length < 32) throw new RangeError('the files signing secret must hold at least 32 bytes');
  }

  #mac(prefix: string, payload: string): Buffer {
    return createHmac('sha256', this.#key).update(prefix).update(payload).digest();
  }

  #matches(prefix: string, payload: string, signature: string): boolean {
    if (!/^[A-Za-z0-9_-]{43}$/.test(signature)) return false;
    const given = Buffer.from(signature, 'base64url');
    const expected = this.#mac(prefix, payload);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** The form's `fields`: the policy as base64url JSON and its signature. */
  signUpload(policy: UploadPolicy): { policy: string; signature: string } {
    const encoded = Buffer.from(JSON.stringify(policy), 'utf8').toString('base64url');
    return { policy: encoded, signature: this.#mac(UPLOAD_PREFIX, encoded).toString('base64url') };
  }

  /** The policy when the signature is the service's and the policy is well formed; null otherwise. */
  verifyUpload(policy: string, signature: string): UploadPolicy | null {
    if (!this.#matches(UPLOAD_PREFIX, policy, signature)) return null;
    return parseUploadPolicy(decodeJson(policy));
  }

  /** An opaque token: `base64url(JSON).base64url(HMAC)`. */
  signDownload(grant: DownloadGrant): string {
    const payload = Buffer.from(JSON.stringify({ b: grant.blob, e: grant.expires }), 'utf8').toString('base64url');
    return `${payload}.${this.#mac(DOWNLOAD_PREFIX, payload).toString('base64url')}`;
  }

  verifyDownload(token: string): DownloadGrant | null {
    const dot = token.indexOf('.');
    if (dot <= 0) return null;
    const payload = token.slice(0, dot);
    if (!this.#matches(DOWNLOAD_PREFIX, payload, token.slice(dot + 1))) return null;
    const value = decodeJson(payload);
    if (!isRecord(value) || typeof value['b'] !== 'string' || !isTime(value['e'])) return null;
    return { blob: value['b'], expires: value['e'] };
  }
}

/** The shared secret from the store, created by the first instance that needs it. */
export async function loadFilesSigner(store: Pick<Store, 'secrets'>): Promise<FilesSigner> {
  const secret = await store.secrets.getOrCreate(FILES_SECRET_NAME, () => randomBytes(32).toString('base64url'));
  return new FilesSigner(secret);
}

function decodeJson(encoded: string): unknown {
  if (!/^[A-Za-z0-9_-]*$/.test(encoded)) return null;
  try {
    return JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as unknown;
  } catch {
    return null;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function parseRowKey(value: unknown): RowKey | null {
  if (!isRecord(value)) return null;
  const { appId, contextId, kind, locationId, memberId } = value;
  if (typeof appId !== 'string' || typeof contextId !== 'string') return null;
  if (typeof kind !== 'string' || !(ROW_KINDS as readonly string[]).includes(kind)) return null;
  switch (kind as RowKind) {
    case 'context':
      return { appId, contextId, kind: 'context' };
    case 'location':
      return typeof locationId === 'string' ? { appId, contextId, kind: 'location', locationId } : null;
    case 'member':
      return typeof memberId === 'string' ? { appId, contextId, kind: 'member', memberId } : null;
    case 'member_location':
      return typeof locationId === 'string' && typeof memberId === 'string'
        ? { appId, contextId, kind: 'member_location', locationId, memberId }
        : null;
  }
}

function parseUploadPolicy(value: unknown): UploadPolicy | null {
  if (!isRecord(value)) return null;
  const row = parseRowKey(value['row']);
  const { upload, key, size, content_type, filename, attachment, expires } = value;
  if (
    row === null ||
    typeof upload !== 'string' ||
    typeof key !== 'string' ||
    !isTime(size) ||
    typeof content_type !== 'string' ||
    typeof filename !== 'string' ||
    typeof attachment !== 'boolean' ||
    !isTime(expires)
  ) {
    return null;
  }
  return { upload, row, key, size, content_type, filename, attachment, expires };
}
