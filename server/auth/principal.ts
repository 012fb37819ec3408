/**
 * Who is calling, resolved from `Authorization: Bearer` before anything else looks at the request
 * (decision GAP-23: 401 first). Handlers receive it already resolved and never parse credentials.
 */
import type { ApiTokenRecord, AppRecord } from '../store/index.js';

export type Principal =
  /** The tool's server, by its API key (only on the `/v1/contexts/...` score URL). */
  | { kind: 'apiKey'; app: AppRecord }
  /** A launch's `api.token`, acting as the launching user. */
  | { kind: 'session'; token: ApiTokenRecord }
  /** A provision request's `api.token`: only the levels (and parent rows) its request named. */
  | { kind: 'provision'; token: ApiTokenRecord }
  /** No credential: only the operations that need none (JWKS, upload target, signed downloads). */
  | { kind: 'none' };

export type PrincipalKind = Principal['kind'];

/** The tool the credential belongs to, or null for an anonymous caller. */
export function principalAppId(principal: Principal): string | null {
  switch (principal.kind) {
    case 'apiKey':
      return principal.app.id;
    case 'session':
    case 'provision':
      return principal.token.appId;
    case 'none':
      return null;
  }
}
