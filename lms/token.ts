/**
 * The token endpoint: OAuth 2.0 client credentials (RFC 6749 §4.4) with a `private_key_jwt` client
 * assertion (RFC 7523), verified against the tool's own JWKS from its registration. The scopes granted
 * are those the registration holds now (a registration denied the line-item scope gets `invalid_scope`
 * for it, decision S-23); tokens live `access_token_ttl_seconds` (decision LTI-35).
 */
import { hash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import type { JSONWebKeySet } from 'jose';
import { bearer, LmsError } from './http.js';
import type { Platform } from './platform.js';
import { anyDeploymentGrantsLineItems, longestOwnAccessLifetime } from './deployment-settings.js';
import { ALL_AGS_SCOPES, askedScopes, grantedScopes, PATHS, settingsOf, urlOf } from './platform.js';
import type { RegistrationRow } from './store.js';
import { registrationOf } from './store.js';

export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const SKEW_SECONDS = 30;
const MAX_ASSERTION_LIFETIME_SECONDS = 300;

export interface TokenAnswer {
  status: number;
  body: Record<string, unknown>;
}

function oauthError(status: 400 | 401, error: string, description: string): TokenAnswer {
  return { status, body: { error, error_description: description } };
}

/** Tool JWKS by URL, refetched once when a `kid` is not in the cached copy. */
const jwksCache = new Map<string, JSONWebKeySet>();

async function fetchJwks(platform: Platform, url: string): Promise<JSONWebKeySet> {
  const response = await platform.fetch(url, { headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(5000) });
  if (!response.ok) throw new Error(`the tool's JWKS answered ${response.status}`);
  const body = (await response.json()) as unknown;
  if (typeof body !== 'object' || body === null || !Array.isArray((body as { keys?: unknown }).keys)) throw new Error("the tool's JWKS has no keys");
  jwksCache.set(url, body as JSONWebKeySet);
  return body as JSONWebKeySet;
}

/** The tool's keys for a token signed with `kid`; fetched when unknown (once per request). */
export async function toolKeys(platform: Platform, registration: RegistrationRow, kid: string | undefined): Promise<JSONWebKeySet> {
  const cached = jwksCache.get(registration.jwks_uri);
  if (cached && (kid === undefined || cached.keys.some((k) => k.kid === kid))) return cached;
  return fetchJwks(platform, registration.jwks_uri);
}

/**
 * The key set of a JWKS copy, made once per copy: jose imports each key at its first use in a set and
 * keeps it there, so a set made per token request imported the tool's RSA key every time (PERF-115). A
 * JWKS fetched again is a new copy, with a set of its own.
 */
const keySets = new WeakMap<JSONWebKeySet, ReturnType<typeof createLocalJWKSet>>();

export function keySetOf(keys: JSONWebKeySet): ReturnType<typeof createLocalJWKSet> {
  let set = keySets.get(keys);
  if (set === undefined) {
    set = createLocalJWKSet(keys);
    keySets.set(keys, set);
  }
  return set;
}

function refusal(err: unknown, tokenUrl: string): string {
  if (err instanceof joseErrors.JWTExpired) return 'client assertion has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return `client assertion aud must be ${tokenUrl}`;
    if (err.claim === 'iss' || err.claim === 'sub') return 'client assertion iss and sub must both be the client ID';
    if (err.reason === 'missing') return `client assertion has no ${err.claim} claim`;
    return `client assertion ${err.claim} claim is invalid`;
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey) return "client assertion is signed with a key the tool's JWKS does not publish";
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'client assertion must be signed with RS256';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'client assertion signature does not verify';
  return `client assertion could not be verified: ${err instanceof Error ? err.message : 'unknown error'}`;
}

