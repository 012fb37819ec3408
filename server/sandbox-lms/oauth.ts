/**
 * The Sandbox LMS token endpoint: OAuth 2.0 client credentials (RFC 6749 §4.4) authenticated by a JWT
 * client assertion (RFC 7523 §2.2), as LTI Advantage platforms run it. The assertion must verify against
 * the service's own JWKS (the service is every Sandbox school's only client), carry `iss` = `sub` = the
 * school's client ID, `aud` = this endpoint's URL, `iat`, an `exp` at most 300 s later and not past, and a
 * `jti` the client has not used before.
 */
import { createLocalJWKSet, decodeJwt, errors as joseErrors, jwtVerify } from 'jose';
import type { JSONWebKeySet } from 'jose';
import type { Clock, OrganizationRecord, Repositories, SandboxLmsTokenRecord } from '../store/index.js';
import { Problem } from '../http/problem.js';
import {
  AGS_SCOPES,
  MAX_ASSERTION_LIFETIME_SECONDS,
  SANDBOX_LMS_TOKEN_TTL_SECONDS,
  sandboxIssuer,
  sandboxTokenUrl,
} from './school.js';

export const JWT_BEARER_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope';

export interface OAuthErrorBody {
  error: OAuthErrorCode;
  error_description: string;
}

export interface AccessTokenBody {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}

export type TokenEndpointResult =
  | { status: 200; body: AccessTokenBody }
  | { status: 400 | 401; body: OAuthErrorBody };

export interface JwksSource {
  jwks(): Promise<JSONWebKeySet | { keys: readonly object[] }>;
}

export interface TokenEndpointDeps {
  repos: Pick<Repositories, 'organizations' | 'sandboxLms'>;
  keys: JwksSource;
  publicUrl: string;
  clock: Clock;
}

/** Scopes the Sandbox LMS knows; a school that withholds the line-item scope grants only the score scope. */
const KNOWN_SCOPES: readonly string[] = Object.values(AGS_SCOPES);
const LINE_ITEM_SCOPES: readonly string[] = [AGS_SCOPES.lineItem, AGS_SCOPES.lineItemReadonly, AGS_SCOPES.resultReadonly];

/** Clock skew allowed on `iat` and `exp`. */
const SKEW_SECONDS = 30;

function oauthError(status: 400 | 401, error: OAuthErrorCode, description: string): TokenEndpointResult {
  return { status, body: { error, error_description: description } };
}

