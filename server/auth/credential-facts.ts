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
  /**
   * The epoch this request took on trust from the last one read (PERF-180), until a statement of its own
   * confirms it; `'stale'` once a confirmation found another epoch (the request is then run again).
   */
  unconfirmedEpoch?: CredentialEpoch | 'stale';
  /** This request may not take the epoch on trust (it is being run again after a stale one). */
  noTrustedEpoch?: boolean;
  /** Something of this request was judged by the trusted epoch, so it must be confirmed, not just dropped. */
  trustedEpochUsed?: boolean;
}

/**
 * Thrown where a request that took the epoch on trust finds that the store's epoch had moved on: what it
 * did under the old facts is void, and it is run again from its start with an epoch read for it (PERF-180).
 * Nothing was answered or written under it: every path confirms before either.
 */
export class StaleCredentialEpochError extends Error {
  constructor() {
    super('the credential epoch changed while the request ran on the last one read; run it again');
    this.name = 'StaleCredentialEpochError';
  }
}

/** A request's epoch as its guard sees it (PERF-180): one taken on trust, to be confirmed by a read of its own. */
export interface RequestEpoch {
  /** The epoch the request took on trust and has not confirmed yet, or null (read for it, or confirmed). */
  pending(): CredentialEpoch | null;
  /**
   * Confirms the trusted epoch with `read`, an epoch that a statement of this request read (so begun after
   * it arrived), or with a read of its own when none is given. Throws `StaleCredentialEpochError` when it
   * had moved on.
   */
  confirm(read?: CredentialEpoch): Promise<void>;
}

export class CredentialFacts {
  private generation: number | null = null;
  /** The last epoch read, which a request may take on trust until a statement of its own confirms it. */
  private latest: CredentialEpoch | null = null;
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
    if (holder.credentialEpoch === undefined && typeof holder.unconfirmedEpoch === 'object') {
      holder.trustedEpochUsed = true;
      holder.credentialEpoch = Promise.resolve(holder.unconfirmedEpoch);
    }
    holder.credentialEpoch ??= this.readEpoch().then((epoch) => {
      this.observe(epoch);
      return epoch;
    });
    return holder.credentialEpoch;
  }

  /**
   * Lets the request take the last epoch read on trust instead of reading it first (PERF-180): the throttle,
   * the contract's pin and the credential step then answer from the kept facts at once, and the request's
   * first statement reads the epoch beside its own rows (`confirm`). A request whose confirmation finds
   * another epoch is run again from its start with an epoch read for it, so it is judged exactly as if it
   * had read the epoch first. Only where every exit confirms before it answers or writes: the contract
   * operations (`contractPipeline`, the dispatch's `answerError`). False when there is nothing to trust yet.
   */
  trustLatest(holder: EpochHolder): boolean {
    if (this.latest === null || holder.noTrustedEpoch || holder.credentialEpoch) return false;
    holder.unconfirmedEpoch = this.latest;
    return true;
  }

  /** The epoch of `holder` as its guard sees it (`RequestEpoch`). */
  requestEpoch(holder: EpochHolder): RequestEpoch {
    return {
      pending: () => (typeof holder.unconfirmedEpoch === 'object' ? holder.unconfirmedEpoch : null),
      confirm: (read?: CredentialEpoch) => this.confirm(holder, read),
    };
  }

  /** Whether `holder` still runs on a trusted epoch (or found it stale): it must confirm before it answers. */
  unconfirmed(holder: EpochHolder): boolean {
    return holder.unconfirmedEpoch !== undefined;
  }

  /**
   * Confirms the epoch `holder` took on trust, with `read` (one a statement of this request read) or a read
   * begun now. The same generation and failure window: the kept facts it was judged by held when its own
   * statement ran, and so did the throttle's answer. Anything else: `StaleCredentialEpochError`.
   */
  async confirm(holder: EpochHolder, read?: CredentialEpoch): Promise<void> {
    const trusted = holder.unconfirmedEpoch;
    if (trusted === undefined) return;
    if (trusted === 'stale') throw new StaleCredentialEpochError();
    if (!holder.trustedEpochUsed) {
      // Nothing was judged by it (a request without a credential): no read is owed, the trust just ends.
      if (read) this.observe(read);
      delete holder.unconfirmedEpoch;
      return;
    }
    const epoch = read ?? (await this.readEpoch());
    this.observe(epoch);
    if (holder.unconfirmedEpoch !== trusted) return; // confirmed meanwhile by another path of this request
    if (epoch.generation !== trusted.generation || epoch.failuresWindow !== trusted.failuresWindow) {
      holder.unconfirmedEpoch = 'stale';
      throw new StaleCredentialEpochError();
    }
    delete holder.unconfirmedEpoch;
  }

  /** Makes `holder` ready to run its request again after a stale epoch: nothing taken on trust this time. */
  restart(holder: EpochHolder & { credentialStore?: unknown }): void {
    delete holder.credentialEpoch;
    delete holder.unconfirmedEpoch;
    delete holder.trustedEpochUsed;
    delete holder.credentialStore;
    holder.noTrustedEpoch = true;
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

  private observe(epoch: CredentialEpoch): void {
    const generation = epoch.generation;
    // An older read answering late only makes the next trusted request run again, never judge wrongly.
    this.latest = epoch;
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