export async function issueToken(platform: Platform, form: Record<string, string>): Promise<TokenAnswer> {
  const grantType = form['grant_type'];
  if (!grantType) return oauthError(400, 'invalid_request', 'grant_type is required');
  if (grantType !== 'client_credentials') return oauthError(400, 'unsupported_grant_type', 'only client_credentials is supported');
  if (form['client_assertion_type'] !== JWT_BEARER) return oauthError(400, 'invalid_request', `client_assertion_type must be ${JWT_BEARER}`);
  const assertion = form['client_assertion'];
  if (!assertion) return oauthError(400, 'invalid_request', 'client_assertion is required');
  const scopeRaw = form['scope'];
  if (!scopeRaw || scopeRaw.trim() === '') return oauthError(400, 'invalid_request', 'scope is required');

  let clientId: unknown;
  let kid: string | undefined;
  try {
    clientId = decodeJwt(assertion).iss;
    kid = decodeProtectedHeader(assertion).kid;
  } catch {
    return oauthError(401, 'invalid_client', 'client_assertion is not a JWT');
  }
  const registration = typeof clientId === 'string' ? await registrationOf(platform.db, clientId) : null;
  if (!registration) return oauthError(401, 'invalid_client', 'client assertion iss is not a registered client');

  const tokenUrl = urlOf(platform, PATHS.token);
  const nowS = Math.floor(platform.clock.nowMs() / 1000);
  let payload: { iat?: number; exp?: number; jti?: string };
  try {
    const keys = await toolKeys(platform, registration, kid);
    const verified = await jwtVerify(assertion, keySetOf(keys), {
      algorithms: ['RS256'],
      issuer: registration.client_id,
      subject: registration.client_id,
      audience: tokenUrl,
      requiredClaims: ['iat', 'exp', 'jti', 'sub'],
      clockTolerance: SKEW_SECONDS,
      currentDate: new Date(nowS * 1000),
    });
    payload = verified.payload;
  } catch (err) {
    return oauthError(401, 'invalid_client', refusal(err, tokenUrl));
  }
  const { iat, exp, jti } = payload;
  if (typeof iat !== 'number' || typeof exp !== 'number' || typeof jti !== 'string' || jti === '') {
    return oauthError(401, 'invalid_client', 'client assertion needs iat, exp and jti');
  }
  if (exp - iat > MAX_ASSERTION_LIFETIME_SECONDS) {
    return oauthError(401, 'invalid_client', `client assertion may live at most ${MAX_ASSERTION_LIFETIME_SECONDS} seconds`);
  }
  if (iat > nowS + SKEW_SECONDS) return oauthError(401, 'invalid_client', 'client assertion is issued in the future');
  await platform.db.run('DELETE FROM lms_used_assertions WHERE expires < ?', [platform.clock.nowMs()]);
  // Single use across processes: of two requests with one jti, one inserts it and the other finds it there.
  const used = await platform.db.run('INSERT INTO lms_used_assertions (client_id, jti, expires) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', [
    registration.client_id,
    jti,
    (exp + SKEW_SECONDS) * 1000,
  ]);
  if (used.changes !== 1) return oauthError(401, 'invalid_client', 'client assertion jti was used before');

  const scopes = [...new Set(scopeRaw.split(/\s+/).filter(Boolean))];
  const unknown = scopes.find((s) => !ALL_AGS_SCOPES.includes(s));
  if (unknown) return oauthError(400, 'invalid_scope', `unknown scope ${unknown}`);
  // The request names no deployment: a line-item scope one of the client's deployments grants of its own is
  // granted here, and each deployment's rule applies where the token is used (decision LTI-72).
  const granted = (await anyDeploymentGrantsLineItems(platform.db, registration.client_id)) ? askedScopes(registration) : grantedScopes(registration);
  const withheld = scopes.find((s) => !granted.includes(s));
  if (withheld) return oauthError(400, 'invalid_scope', `the registration does not grant ${withheld}`);

  const ttl = (await settingsOf(platform)).access_token_ttl_seconds;
  // Kept as long as the longest lifetime any of its deployments gives it; each course's deployment counts its own from `issued`.
  const kept = Math.max(ttl, (await longestOwnAccessLifetime(platform.db, registration.client_id)) ?? 0);
  const token = randomBytes(32).toString('base64url');
  const issued = platform.clock.nowMs();
  await platform.db.run('DELETE FROM lms_access_tokens WHERE expires < ?', [issued - 86_400_000]);
  await platform.db.run('INSERT INTO lms_access_tokens (token_hash, client_id, scopes, expires, issued) VALUES (?, ?, ?, ?, ?)', [
    hashOf(token),
    registration.client_id,
    JSON.stringify(scopes),
    issued + kept * 1000,
    issued,
  ]);
  return { status: 200, body: { access_token: token, token_type: 'Bearer', expires_in: ttl, scope: scopes.join(' ') } };
}

/** A bearer token's digest, as stored: Node's one-shot form, no Hash object per request (PERF-112). */
export function hashOf(token: string): string {
  return hash('sha256', token, 'hex');
}

/** At most this many parsed scope lists are kept, then the map starts over. */
const SCOPE_LISTS_KEPT = 1024;

export interface AccessToken {
  clientId: string;
  scopes: readonly string[];
  /** When it was issued (ms); null for a token of a store from before `issued` was kept. */
  issuedMs: number | null;
}

/** An access token's row as stored (`lms_access_tokens`), without its digest. */
export interface AccessTokenRow {
  client_id: string;
  scopes: string;
  expires: number;
  issued: number | null;
}

function challenge(error?: string, scope?: string): Record<string, string> {
  const parts = ['Bearer realm="lms"'];
  if (error) parts.push(`error="${error}"`);
  if (scope) parts.push(`scope="${scope}"`);
  return { 'WWW-Authenticate': parts.join(', ') };
}

/** The bearer token of an AGS request, or 401 (RFC 6750 §3). */
export function bearerOf(req: IncomingMessage): string {
  const token = bearer(req);
  if (!token) throw new LmsError(401, 'invalid_token', 'missing bearer token', challenge());
  return token;
}

/** Scope lists as stored, parsed once per text: a token's list is the same text on every request. */
const scopeLists = new Map<string, readonly string[]>();

function scopesFrom(raw: string): readonly string[] {
  let scopes = scopeLists.get(raw);
  if (scopes === undefined) {
    scopes = Object.freeze(JSON.parse(raw) as string[]);
    if (scopeLists.size >= SCOPE_LISTS_KEPT) scopeLists.clear();
    scopeLists.set(raw, scopes);
  }
  return scopes;
}

/** The access token a row (or its absence) says, or 401. */
export function accessTokenFrom(row: AccessTokenRow | undefined, nowMs: number): AccessToken {
  if (!row) throw new LmsError(401, 'invalid_token', 'invalid bearer token', challenge('invalid_token'));
  if (row.expires <= nowMs) throw expiredToken();
  return { clientId: row.client_id, scopes: scopesFrom(row.scopes), issuedMs: row.issued };
}

export function expiredToken(): LmsError {
  return new LmsError(401, 'invalid_token', 'expired bearer token', challenge('invalid_token'));
}

export function requireScope(token: AccessToken, ...anyOf: string[]): void {
  if (anyOf.some((s) => token.scopes.includes(s))) return;
  throw new LmsError(403, 'insufficient_scope', `the access token lacks the scope ${anyOf[0] ?? ''}`, challenge('insufficient_scope', anyOf.join(' ')));
}
