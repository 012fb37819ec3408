// Verifying the `launch_data` JWT of the three requests the service sends a tool. RS256 only,
// with the key named by `kid` from the service's JWKS (decisions NS-12, NS-13, L-06); `iss` is the
// service's origin (GAP-33); `aud` and `app` are the tool's own ID and `jti` is accepted once
// (GAP-32). Each request's token is also checked to be of its kind, so that a provision token
// cannot be played against the launch endpoint.

import { createRemoteJWKSet, customFetch, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import type { JWTPayload, JWTVerifyGetKey } from 'jose';
import type { ContractComponents, ContractVersion } from '../client-types.js';
import { contractVersions } from '../../generated/index.js';
import { MemoryReplayCache, type ReplayStore } from './replay-cache.js';

const CONTRACT_VERSIONS: readonly ContractVersion[] = contractVersions;

/** Contracts in which the service sends provision and locations requests (2026-08-19 has neither). */
export type ProvisioningVersion = '2026-09-21' | '2026-08-25';
const PROVISIONING_VERSIONS: readonly ContractVersion[] = ['2026-09-21', '2026-08-25'];

type Schemas<V extends ContractVersion> = ContractComponents[V]['schemas'];
export type LaunchClaims<V extends ContractVersion = '2026-09-21'> = Schemas<V>['LaunchClaims'];
export type ProvisionClaims<V extends ProvisioningVersion = '2026-09-21'> = Schemas<V>['ProvisionClaims'];
export type LocationsClaims<V extends ProvisioningVersion = '2026-09-21'> = Schemas<V>['LocationsClaims'];

export type TokenKind = 'launch' | 'provision' | 'locations';

export type TokenErrorCode =
  /** No `launch_data` at all. */
  | 'missing_token'
  /** Not a compact JWS, or a header without `kid`, or a `typ` other than JWT. */
  | 'malformed'
  /** Any algorithm but RS256 (`none` and HS256 included). */
  | 'algorithm_not_allowed'
  /** No key of the JWKS has the token's `kid`, even after fetching the JWKS again. */
  | 'unknown_key'
  | 'invalid_signature'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'wrong_app'
  | 'expired'
  /** `iat` or `nbf` in the future. */
  | 'not_yet_valid'
  | 'missing_claim'
  /** A valid token of another request (a provision token on the launch endpoint). */
  | 'wrong_token_kind'
  | 'replayed'
  /** The JWKS could not be fetched or read: the token could not be checked at all. */
  | 'jwks_unavailable';

/** Why a token was refused. `status` is what an endpoint should answer: 401, or 503 when the keys were unreachable. */
export class TokenError extends Error {
  override readonly name = 'TokenError';
  readonly status: 401 | 503;
  constructor(
    readonly code: TokenErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.status = code === 'jwks_unavailable' ? 503 : 401;
  }
}

/** openapi-fetch's style: `claims` on success, `error` otherwise. */
export type VerifyResult<C> = { claims: C; error?: never } | { claims?: never; error: TokenError };

export interface JwksOptions {
  /** After a fetch, how long an unknown `kid` waits before it may trigger another (jose's default 30 s). */
  cooldownMs?: number;
  /** How long fetched keys are used before they are fetched again (jose's default 10 minutes). */
  cacheMaxAgeMs?: number;
  /** Abort a JWKS fetch after this long (jose's default 5 s). */
  timeoutMs?: number;
}

export interface TokenVerifierOptions<V extends ContractVersion> {
  /** The service's origin, the expected `iss` (for example `https://tis.example.edu`). */
  issuer: string;
  /** The tool's ID, the expected `aud` and `app`. */
  appId: string;
  /** Defaults to `{issuer}/.well-known/jwks.json` (decision L-06). */
  jwksUrl?: string;
  /** The contract the tool is pinned to, which shapes the claims; the current one by default. */
  contractVersion?: V;
  /** Where seen `jti`s are kept; an in-memory LRU by default. Use a shared store across instances. */
  replayCache?: ReplayStore;
  /** Seconds of clock skew allowed on `exp`, `nbf` and `iat` (default 5). */
  clockToleranceSeconds?: number;
  jwks?: JwksOptions;
  /** Replaces `globalThis.fetch` for the JWKS. */
  fetch?: typeof globalThis.fetch;
}

interface VerifierBase<V extends ContractVersion> {
  readonly contractVersion: V;
  readonly issuer: string;
  readonly appId: string;
  /** Verifies the `launch_data` of a launch (the callback URL). */
  verifyLaunch(token: unknown): Promise<VerifyResult<LaunchClaims<V>>>;
}

interface ProvisioningVerifier<V extends ProvisioningVersion> extends VerifierBase<V> {
  /** Verifies the `launch_data` of a provision request. */
  verifyProvision(token: unknown): Promise<VerifyResult<ProvisionClaims<V>>>;
  /** Verifies the `launch_data` of a locations request. */
  verifyLocations(token: unknown): Promise<VerifyResult<LocationsClaims<V>>>;
}

/** For 2026-08-19 only `verifyLaunch`: that contract sends no provision or locations requests. */
export type TokenVerifier<V extends ContractVersion = '2026-09-21'> = V extends ProvisioningVersion
  ? ProvisioningVerifier<V>
  : VerifierBase<V>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What tells the three tokens apart, beyond their signature: the claims only one kind carries. */
function kindProblem(kind: TokenKind, claims: JWTPayload): string | null {
  const has = (key: string) => claims[key] !== undefined;
  switch (kind) {
    case 'launch':
      return typeof claims.launch_id === 'string' && isRecord(claims.user) && isRecord(claims.location)
        ? null
        : 'not a launch token: it lacks launch_id, user or location';
    case 'provision':
      return !has('user') && !has('launch_id') && isRecord(claims.provision) && isRecord(claims.storage)
        ? null
        : 'not a provision token: it lacks provision or storage, or carries user or launch_id';
    case 'locations':
      return !has('launch_id') && !has('storage') && isRecord(claims.user) && isRecord(claims.api) && claims.api.token === null
        ? null
        : 'not a locations token: it carries launch_id, storage or an api.token, or lacks user';
  }
}

function fromJose(error: unknown): TokenError {
  if (error instanceof TokenError) return error;
  if (error instanceof errors.JWTExpired) return new TokenError('expired', 'the token has expired', { cause: error });
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.reason === 'missing') return new TokenError('missing_claim', `the token has no "${error.claim}" claim`, { cause: error });
    switch (error.claim) {
      case 'iss':
        return new TokenError('wrong_issuer', 'the token was not issued by the expected service', { cause: error });
      case 'aud':
        return new TokenError('wrong_audience', 'the token is not addressed to this tool', { cause: error });
      case 'nbf':
      case 'iat':
        return new TokenError('not_yet_valid', `the token's "${error.claim}" claim is in the future`, { cause: error });
      default:
        return new TokenError('malformed', `the token's "${error.claim}" claim is invalid`, { cause: error });
    }
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return new TokenError('algorithm_not_allowed', 'only RS256 tokens are accepted', { cause: error });
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) {
    return new TokenError('unknown_key', "no key of the service's JWKS has the token's kid", { cause: error });
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return new TokenError('invalid_signature', "the token's signature does not verify", { cause: error });
  }
  if (error instanceof errors.JOSEError || error instanceof TypeError) {
    return new TokenError('malformed', `the token is malformed: ${error.message}`, { cause: error });
  }
  throw error;
}

