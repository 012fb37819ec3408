/**
 * The contract pinned for the calling tool (decision NS-18), read from the request's credential before
 * any contract's pipeline runs, with one indexed lookup and without judging the credential: that is the
 * served contract's credential step, which then answers any 401 in that contract's words. So a key
 * rotated under 2026-08-25 still reaches 2026-08-25 and its `Invalid API key` (S-37).
 *
 * An API key names its tool in its own text (`ltiaas_<app_id>_<secret>`); an `api.token` is looked up by
 * its digest, and an expired or revoked one still names its tool.
 */
import { bearerCredential } from '../auth/credentials.js';
import type { CredentialStore } from '../auth/credentials.js';
import { API_KEY_PREFIX, API_TOKEN_PREFIX, parseApiKey } from '../store/ids.js';

export interface CredentialPin {
  /** A bearer credential was sent (well-formed or not). */
  credential: boolean;
  /** The pin of the tool it names, or null when it names none. */
  version: string | null;
}

/** `store` is the request's credential store (`CredentialFacts.requestStore`), shared with the credential step. */
export async function pinnedContract(store: CredentialStore, authorization: string | string[] | undefined): Promise<CredentialPin> {
  const credential = bearerCredential(authorization);
  if (credential === null) return { credential: false, version: null };
  let appId: string | null = null;
  if (credential.startsWith(API_KEY_PREFIX)) {
    appId = parseApiKey(credential)?.appId ?? null;
  } else if (credential.startsWith(API_TOKEN_PREFIX)) {
    const verified = await store.apiTokens.verify(credential);
    appId = verified.status === 'unknown' ? null : verified.record.appId;
  }
  const app = appId === null ? null : await store.apps.get(appId);
  return { credential: true, version: app?.contractVersion ?? null };
}
