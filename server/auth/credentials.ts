/**
 * Turns `Authorization: Bearer ...` into a Principal, per operation, with the 401 messages of decision
 * NS-21. Runs before anything else looks at the request (GAP-23), so a caller without a valid credential
 * learns nothing about the URL or the body.
 */
import type { Store } from '../store/index.js';
import { API_KEY_PREFIX } from '../store/ids.js';
import { Problem } from '../http/problem.js';
import type { Principal } from './principal.js';

export type SecurityScheme = 'apiKey' | 'apiToken';

/** What an operation accepts, read from its `security` in the generated operations table. */
export interface CredentialRule {
  /** Alternatives as in the spec: `[]` means no credential at all. */
  security: ReadonlyArray<ReadonlyArray<string>>;
  /** Score URLs name the API key in their "missing" message (NS-21). */
  scoreUrl: boolean;
}

export const MESSAGES = {
  missingApiKey: 'Missing Bearer API key',
  missingToken: 'Missing bearer token',
  invalidApiKey: 'Invalid API key',
  invalidToken: 'Invalid bearer token',
  expiredToken: 'Expired bearer token',
  apiKeyNotAccepted: 'API key is not accepted on this URL; use the api.token of a launch',
  suspended: (appId: string) => `tool ${appId} is suspended`,
} as const;

function unauthorized(code: string, detail: string, error?: 'invalid_token'): Problem {
  // RFC 6750: a 401 names the scheme it wants; `error` tells a client its token, not the request, is at fault.
  const challenge = error ? `Bearer error="${error}"` : 'Bearer';
  return new Problem(401, code, detail, { headers: { 'WWW-Authenticate': challenge } });
}

/** What the credential step reads from the store. */
export type CredentialStore = Pick<Store, 'apps' | 'apiTokens'>;

/** The bearer credential, or null when there is none (no header, another scheme, or an empty value). */
export function bearerCredential(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (typeof value !== 'string') return null;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(value);
  return match?.[1] ?? null;
}

function accepts(rule: CredentialRule, scheme: SecurityScheme): boolean {
  return rule.security.some((alternative) => alternative.includes(scheme));
}

/**
 * Resolves the principal or throws the 401 `Problem`. Operations that need no credential get
 * `{kind: 'none'}` whatever the caller sends: their signature is their credential (L-05).
 */
export async function resolvePrincipal(
  store: CredentialStore,
  rule: CredentialRule,
  authorization: string | string[] | undefined,
): Promise<Principal> {
  if (rule.security.length === 0 || rule.security.some((alternative) => alternative.length === 0)) {
    return { kind: 'none' };
  }
  const credential = bearerCredential(authorization);
  if (credential === null) {
    // Score URLs, and operations that take only the API key (the archived grades and management API, whose
    // text says `Missing Bearer API key`), name the API key; the rest name the bearer token.
    throw rule.scoreUrl || !accepts(rule, 'apiToken')
      ? unauthorized('missing_api_key', MESSAGES.missingApiKey)
      : unauthorized('missing_bearer_token', MESSAGES.missingToken);
  }
  if (credential.startsWith(API_KEY_PREFIX)) {
    if (!accepts(rule, 'apiKey')) throw unauthorized('api_key_not_accepted', MESSAGES.apiKeyNotAccepted);
    const app = await store.apps.verifyApiKey(credential);
    if (!app) throw unauthorized('invalid_api_key', MESSAGES.invalidApiKey, 'invalid_token');
    if (app.status === 'suspended') throw unauthorized('tool_suspended', MESSAGES.suspended(app.id), 'invalid_token');
    return { kind: 'apiKey', app };
  }
  if (!accepts(rule, 'apiToken')) {
    // Only reachable for an API-key-only operation, which this contract does not have; say what is wanted.
    throw unauthorized('invalid_api_key', MESSAGES.invalidApiKey, 'invalid_token');
  }
  const verified = await store.apiTokens.verify(credential);
  if (verified.status === 'unknown' || verified.status === 'revoked') {
    throw unauthorized('invalid_bearer_token', MESSAGES.invalidToken, 'invalid_token');
  }
  if (verified.status === 'expired') throw unauthorized('expired_bearer_token', MESSAGES.expiredToken, 'invalid_token');
  const app = await store.apps.get(verified.record.appId);
  if (!app) throw unauthorized('invalid_bearer_token', MESSAGES.invalidToken, 'invalid_token');
  if (app.status === 'suspended') throw unauthorized('tool_suspended', MESSAGES.suspended(app.id), 'invalid_token');
  return verified.record.kind === 'provision'
    ? { kind: 'provision', token: verified.record }
    : { kind: 'session', token: verified.record };
}
