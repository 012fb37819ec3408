// Replay refusal for launch, provision and locations tokens: each `jti` is accepted once
// (decision GAP-32). A token is worthless after its `exp`, so an entry is kept exactly that long.

/** Where seen `jti`s are kept. Implement it on a shared store (Redis SET NX EX, a SQL unique key) when several instances serve the tool. */
export interface ReplayStore {
  /**
   * Records `jti` until `expiresAt` (seconds since the epoch, the token's `exp`). Resolves `true`
   * when it was not recorded yet (first use), `false` when it was and has not expired (a replay).
   * Must be atomic: two concurrent calls with one `jti` must not both see `true`.
   */
  remember(jti: string, expiresAt: number): boolean | Promise<boolean>;
}

export interface MemoryReplayCacheOptions {
  /**
   * Most entries kept. Past it the least recently seen entry is dropped before it expires, which
   * would let that one token be replayed; size it above the tokens a tool receives in 5 minutes.
   */
  maxEntries?: number;
  /** Clock in milliseconds (tests). */
  now?: () => number;
}

/** The default store: in memory, one process, least recently used first out. */
export class MemoryReplayCache implements ReplayStore {
  readonly #entries = new Map<string, number>();
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: MemoryReplayCacheOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 100_000;
    if (!Number.isSafeInteger(this.#maxEntries) || this.#maxEntries < 1) throw new RangeError('maxEntries must be a positive integer');
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  remember(jti: string, expiresAt: number): boolean {
    const now = this.#now() / 1000;
    const seenUntil = this.#entries.get(jti);
    if (seenUntil !== undefined && seenUntil > now) {
      // Refreshing its place keeps an entry under attack from being the next one evicted.
      this.#entries.delete(jti);
      this.#entries.set(jti, seenUntil);
      return false;
    }
    this.#entries.delete(jti);
    this.#prune(now);
    this.#entries.set(jti, expiresAt);
    return true;
  }

  #prune(now: number): void {
    // Tokens live 300 s, so insertion order is close to expiry order: expired entries gather at
    // the front and are dropped from there without scanning the whole map.
    for (const [jti, until] of this.#entries) {
      if (until > now) break;
      this.#entries.delete(jti);
    }
    if (this.#entries.size < this.#maxEntries) return;
    for (const [jti, until] of this.#entries) {
      if (until <= now) this.#entries.delete(jti);
    }
    for (const jti of this.#entries.keys()) {
      if (this.#entries.size < this.#maxEntries) break;
      this.#entries.delete(jti);
    }
  }
}
