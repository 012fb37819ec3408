/** The archived contracts this service still serves (decision NS-18), and what their handlers share. */
import { MESSAGES } from '../../auth/credentials.js';
import type { Principal } from '../../auth/principal.js';
import { Problem } from '../../http/problem.js';
import type { AppRecord } from '../../store/index.js';

export type ArchivedVersion = '2026-08-25' | '2026-08-19';

/** The calling tool of an API-key operation; the pipeline has resolved the key (401 otherwise). */
export function callingApp(principal: Principal): AppRecord {
  // Every archived management and grade operation declares `apiKey` alone, so the credential step let
  // nothing else through; this keeps the handlers honest if a spec ever changes that.
  if (principal.kind !== 'apiKey') {
    throw new Problem(401, 'invalid_api_key', MESSAGES.invalidApiKey, { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } });
  }
  return principal.app;
}
