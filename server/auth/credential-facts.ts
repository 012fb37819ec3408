/**
 * What a credential resolves to (an api.token's record, an API key's tool, a tool by id), kept across
 * requests for as long as the store's credential generation stays the same (decision PERF-20).
 *
 * The generation is one row (`credential_epoch`, migration 0100) that triggers change in the same
 * transaction as any change to a tool or an api.token: a rotated key, a suspension, a revoked token, a
 * settings change. Every authenticated request reads that row once (shared with the throttle's check,
 * PERF-21), and a generation other than the one the facts were read under drops them all. So a rotation or
 * suspension made through any instance is seen by every instance on its next request, exactly as when
 * each request read the rows themselves, at the cost of one row instead of three.
 *
 * Only positive answers are kept: an unknown credential is read again (it is a guess, throttled anyway),
 * and an api.token's expiry is judged at each use from its kept record. Credentials are kept by their
 * SHA-256 digest, never as written.
 */
import type { ApiTokenRecord, ApiTokenVerification, AppRecord, Clock, Store } from '../store/index.js';
import type { CredentialEpoch } from '../store/repos/credential-epoch.js';
import { sha256Hex } from '../store/ids.js';
import type { CredentialStore } from './credentials.js';

/** Past this many kept facts the process starts over (a bound on memory, not a policy). */
const MAX_FACTS = 20_000;

type FactsStore = Pick<Store, 'apps' | 'apiTokens' | 'credentialEpoch'>;

/** Per request, on `res.locals`: the one epoch read of that request. */
export interface EpochHolder {
  credentialEpoch?: Promise<CredentialEpoch>;
}

export class CredentialFacts {
  private generation: number | null = null;
  private readonly tokens = new Map<string, ApiTokenRecord>();
  private readonly apiKeys = new Map<string, AppRecord>();
  private readonly apps = new Map<string, AppRecord>();
  private inflight: Promise<CredentialEpoch> | null = null;
  private queued: Promise<CredentialEpoch> | null = null;

  constructor(
    private readonly store: FactsStore,
    private readonly clock: Clock,
  ) {}

  /**
   * The epoch as of a read that began after this request arrived, read at most once per request.
   * Requests that arrive while a read is in flight share the next one, so under load the row is read
   * about once per round trip rather than once per request.
   */
  epoch(holder: EpochHolder): Promise<CredentialEpoch> {
    holder.credentialEpoch ??= this.readEpoch().then((epoch) => {
      this.observe(epoch.generation);
      return epoch;
    });
    return holder.credentialEpoch;
  }

  private readEpoch(): Promise<CredentialEpoch> {
    if (this.queued) return this.queued;
    if (!this.inflight) {
      this.inflight = this.store.credentialEpoch.read().finally(() => {
        this.inflight = null;
      });
      return this.inflight;
    }
    // One in flight began before this request arrived: its answer may predate a change this request must see.
    this.queued = this.inflight
      .catch(() => undefined)
      .then(() => {
        this.queued = null;
        return this.readEpoch();
      });
    return this.queued;
  }

  private observe(generation: number): void {
    if (generation === this.generation) return;
    this.generation = generation;
    this.forget();
  }

  private forget(): void {
    this.tokens.clear();
    this.apiKeys.clear();
    this.apps.clear();
  }

  /** Keeps a fact read under `generation` only if that is still the generation the facts hold. */
  private keep<V>(map: Map<string, V>, key: string, value: V, generation: number): void {
    if (generation !== this.generation) return;
    if (this.tokens.size + this.apiKeys.size + this.apps.size >= MAX_FACTS) this.forget();
    map.set(key, value);
  }

  private verification(record: ApiTokenRecord): ApiTokenVerification {
    if (record.revokedAt !== null) return { status: 'revoked', record };
    if (record.expiresAt <= this.clock.nowMs()) return { status: 'expired', record };
    return { status: 'valid', record };
  }

  /**
   * The credential reads of one request, each made at most once and answered from the kept facts when the
   * request's epoch says they still hold. Every other method of the repositories is the store's own.
   */
  requestStore(holder: EpochHolder): CredentialStore {
    const tokens = new Map<string, Promise<ApiTokenVerification>>();
    const apps = new Map<string, Promise<AppRecord | null>>();
    const keys = new Map<string, Promise<AppRecord | null>>();
    const memo = <V>(cache: Map<string, Promise<V>>, key: string, read: () => Promise<V>): Promise<V> => {
      let value = cache.get(key);
      if (!value) {
        value = read();
        cache.set(key, value);
      }
      return value;
    };
    const store = this.store;
    return {
      apps: Object.assign(Object.create(store.apps) as CredentialStore['apps'], {
        get: (id: string) =>
          memo(apps, id, async () => {
            const { generation } = await this.epoch(holder);
            const kept = this.generation === generation ? this.apps.get(id) : undefined;
            if (kept) return kept;
            const app = await store.apps.get(id);
            if (app) this.keep(this.apps, id, freeze(app), generation);
            return app;
          }),
        verifyApiKey: (key: string) =>
          memo(keys, key, async () => {
            const digest = sha256Hex(key);
            const { generation } = await this.epoch(holder);
            const kept = this.generation === generation ? this.apiKeys.get(digest) : undefined;
            if (kept) return kept;
            const app = await store.apps.verifyApiKey(key);
            if (app) this.keep(this.apiKeys, digest, freeze(app), generation);
            return app;
          }),
      }),
      apiTokens: Object.assign(Object.create(store.apiTokens) as CredentialStore['apiTokens'], {
        verify: (token: string) =>
          memo(tokens, token, async () => {
            const digest = sha256Hex(token);
            const { generation } = await this.epoch(holder);
            const kept = this.generation === generation ? this.tokens.get(digest) : undefined;
            if (kept) return this.verification(kept);
            const verified = await store.apiTokens.verify(token);
            if (verified.status !== 'unknown') this.keep(this.tokens, digest, freeze(verified.record), generation);
            return verified;
          }),
      }),
    };
  }
}

/** Kept facts are shared by requests; none of them may change one for the others. */
function freeze<T extends object>(value: T): T {
  for (const field of Object.values(value)) if (Array.isArray(field)) Object.freeze(field);
  return Object.freeze(value);
}

const byStore = new WeakMap<object, CredentialFacts>();

/** The facts kept for one store (one per running app; tests run several apps in one process). */
export function credentialFactsOf(store: FactsStore, clock: Clock): CredentialFacts {
  let facts = byStore.get(store);
  if (!facts) {
    facts = new CredentialFacts(store, clock);
    byStore.set(store, facts);
  }
  return facts;
}
