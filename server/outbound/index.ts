/**
 * Outbound requests to tools: the HTTP client every server-to-server call goes through.
 *
 * `server/app.ts` builds one `ToolHttpClient` (the system resolver and `ALLOW_LOOPBACK_TOOLS` unless
 * `buildServices` is given others) and puts it in the service container as `outbound`.
 */
import type { ToolHttpClient } from './http.js';

declare module '../http/services.js' {
  interface Services {
    /** Calls tool endpoints under the endpoint URL rules (provision and locations requests). */
    outbound: ToolHttpClient;
  }
}

export * from './http.js';

/** Largest locations response read (decision S-19): generous for thousands of entries, small for a server. */
export const LOCATIONS_MAX_BODY_BYTES = 1_048_576;
/** A provision answer's body is never used; reading a little keeps the connection's end clean. */
export const PROVISION_MAX_BODY_BYTES = 65_536;
