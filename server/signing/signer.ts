/**
 * RS256 signing of the tokens the service sends tools (launch, provision, locations; decisions NS-12,
 * NS-13). Keys live in the store so every instance signs with, and publishes, the same keys.
 *
 * Rotation follows NS-13: a new key is published first and starts signing only after `publishDelayMs`
 * (longer than the JWKS cache lifetime, so every tool that honours `Cache-Control` has seen it); the old
 * key stops signing at that moment and stays published until every token it signed has expired.
 */
import { exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose';
import type { JWTPayload } from 'jose';
import type { Clock, JsonObject, SigningKeyRecord, Store } from '../store/index.js';

export const SIGNING_ALG = 'RS256';
/** JWKS `Cache-Control: max-age` (seconds): tools refetch at least this often. */
export const JWKS_MAX_AGE_SECONDS = 300;
/** Launch, provision and locations tokens live 300 s (decision GAP-32). */
export const SIGNED_TOKEN_TTL_SECONDS = 300;

export interface PublicJwk {
  kty: 'RSA';
  kid: string;
  alg: 'RS256';
  use: 'sig';
  n: string;
  e: string;
}

export interface Jwks {
  keys: PublicJwk[];
}

export interface SignerOptions {
  clock?: Clock;
  /** How long a new key is published before it signs. Default: twice the JWKS cache lifetime. */
  publishDelayMs?: number;
  /** The longest lifetime of any token this signer signs; an old key stays published this long after retiring. */
  maxTokenLifetimeMs?: number;
  /** Margin for clocks of tools that run a little behind. */
  clockSkewMs?: number;
}

type KeyLike = Awaited<ReturnType<typeof importJWK>>;

export async function generateSigningKey(): Promise<{ privateJwk: JsonObject; publicJwk: JsonObject }> {
  const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALG, { modulusLength: 2048, extractable: true });
  const privateJwk = (await exportJWK(privateKey)) as unknown as JsonObject;
  const publicJwk = (await exportJWK(publicKey)) as unknown as JsonObject;
  return { privateJwk, publicJwk };
}

function toPublicJwk(record: SigningKeyRecord): PublicJwk {
  const n = record.publicJwk['n'];
  const e = record.publicJwk['e'];
  if (typeof n !== 'string' || typeof e !== 'string') throw new Error(`signing key ${record.kid} has no RSA public part`);
  return { kty: 'RSA', kid: record.kid, alg: 'RS256', use: 'sig', n, e };
}

export class Signer {
  private readonly clock: Clock;
  readonly publishDelayMs: number;
  readonly maxTokenLifetimeMs: number;
  readonly clockSkewMs: number;
  private readonly privateKeys = new Map<string, KeyLike>();

  constructor(
    private readonly store: Pick<Store, 'signingKeys'>,
    options: SignerOptions = {},
  ) {
    this.clock = options.clock ?? { nowMs: () => Date.now() };
    this.publishDelayMs = options.publishDelayMs ?? 2 * JWKS_MAX_AGE_SECONDS * 1000;
    this.maxTokenLifetimeMs = options.maxTokenLifetimeMs ?? SIGNED_TOKEN_TTL_SECONDS * 1000;
    this.clockSkewMs = options.clockSkewMs ?? 60_000;
  }

  /** Makes sure a key signs now; on a fresh installation creates the first one (published and signing at once). */
  async init(): Promise<SigningKeyRecord> {
    const current = await this.store.signingKeys.currentSigner();
    if (current) return current;
    return this.store.signingKeys.ensureSigner(await generateSigningKey());
  }

  /** Signs `claims` with the current key; the header carries `kid` and `typ` (NS-12). */
  async sign(claims: Record<string, unknown>, options: { typ?: string } = {}): Promise<string> {
    const record = (await this.store.signingKeys.currentSigner()) ?? (await this.init());
    const key = await this.privateKey(record);
    return new SignJWT(claims as JWTPayload)
      .setProtectedHeader({ alg: SIGNING_ALG, kid: record.kid, typ: options.typ ?? 'JWT' })
      .sign(key);
  }

  async jwks(): Promise<Jwks> {
    const published = await this.store.signingKeys.listPublished();
    return { keys: published.map(toPublicJwk) };
  }

  /**
   * Publishes a new key now; it signs from `now + publishDelayMs`. Every older key stops signing then
   * and stays published until the last token it can have signed has expired.
   */
  async rotate(): Promise<{ kid: string; signFrom: number; publishOldUntil: number }> {
    const now = this.clock.nowMs();
    const signFrom = now + this.publishDelayMs;
    const publishOldUntil = signFrom + this.maxTokenLifetimeMs + this.clockSkewMs;
    const record = await this.store.signingKeys.rotate(await generateSigningKey(), { signFrom, publishOldUntil });
    return { kid: record.kid, signFrom, publishOldUntil };
  }

  private async privateKey(record: SigningKeyRecord): Promise<KeyLike> {
    const cached = this.privateKeys.get(record.kid);
    if (cached) return cached;
    const key = await importJWK(record.privateJwk as Parameters<typeof importJWK>[0], SIGNING_ALG);
    this.privateKeys.set(record.kid, key);
    return key;
  }
}