class JwksUnavailable extends Error {}

/**
 * A verifier for the tokens one tool receives from one service.
 *
 * ```ts
 * const verifier = createTokenVerifier({ issuer: 'https://tis.example.edu', appId: 'app_3f9c2a7d1e5b8h4j6k0m' });
 * const { claims, error } = await verifier.verifyLaunch(req.body.launch_data);
 * ```
 */
export function createTokenVerifier<V extends ContractVersion = '2026-09-21'>(options: TokenVerifierOptions<V>): TokenVerifier<V> {
  const contractVersion = (options.contractVersion ?? '2026-09-21') as V;
  if (!CONTRACT_VERSIONS.includes(contractVersion)) {
    throw new RangeError(`unknown contract version "${String(contractVersion)}"; served versions: ${CONTRACT_VERSIONS.join(', ')}`);
  }
  if (typeof options.issuer !== 'string' || !/^https?:\/\//.test(options.issuer)) {
    throw new TypeError("issuer must be the service's origin, for example https://tis.example.edu");
  }
  if (typeof options.appId !== 'string' || options.appId === '') throw new TypeError("appId must be the tool's ID");
  const issuer = options.issuer.replace(/\/+$/, '');
  const appId = options.appId;
  const clockTolerance = options.clockToleranceSeconds ?? 5;
  const replayCache = options.replayCache ?? new MemoryReplayCache();
  const jwksUrl = new URL(options.jwksUrl ?? `${issuer}/.well-known/jwks.json`);

  const remote = createRemoteJWKSet(jwksUrl, {
    ...(options.jwks?.cooldownMs !== undefined ? { cooldownDuration: options.jwks.cooldownMs } : {}),
    ...(options.jwks?.cacheMaxAgeMs !== undefined ? { cacheMaxAge: options.jwks.cacheMaxAgeMs } : {}),
    ...(options.jwks?.timeoutMs !== undefined ? { timeoutDuration: options.jwks.timeoutMs } : {}),
    ...(options.fetch ? { [customFetch]: options.fetch } : {}),
  });
  // Everything but "no such kid" that goes wrong while getting a key is the JWKS's fault, not the token's.
  const getKey: JWTVerifyGetKey = async (header, token) => {
    try {
      return await remote(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) throw error;
      throw new JwksUnavailable(error instanceof Error ? error.message : String(error), { cause: error });
    }
  };

  async function verify(kind: TokenKind, token: unknown): Promise<VerifyResult<never>> {
    if (typeof token !== 'string' || token === '') {
      return { error: new TokenError('missing_token', 'no launch_data token was sent') };
    }
    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch (error) {
      return { error: new TokenError('malformed', 'launch_data is not a signed JWT', { cause: error }) };
    }
    // Refused before any key is looked up, so `none` or an HMAC token never costs a JWKS fetch.
    if (header.alg !== 'RS256') {
      return { error: new TokenError('algorithm_not_allowed', `only RS256 tokens are accepted, not ${String(header.alg)}`) };
    }
    if (typeof header.kid !== 'string' || header.kid === '') {
      return { error: new TokenError('malformed', 'the token header has no kid') };
    }
    if (header.typ !== undefined && header.typ.toUpperCase() !== 'JWT') {
      return { error: new TokenError('malformed', `the token's typ is ${header.typ}, not JWT`) };
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, getKey, {
        algorithms: ['RS256'],
        issuer,
        audience: appId,
        clockTolerance,
        requiredClaims: ['iss', 'aud', 'exp', 'iat', 'jti'],
      }));
    } catch (error) {
      if (error instanceof JwksUnavailable) {
        return { error: new TokenError('jwks_unavailable', `the service's keys could not be fetched from ${jwksUrl.href}: ${error.message}`, { cause: error.cause }) };
      }
      return { error: fromJose(error) };
    }
    if (payload.app !== appId) return { error: new TokenError('wrong_app', 'the token is for another tool') };
    const now = Date.now() / 1000;
    if (typeof payload.iat === 'number' && payload.iat > now + clockTolerance) {
      return { error: new TokenError('not_yet_valid', 'the token\'s "iat" claim is in the future') };
    }
    if (typeof payload.jti !== 'string' || payload.jti === '') return { error: new TokenError('missing_claim', 'the token has no "jti" claim') };
    const wrongKind = kindProblem(kind, payload);
    if (wrongKind !== null) return { error: new TokenError('wrong_token_kind', wrongKind) };
    // Last: only a token that is otherwise good uses up its jti (and a slot in the cache).
    if (!(await replayCache.remember(payload.jti, payload.exp as number))) {
      return { error: new TokenError('replayed', 'this token has already been used') };
    }
    return { claims: payload as never };
  }

  const base = {
    contractVersion,
    issuer,
    appId,
    verifyLaunch: (token: unknown) => verify('launch', token),
  };
  const verifier = PROVISIONING_VERSIONS.includes(contractVersion)
    ? { ...base, verifyProvision: (token: unknown) => verify('provision', token), verifyLocations: (token: unknown) => verify('locations', token) }
    : base;
  return Object.freeze(verifier) as unknown as TokenVerifier<V>;
}
