/**
 * Credential guessing is throttled (decision H-05). Failed authentications (an unknown API key, api.token,
 * platform or builder token: the 401s `invalid_api_key` and `invalid_bearer_token`) are counted per fixed
 * one-minute window in two buckets: the client address, and the credential's prefix (the API key's
 * `app_id`, the dashboard, or `api.token`s). Once a bucket is full, until its window ends:
 *
 * - an address that reached its limit gets 429 for every request carrying a credential;
 * - a prefix that reached its limit gets 429 only from addresses that themselves failed in the window, so
 *   a valid credential sent from another address is never slowed by someone guessing at the same tool.
 *
 * The counters live in the store (`auth_failures`), so several instances on one PostgreSQL database share
 * them. A refused request is not counted again and is answered before its credential is looked at. Each
 * full bucket is logged once per window, by the request that filled it.
 *
 * The counts are read only when some instance counted a failure in the current window (decision PERF-21):
 * the store's credential epoch, read once per request and shared with the credential step, names the
 * latest window with a failure, so a request in a quiet window reads no counts at all, on any instance.
 */
import { isIPv6 } from 'node:net';
import type { Request, Response } from 'express';
import type { Logger } from '../http/log.js';
import type { RequestLocals } from '../http/locals.js';
import type { ServiceMetrics } from '../metrics/index.js';
import { Problem } from '../http/problem.js';
import { bearerCredential } from '../auth/credentials.js';
import { credentialFactsOf } from '../auth/credential-facts.js';
import type { EpochHolder } from '../auth/credential-facts.js';
import { parseApiKey } from '../store/ids.js';
import type { Clock, Store } from '../store/index.js';

export interface ThrottleLimits {
  /** Length of a counting window. */
  windowMs: number;
  /** Failed authentications from one client address per window. */
  perAddress: number;
  /** Failed authentications naming one credential prefix per window. */
  perCredential: number;
}

export const DEFAULT_THROTTLE_LIMITS: ThrottleLimits = { windowMs: 60_000, perAddress: 30, perCredential: 10 };

/** The 401 codes that mean "no such credential": what a guess gets. Expired or suspended are not guesses. */
const GUESS_CODES = new Set(['invalid_api_key', 'invalid_bearer_token']);

export const THROTTLE_MESSAGE = (seconds: number): string =>
  `too many failed authentications; retry after ${seconds} seconds`;