function field(form: Record<string, unknown>, name: string): string | undefined {
  const value = form[name];
  if (Array.isArray(value)) return undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Why jose refused an assertion, in the words of the token endpoint's answer. */
function assertionRefusal(err: unknown, tokenUrl: string): string {
  if (err instanceof joseErrors.JWTExpired) return 'client assertion has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return `client assertion aud must be ${tokenUrl}`;
    if (err.claim === 'iss' || err.claim === 'sub') return 'client assertion iss and sub must both be the client ID';
    if (err.reason === 'missing') return `client assertion has no ${err.claim} claim`;
    return `client assertion ${err.claim} claim is invalid`;
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'client assertion is signed with a key the service does not publish';
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'client assertion must be signed with RS256';
  return 'client assertion signature does not verify';
}

/** Spent assertion IDs and long-expired tokens are dropped at most this often, by the token endpoint. */
const PURGE_INTERVAL_MS = 10 * 60_000;
let lastPurgeMs = 0;

async function purgeNowAndThen(deps: TokenEndpointDeps): Promise<void> {
  const now = deps.clock.nowMs();
  if (now - lastPurgeMs < PURGE_INTERVAL_MS) return;
  lastPurgeMs = now;
  await deps.repos.sandboxLms.purgeExpired(now);
}

export async function issueAccessToken(deps: TokenEndpointDeps, form: Record<string, unknown>): Promise<TokenEndpointResult> {
  const grantType = field(form, 'grant_type');
  if (!grantType) return oauthError(400, 'invalid_request', 'grant_type is required');
  if (grantType !== 'client_credentials') return oauthError(400, 'unsupported_grant_type', 'only client_credentials is supported');
  const assertionType = field(form, 'client_assertion_type');
  if (!assertionType) return oauthError(400, 'invalid_request', 'client_assertion_type is required');
  if (assertionType !== JWT_BEARER_ASSERTION_TYPE) {
    return oauthError(400, 'invalid_request', `client_assertion_type must be ${JWT_BEARER_ASSERTION_TYPE}`);
  }
  const assertion = field(form, 'client_assertion');
  if (!assertion) return oauthError(400, 'invalid_request', 'client_assertion is required');
  const scopeRaw = field(form, 'scope');
  if (!scopeRaw || scopeRaw.trim() === '') return oauthError(400, 'invalid_request', 'scope is required');

  // Client authentication first (RFC 6749 §5.2 answers invalid_client before looking at scopes).
  let unverifiedIss: unknown;
  try {
    unverifiedIss = decodeJwt(assertion).iss;
  } catch {
    return oauthError(401, 'invalid_client', 'client_assertion is not a JWT');
  }
  if (typeof unverifiedIss !== 'string' || unverifiedIss === '') {
    return oauthError(401, 'invalid_client', 'client assertion has no iss claim');
  }
  const school: OrganizationRecord | null = await deps.repos.organizations.find(
    sandboxIssuer(deps.publicUrl),
    unverifiedIss,
    unverifiedIss,
  );
  if (!school) return oauthError(401, 'invalid_client', `client ${unverifiedIss} is not a Sandbox school`);

  const tokenUrl = sandboxTokenUrl(deps.publicUrl);
  const nowSeconds = Math.floor(deps.clock.nowMs() / 1000);
  let payload: { iat?: number; exp?: number; jti?: string };
  try {
    const jwks = createLocalJWKSet((await deps.keys.jwks()) as JSONWebKeySet);
    const verified = await jwtVerify(assertion, jwks, {
      algorithms: ['RS256'],
      issuer: school.client,
      subject: school.client,
      audience: tokenUrl,
      requiredClaims: ['iat', 'exp', 'jti', 'sub'],
      clockTolerance: SKEW_SECONDS,
      currentDate: new Date(nowSeconds * 1000),
    });
    payload = verified.payload;
  } catch (err) {
    return oauthError(401, 'invalid_client', assertionRefusal(err, tokenUrl));
  }
  const { iat, exp, jti } = payload;
  if (typeof iat !== 'number' || typeof exp !== 'number' || typeof jti !== 'string' || jti === '') {
    return oauthError(401, 'invalid_client', 'client assertion needs iat, exp and jti');
  }
  if (exp - iat > MAX_ASSERTION_LIFETIME_SECONDS) {
    return oauthError(401, 'invalid_client', `client assertion may live at most ${MAX_ASSERTION_LIFETIME_SECONDS} seconds`);
  }
  if (iat > nowSeconds + SKEW_SECONDS) return oauthError(401, 'invalid_client', 'client assertion is issued in the future');
  if (!(await deps.repos.sandboxLms.useAssertion(school.client, jti, (exp + SKEW_SECONDS) * 1000))) {
    return oauthError(401, 'invalid_client', 'client assertion jti was used before');
  }

  const scopes = [...new Set(scopeRaw.split(/\s+/).filter(Boolean))];
  const unknown = scopes.find((s) => !KNOWN_SCOPES.includes(s));
  if (unknown) return oauthError(400, 'invalid_scope', `unknown scope ${unknown}`);
  if (!school.grantsLineItemScope) {
    const withheld = scopes.find((s) => LINE_ITEM_SCOPES.includes(s));
    if (withheld) return oauthError(400, 'invalid_scope', `the school does not grant ${withheld}`);
  }
  await purgeNowAndThen(deps);
  const issued = await deps.repos.sandboxLms.issueToken({
    organizationId: school.id,
    scopes,
    ttlSeconds: SANDBOX_LMS_TOKEN_TTL_SECONDS,
  });
  return {
    status: 200,
    body: { access_token: issued.token, token_type: 'Bearer', expires_in: SANDBOX_LMS_TOKEN_TTL_SECONDS, scope: scopes.join(' ') },
  };
}

/** `WWW-Authenticate` of the Sandbox LMS's 401s (RFC 6750 §3). */
function challenge(error?: string): Record<string, string> {
  return { 'WWW-Authenticate': error ? `Bearer realm="sandbox-lms", error="${error}"` : 'Bearer realm="sandbox-lms"' };
}

/** Resolves `Authorization: Bearer <access token>` on an AGS operation, or throws the 401. */
export async function authenticateLmsToken(
  repos: Pick<Repositories, 'sandboxLms'>,
  authorization: string | undefined,
): Promise<SandboxLmsTokenRecord> {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization ?? '');
  if (!match?.[1]) throw new Problem(401, 'missing_bearer_token', 'Missing bearer token', { headers: challenge() });
  const verification = await repos.sandboxLms.verifyToken(match[1]);
  if (verification.status === 'unknown') {
    throw new Problem(401, 'invalid_bearer_token', 'Invalid bearer token', { headers: challenge('invalid_token') });
  }
  if (verification.status === 'expired') {
    throw new Problem(401, 'expired_bearer_token', 'Expired bearer token', { headers: challenge('invalid_token') });
  }
  return verification.record;
}

export function requireScope(token: SandboxLmsTokenRecord, ...anyOf: string[]): void {
  if (anyOf.some((s) => token.scopes.includes(s))) return;
  throw new Problem(403, 'insufficient_scope', `the access token lacks the scope ${anyOf[0] ?? ''}`, {
    headers: { 'WWW-Authenticate': `Bearer realm="sandbox-lms", error="insufficient_scope", scope="${anyOf.join(' ')}"` },
  });
}
