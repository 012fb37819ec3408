import { hash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';

/** RFC 4648 base32 alphabet in lower case: IDs stay readable and case-insensitive-safe in logs and URLs. */
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

export function base32(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32[(buffer << (5 - bits)) & 31];
  return out;
}

export type IdPrefix =
  | 'app'
  | 'ctx'
  | 'loc'
  | 'mem'
  | 'usr'
  | 'org'
  | 'plc'
  | 'att'
  | 'grd'
  | 'lch'
  | 'li'
  | 'bld'
  | 'opr'
  | 'upl'
  | 'blb'
  | 'key'
  | 'rl'
  | 'aud'
  | 'lreg'
  | 'dl';

/** Length of the random part: 16 bytes give 26 base32 characters (128 bits), decision L-09 asks 20+. */
export const ID_RANDOM_CHARS = 26;

/**
 * IDs' random bytes are drawn from a pool refilled 256 IDs at a time (PERF-102): one `randomFillSync` call
 * (and one trip into OpenSSL's generator) per 256 IDs instead of a `randomBytes` Buffer per ID. The bytes
 * are the same CSPRNG's; each is used once.
 */
const ID_BYTES = 16;
const idPool = Buffer.allocUnsafe(ID_BYTES * 256);
let idPoolOffset = idPool.length;

export function newId(prefix: IdPrefix): string {
  if (idPoolOffset === idPool.length) {
    randomFillSync(idPool);
    idPoolOffset = 0;
  }
  const bytes = idPool.subarray(idPoolOffset, idPoolOffset + ID_BYTES);
  idPoolOffset += ID_BYTES;
  return `${prefix}_${base32(bytes)}`;
}

/** 32 random bytes as base64url: 43 characters, 256 bits. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Node's one-shot digest: no Hash object per call (PERF-102). */
export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/** Compares two hex digests without leaking where they differ. */
export function digestsEqual(aHex: string, bHex: string): boolean {
  const a = Buffer.from(aHex, 'hex');
  const b = Buffer.from(bHex, 'hex');
  if (a.length !== b.length || a.length === 0) return false;
  return timingSafeEqual(a, b);
}

export const API_KEY_PREFIX = 'ltiaas_';
export const API_TOKEN_PREFIX = 'tis_at_';
export const BUILDER_TOKEN_PREFIX = 'tisb_';
/**
 * A named operator's token (OPS-51): not a builder's, so a token in a log or a paste says whose it is.
 * Operators created before it kept `tisb_` tokens, which still authenticate as the operator.
 */
export const OPERATOR_TOKEN_PREFIX = 'tiso_';

const SECRET_PATTERN = '[A-Za-z0-9_-]{43}';
const API_KEY_RE = new RegExp(`^${API_KEY_PREFIX}(app_[a-z2-7]{20,60})_(${SECRET_PATTERN})$`);
const API_TOKEN_RE = new RegExp(`^${API_TOKEN_PREFIX}${SECRET_PATTERN}$`);
const BUILDER_TOKEN_RE = new RegExp(`^${BUILDER_TOKEN_PREFIX}${SECRET_PATTERN}$`);
const OPERATOR_TOKEN_RE = new RegExp(`^${OPERATOR_TOKEN_PREFIX}${SECRET_PATTERN}$`);
const TICKET_RE = new RegExp(`^${SECRET_PATTERN}$`);

export function newApiKey(appId: string): string {
  return `${API_KEY_PREFIX}${appId}_${newSecret()}`;
}

/** The app ID named by a well-formed key, or null. The secret may itself contain '_', the app ID cannot. */
export function parseApiKey(key: string): { appId: string } | null {
  const match = API_KEY_RE.exec(key);
  return match?.[1] ? { appId: match[1] } : null;
}

/** `ltiaas_...` + the last four characters (decision GAP-29). */
export function apiKeyHint(key: string): string {
  return `${API_KEY_PREFIX}...${key.slice(-4)}`;
}

export function newApiToken(): string {
  return `${API_TOKEN_PREFIX}${newSecret()}`;
}

export function isWellFormedApiToken(token: string): boolean {
  return API_TOKEN_RE.test(token);
}

export function newBuilderToken(): string {
  return `${BUILDER_TOKEN_PREFIX}${newSecret()}`;
}

export function isWellFormedBuilderToken(token: string): boolean {
  return BUILDER_TOKEN_RE.test(token);
}

export function newOperatorToken(): string {
  return `${OPERATOR_TOKEN_PREFIX}${newSecret()}`;
}

export function isWellFormedOperatorToken(token: string): boolean {
  return OPERATOR_TOKEN_RE.test(token);
}

/** Launch tickets travel in a URL path (`/launch/{ticket}`), so they are bare base64url. */
export function newTicket(): string {
  return newSecret();
}

export function isWellFormedTicket(ticket: string): boolean {
  return TICKET_RE.test(ticket);
}