/** The client address as a bucket: an IPv6 client by its /64, the block one subscriber usually holds. */
export function addressBucket(address: string | undefined): string {
  const raw = (address ?? 'unknown').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  if (!isIPv6(raw)) return `address:${raw}`;
  const [head = '', tail = ''] = raw.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = raw.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `address:${groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/**
 * The client address the request context resolved (H-20: the peer, or the address the trusted proxies
 * name); the peer for a request that did not pass through it.
 */
function clientAddressOf(req: Request, res: Response | undefined): string | undefined {
  return (res?.locals as Partial<RequestLocals> | undefined)?.clientAddress ?? req.socket.remoteAddress;
}

/** The credential's prefix as a bucket, or null when the request carries no bearer credential. */
export function credentialBucket(req: Request): string | null {
  const credential = bearerCredential(req.headers.authorization);
  if (credential === null) return null;
  // `/metrics` takes the dashboard's tokens (OPS-11): guessing at it is guessing at them.
  if (req.path.startsWith('/dashboard/') || req.path === '/metrics') return 'credential:dashboard';
  const key = parseApiKey(credential);
  if (key) return `credential:api_key:${key.appId}`;
  return credential.startsWith('ltiaas_') ? 'credential:api_key:malformed' : 'credential:api_token';
}

export class CredentialThrottle {
  constructor(
    private readonly store: Pick<Store, 'authFailures' | 'apps' | 'apiTokens' | 'credentialEpoch'>,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly limits: ThrottleLimits = DEFAULT_THROTTLE_LIMITS,
    private readonly metrics?: Pick<ServiceMetrics, 'authFailed' | 'throttled'>,
  ) {}

  private window(): { start: number; retryAfter: number } {
    const now = this.clock.nowMs();
    const start = Math.floor(now / this.limits.windowMs) * this.limits.windowMs;
    return { start, retryAfter: Math.max(1, Math.ceil((start + this.limits.windowMs - now) / 1000)) };
  }

  /** The 429 for a request from a full bucket, or null to let it through. */
  async check(req: Request, res?: Response): Promise<Problem | null> {
    const credential = credentialBucket(req);
    if (credential === null) return null;
    const { start, retryAfter } = this.window();
    const holder: EpochHolder = (res?.locals as EpochHolder | undefined) ?? {};
    const epoch = await credentialFactsOf(this.store, this.clock).epoch(holder);
    // No instance has counted a failure in this window: no bucket can be full.
    if (epoch.failuresWindow < start) return null;
    const address = addressBucket(clientAddressOf(req, res));
    const counts = await this.store.authFailures.counts([address, credential], start);
    const fromAddress = counts.get(address) ?? 0;
    const forCredential = counts.get(credential) ?? 0;
    const full = fromAddress >= this.limits.perAddress || (forCredential >= this.limits.perCredential && fromAddress > 0);
    if (!full) return null;
    this.metrics?.throttled();
    return new Problem(429, 'too_many_failed_authentications', THROTTLE_MESSAGE(retryAfter), {
      headers: { 'Retry-After': String(retryAfter) },
    });
  }

  /** Counts a refused credential; called with every problem before it is sent, so the next request sees it. */
  async failed(req: Request, res: Response, problem: Problem, log: Logger = this.log): Promise<void> {
    if (problem.status !== 401 || !GUESS_CODES.has(problem.code)) return;
    const credential = credentialBucket(req);
    if (credential === null) return;
    this.metrics?.authFailed();
    const address = addressBucket(clientAddressOf(req, res));
    const { start } = this.window();
    await this.count(start, [address, credential], log);
  }

  private pending: { start: number; increments: Map<string, number>; log: Logger; done: Promise<void> } | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private sweptWindow: number | null = null;

  /**
   * Group commit: failures arriving while a write is in flight are added together and written by the next
   * one, so a burst of refusals costs a few commits, not one per refusal. Each caller waits for the write
   * holding its failure, so its answer leaves only once the count is in the store.
   */
  private count(start: number, buckets: readonly string[], log: Logger): Promise<void> {
    if (!this.pending || this.pending.start !== start) {
      const batch = { start, increments: new Map<string, number>(), log, done: Promise.resolve() };
      batch.done = this.flushing.then(() => this.write(batch));
      this.flushing = batch.done.catch(() => undefined);
      this.pending = batch;
    }
    for (const bucket of buckets) this.pending.increments.set(bucket, (this.pending.increments.get(bucket) ?? 0) + 1);
    return this.pending.done;
  }

  private async write(batch: { start: number; increments: Map<string, number>; log: Logger }): Promise<void> {
    if (this.pending === batch) this.pending = null;
    const totals = await this.store.authFailures.record(batch.increments, batch.start);
    const windowEnds = new Date(batch.start + this.limits.windowMs).toISOString();
    for (const [bucket, total] of totals) {
      const added = batch.increments.get(bucket) ?? 0;
      const isAddress = bucket.startsWith('address:');
      const limit = isAddress ? this.limits.perAddress : this.limits.perCredential;
      // Logged by the write that filled the bucket: once per window.
      if (total - added < limit && total >= limit) {
        batch.log.warn(
          'credential guessing throttled',
          isAddress
            ? { bucket: 'address', address: bucket.slice('address:'.length), limit, until: windowEnds }
            : { bucket: 'credential', credential: bucket.slice('credential:'.length), limit, until: windowEnds },
        );
      }
    }
    // Old windows are dropped once per window by each instance, so the table stays small.
    if (this.sweptWindow !== batch.start) {
      this.sweptWindow = batch.start;
      await this.store.authFailures.sweep(batch.start - this.limits.windowMs);
    }
  }
}
