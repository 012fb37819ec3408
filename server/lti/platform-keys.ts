/**
 * The LMSes' signing keys (decision LTI-09): each registration's JWKS, cached per `kid` for ten minutes.
 * An unknown `kid` refetches the JWKS once; refetches of one JWKS are at most one per ten seconds, so a
 * stream of tokens with made-up `kid`s cannot make the service hammer an LMS. Keys without `alg` are
 * taken as RS256 (Brightspace publishes them so); keys for other algorithms are ignored.
 */
import { importJWK } from 'jose';
import type { JWK } from 'jose';
import type { LtiRegistrationRecord } from '../store/index.js';
import type { Clock } from '../store/index.js';
import type { LmsHttp } from './http.js';

export const JWKS_CACHE_MS = 10 * 60_000;
export const JWKS_REFETCH_MIN_INTERVAL_MS = 10_000;

type Key = Awaited<ReturnType<typeof importJWK>>;

interface CachedSet {
  keys: Map<string, Key>;
  fetchedAt: number;
}

export type KeyLookup = { ok: true; key: Key } | { ok: false; reason: string };

export class PlatformKeys {
  private readonly sets = new Map<string, CachedSet>();
  private readonly lastFetch = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<string | null>>();

  constructor(
    private readonly lms: LmsHttp,
    private readonly clock: Clock,
  ) {}

  async key(registration: LtiRegistrationRecord, kid: string): Promise<KeyLookup> {
    const cacheKey = `${registration.id}\n${registration.jwksUrl}`;
    const cached = this.sets.get(cacheKey);
    const now = this.clock.nowMs();
    if (cached && now - cached.fetchedAt < JWKS_CACHE_MS) {
      const key = cached.keys.get(kid);
      if (key) return { ok: true, key };
    }
    // Unknown kid or stale set: one refetch, unless one happened just now.
    const last = this.lastFetch.get(cacheKey) ?? -Infinity;
    if (now - last >= JWKS_REFETCH_MIN_INTERVAL_MS || !cached) {
      const failure = await this.refetch(cacheKey, registration);
      if (failure !== null && !cached) return { ok: false, reason: failure };
    }
    const key = this.sets.get(cacheKey)?.keys.get(kid);
    return key ? { ok: true, key } : { ok: false, reason: `kid ${kid} is not in the LMS's JWKS` };
  }

  private refetch(cacheKey: string, registration: LtiRegistrationRecord): Promise<string | null> {
    const running = this.inflight.get(cacheKey);
    if (running) return running;
    const job = (async (): Promise<string | null> => {
      this.lastFetch.set(cacheKey, this.clock.nowMs());
      const fetched = await this.lms.getJson(registration.jwksUrl, 'jwks_uri');
      if (!fetched.ok) return fetched.reason;
      const listed = Array.isArray(fetched.value['keys']) ? (fetched.value['keys'] as unknown[]) : [];
      const keys = new Map<string, Key>();
      for (const entry of listed) {
        if (typeof entry !== 'object' || entry === null) continue;
        const jwk = entry as JWK;
        if (typeof jwk.kid !== 'string' || jwk.kty !== 'RSA') continue;
        if (jwk.alg !== undefined && jwk.alg !== 'RS256') continue;
        if (jwk.use !== undefined && jwk.use !== 'sig') continue;
        try {
          keys.set(jwk.kid, await importJWK({ ...jwk, alg: 'RS256' }, 'RS256'));
        } catch {
          // A malformed key is skipped; the others still verify.
        }
      }
      this.sets.set(cacheKey, { keys, fetchedAt: this.clock.nowMs() });
      return null;
    })().finally(() => this.inflight.delete(cacheKey));
    this.inflight.set(cacheKey, job);
    return job;
  }
}
