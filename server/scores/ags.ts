/**
 * The default publisher: LTI Assignment and Grade Services 2.0 over real HTTP.
 *
 * 1. An access token by OAuth 2.0 client credentials with a signed JWT client assertion (RFC 7523), asking
 *    for the score scope, plus the line-item scope when `max_score` is sent. Tokens are cached per
 *    (token endpoint, client, scopes) until shortly before they expire, and concurrent publications share
 *    one token request instead of each asking for their own.
 * 2. With `max_score`: GET the line item and PUT it back with `scoreMaximum` changed (AGS PUT replaces the
 *    whole line item, so it is read first).
 * 3. POST the score to `{lineitem}/scores` as `application/vnd.ims.lis.v1.score+json`.
 *
 * Failure policy: nothing is retried except once after a 401 on a cached token (the LMS may have dropped
 * it before its advertised expiry). A refusal or an unreachable LMS ends the publication as a failed
 * attempt at once; the tool decides whether to submit again, and every resubmission carries a later
 * timestamp so it supersedes. This keeps a struggling LMS from receiving a storm of retries.
 */
import type { AssertionSigner } from '../lti/client-credentials.js';
import { clientCredentialsForm } from '../lti/client-credentials.js';
import { AGS_MEDIA_TYPES, AGS_SCOPE as AGS_SCOPES } from '../lti/vocabulary.js';
import type { Clock } from '../store/index.js';
import type { LmsExchange, LmsPlatform, LmsRegistry } from './lms-registry.js';
import type { LmsResponse, Publication, PublicationOutcome, Publisher } from './publisher.js';
import { failed, pointsOf } from './publisher.js';

export type { AssertionSigner };

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface AgsPublisherOptions {
  signer: AssertionSigner;
  registry: LmsRegistry;
  clock?: Clock;
  fetch?: FetchLike;
  /** Per HTTP request. Default 10 s, like the service's other outbound calls. */
  timeoutMs?: number;
  /** A cached token is dropped this long before the LMS says it expires. Default 60 s. */
  tokenExpiryMarginMs?: number;
}

/** The longest LMS response body kept in an attempt's `data.response.body`. */
export const MAX_RESPONSE_BODY_CHARS = 65_536;

export const LINE_ITEM_SCOPE_WITHHELD =
  "max_score needs the LMS line-item scope, which this school's LMS developer key does not grant; nothing was published";

/** The scopes a publication asks for, made once (they are only read). */
const SCORE_SCOPES: readonly string[] = [AGS_SCOPES.score];
const SCORE_AND_LINE_ITEM_SCOPES: readonly string[] = [AGS_SCOPES.score, AGS_SCOPES.lineItem];

interface CachedToken {
  accessToken: string;
  scopes: Set<string>;
  expiresAtMs: number;
}

type TokenResult =
  | { ok: true; token: CachedToken; fromCache: boolean }
  | { ok: false; outcome: PublicationOutcome };

class HttpFailure extends Error {}

/**
 * Which of the LMS's endpoints a request goes to, named in every failure so an operator knows which one
 * failed (LTI-124): a token endpoint that does not answer is not a line item that does not answer.
 */
export type LmsParty = LmsExchange['party'];

const PARTY_WORDS: Readonly<Record<LmsParty, string>> = {
  token_endpoint: 'token endpoint',
  lineitem: 'line item',
  lineitems: 'line-item container',
  scores: 'scores endpoint',
};

/** `the LMS token endpoint`, `the LMS line item`, ... */
export function partyName(party: LmsParty): string {
  return `the LMS ${PARTY_WORDS[party]}`;
}

/** The human part of an LMS error body: a Problem's `detail`, an OAuth `error_description`, AGS `errors`. */
export function lmsReason(body: string): string {
  const text = body.trim();
  if (text === '') return '';
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null) {
      const o = parsed as Record<string, unknown>;
      const firstError = Array.isArray(o['errors']) ? (o['errors'][0] as unknown) : undefined;
      const nested =
        typeof firstError === 'object' && firstError !== null
          ? ((firstError as Record<string, unknown>)['message'] ?? (firstError as Record<string, unknown>)['detail'])
          : firstError;
      const candidates = [o['detail'], o['error_description'], o['message'], nested, o['error']];
      const found = candidates.find((c): c is string => typeof c === 'string' && c.trim() !== '');
      if (found) {
        if (typeof o['error'] === 'string' && found === o['error_description']) return `${o['error']}: ${found}`;
        return found.trim();
      }
    }
  } catch {
    // Not JSON: fall through to the text itself.
  }
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

function refusal(what: string, response: LmsResponse): string {
  const reason = lmsReason(response.body);
  return `the LMS refused ${what} (HTTP ${response.status})${reason ? `: ${reason}` : ''}`;
}

/** AGS: the scores service is the line item URL with `/scores` appended to its path (query kept). */
export function scoresUrl(lineItemUrl: string): string {
  const url = new URL(lineItemUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/scores`;
  return url.toString();
}

/** score × points without binary noise (0.1 × 3 is 0.3, not 0.30000000000000004). */
export function scaledScore(score: number, points: number): number {
  return Number((score * points).toPrecision(12));
}

export class AgsPublisher implements Publisher {
  private readonly signer: AssertionSigner;
  private readonly registry: LmsRegistry;
  private readonly clock: Clock;
  private readonly fetchFn: FetchLike;
  private readonly timeoutMs: number;
  private readonly marginMs: number;
  private readonly tokens = new Map<string, CachedToken>();
  private readonly inflight = new Map<string, Promise<TokenResult>>();
  /** Each column's scores URL, made once (PERF-73): every score of a column is POSTed to the same one. */
  private readonly scoresUrls = new Map<string, string>();

  constructor(options: AgsPublisherOptions) {
    this.signer = options.signer;
    this.registry = options.registry;
    this.clock = options.clock ?? { nowMs: () => Date.now() };
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.marginMs = options.tokenExpiryMarginMs ?? 60_000;
  }

  async publish(p: Publication): Promise<PublicationOutcome> {
    if (p.placement.lineItemId === null) {
      return failed(`location ${p.location.id} has no line item in the LMS gradebook of context ${p.context.id}`);
    }
    const platform = await this.registry.platformFor(p.organization, p.gradeService);
    if (!platform) {
      return failed(`the LMS of school ${p.organization.id} has no grade service registered with this service`);
    }
    let lineItemUrl: string;
    let scoresOf: string;
    try {
      lineItemUrl = platform.lineItemUrl(p.context.id, p.placement.lineItemId);
      scoresOf = this.scoresUrlOf(lineItemUrl);
    } catch {
      return failed(`location ${p.location.id} has no usable line item URL in context ${p.context.id}`);
    }
    // A school recorded as withholding the line-item scope (a tool's Sandbox school, LTI-51) is not asked.
    if (p.maxScore !== null && !p.organization.grantsLineItemScope) return failed(LINE_ITEM_SCOPE_WITHHELD);
    const scopes = p.maxScore === null ? SCORE_SCOPES : SCORE_AND_LINE_ITEM_SCOPES;
    try {
      const points = pointsOf(p);
      if (p.maxScore !== null) {
        const set = await this.setPoints(platform, scopes, lineItemUrl, p.maxScore);
        if (set) return set;
      }
      const score: Record<string, unknown> = {
        userId: p.user.externalId,
        scoreGiven: scaledScore(p.score, points),
        scoreMaximum: points,
        timestamp: p.timestamp,
        activityProgress: p.activityProgress,
        gradingProgress: p.gradingProgress,
      };
      if (p.comment !== '') score['comment'] = p.comment;
      const result = await this.authorized(platform, scopes, (token) =>
        this.send(platform, 'scores', scoresOf, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': AGS_MEDIA_TYPES.score, accept: 'application/json' },
          body: JSON.stringify(score),
        }),
      );
      if ('outcome' in result) return result.outcome;
      const response = result.response;
      if (response.status >= 200 && response.status < 300) return { status: 'success', response, error: '' };
      return failed(refusal('the score', response), response);
    } catch (err) {
      if (err instanceof HttpFailure) return failed(err.message);
      throw err;
    }
  }

  /** `scoresUrl` of a line item URL; throws for a URL that does not parse. */
  private scoresUrlOf(lineItemUrl: string): string {
    let url = this.scoresUrls.get(lineItemUrl);
    if (url === undefined) {
      url = scoresUrl(lineItemUrl);
      // Bounded: a process publishes to a few thousand columns at most between restarts; past that, start over.
      if (this.scoresUrls.size >= 4096) this.scoresUrls.clear();
      this.scoresUrls.set(lineItemUrl, url);
    }
    return url;
  }

  /** PUTs the line item's points; returns the failed outcome, or null when the points are set. */
  private async setPoints(
    platform: LmsPlatform,
    scopes: readonly string[],
    lineItemUrl: string,
    maxScore: number,
  ): Promise<PublicationOutcome | null> {
    const read = await this.authorized(platform, scopes, (token) =>
      this.send(platform, 'lineitem', lineItemUrl, {
        method: 'GET',
        headers: { authorization: `Bearer ${token}`, accept: AGS_MEDIA_TYPES.lineItem },
      }),
    );
    if ('outcome' in read) return read.outcome;
    if (read.response.status < 200 || read.response.status >= 300) {
      return failed(refusal('to read the line item', read.response), read.response);
    }
    let lineItem: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(read.response.body);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      lineItem = parsed as Record<string, unknown>;
    } catch {
      return failed('the LMS answered the line item read with something that is not a JSON object', read.response);
    }
    const put = await this.authorized(platform, scopes, (token) =>
      this.send(platform, 'lineitem', lineItemUrl, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': AGS_MEDIA_TYPES.lineItem,
          accept: AGS_MEDIA_TYPES.lineItem,
        },
        body: JSON.stringify({ ...lineItem, scoreMaximum: maxScore }),
      }),
    );
    if ('outcome' in put) return put.outcome;
    if (put.response.status < 200 || put.response.status >= 300) {
      return failed(refusal("to set the line item's points", put.response), put.response);
    }
    return null;
  }

  /** Runs `call` with a token; after a 401 on a cached token, once more with a fresh one. */
  private async authorized(
    platform: LmsPlatform,
    scopes: readonly string[],
    call: (accessToken: string) => Promise<LmsResponse>,
  ): Promise<{ response: LmsResponse } | { outcome: PublicationOutcome }> {
    const first = await this.token(platform, scopes);
    if (!first.ok) return { outcome: first.outcome };
    const response = await call(first.token.accessToken);
    if (response.status !== 401 || !first.fromCache) return { response };
    // An LMS that refuses one cached token has most likely dropped every token it issued this client (a
    // restart, a lost store): retrying with another cached one would fail alike, so all of them go.
    this.forgetClient(platform.tokenUrl, platform.clientId);
    const second = await this.token(platform, scopes);
    if (!second.ok) return { outcome: second.outcome };
    return { response: await call(second.token.accessToken) };
  }

  /**
   * Drops this process's cached tokens of one client: its LMS changed what it grants (the Sandbox's
   * line-item scope, decision LTI-49), and tokens already issued keep the scopes they were issued with.
   */
  forgetClient(tokenUrl: string, clientId: string): void {
    const prefix = `${tokenUrl}\n${clientId}\n`;
    for (const key of [...this.tokens.keys()]) if (key.startsWith(prefix)) this.tokens.delete(key);
  }

  private cacheKey(platform: LmsPlatform, scopes: readonly string[]): string {
    return `${platform.tokenUrl}\n${platform.clientId}\n${[...scopes].sort().join(' ')}`;
  }

  private async token(platform: LmsPlatform, scopes: readonly string[]): Promise<TokenResult> {
    const now = this.clock.nowMs();
    const prefix = `${platform.tokenUrl}\n${platform.clientId}\n`;
    // Any live token of this client whose scopes cover the request will do.
    for (const [key, cached] of this.tokens) {
      if (!key.startsWith(prefix)) continue;
      if (cached.expiresAtMs <= now) {
        this.tokens.delete(key);
        continue;
      }
      if (scopes.every((s) => cached.scopes.has(s))) return { ok: true, token: cached, fromCache: true };
    }
    const key = this.cacheKey(platform, scopes);
    const pending = this.inflight.get(key);
    if (pending) return pending;
    const request = this.requestToken(platform, scopes, key).finally(() => this.inflight.delete(key));
    this.inflight.set(key, request);
    return request;
  }

  private async requestToken(platform: LmsPlatform, scopes: readonly string[], key: string): Promise<TokenResult> {
    const form = await clientCredentialsForm(this.signer, this.clock, { clientId: platform.clientId, audience: platform.assertionAudience ?? platform.tokenUrl }, scopes);
    let response: LmsResponse;
    try {
      response = await this.send(platform, 'token_endpoint', platform.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
      });
    } catch (err) {
      if (err instanceof HttpFailure) return { ok: false, outcome: failed(err.message) };
      throw err;
    }
    let parsed: Record<string, unknown> | null = null;
    try {
      const value: unknown = JSON.parse(response.body);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) parsed = value as Record<string, unknown>;
    } catch {
      parsed = null;
    }
    const wantsLineItem = scopes.includes(AGS_SCOPES.lineItem);
    if (response.status === 400 && parsed?.['error'] === 'invalid_scope' && wantsLineItem) {
      return { ok: false, outcome: failed(LINE_ITEM_SCOPE_WITHHELD) };
    }
    if (response.status < 200 || response.status >= 300) {
      return { ok: false, outcome: failed(refusal('the access token request', response), response) };
    }
    const accessToken = parsed?.['access_token'];
    if (typeof accessToken !== 'string' || accessToken === '') {
      return { ok: false, outcome: failed('the LMS token endpoint answered without an access_token', response) };
    }
    // RFC 6749 §5.1: an absent `scope` means exactly the scopes requested.
    const grantedRaw = parsed?.['scope'];
    const granted = new Set(typeof grantedRaw === 'string' ? grantedRaw.split(/\s+/).filter(Boolean) : scopes);
    if (wantsLineItem && !granted.has(AGS_SCOPES.lineItem)) return { ok: false, outcome: failed(LINE_ITEM_SCOPE_WITHHELD) };
    if (!granted.has(AGS_SCOPES.score)) {
      return { ok: false, outcome: failed('the LMS did not grant the score scope', response) };
    }
    const expiresIn = typeof parsed?.['expires_in'] === 'number' ? (parsed['expires_in'] as number) : 3600;
    const token: CachedToken = {
      accessToken,
      scopes: granted,
      expiresAtMs: this.clock.nowMs() + Math.max(0, expiresIn * 1000 - this.marginMs),
    };
    if (token.expiresAtMs > this.clock.nowMs()) this.tokens.set(key, token);
    return { ok: true, token, fromCache: false };
  }

  /** One HTTP exchange; network failures and timeouts become `HttpFailure` naming the party that failed. */
  private async send(platform: LmsPlatform, party: LmsParty, url: string, init: Omit<LmsExchange, 'url' | 'party'>): Promise<LmsResponse> {
    return sendToLms(platform, party, url, init, this.fetchFn, this.timeoutMs);
  }
}

/** One exchange with a school's LMS, for the publisher and for line-item creation (`server/lti/line-items.ts`). */
export async function sendToLms(
  platform: LmsPlatform,
  party: LmsParty,
  url: string,
  init: Omit<LmsExchange, 'url' | 'party'>,
  fetchFn: FetchLike = (input, req) => fetch(input, req),
  timeoutMs = 10_000,
): Promise<LmsResponse> {
  const target = platform.transport(url);
  const who = partyName(party);
  if (platform.exchange) {
    const answer = await platform.exchange({ ...init, url: target, party });
    if ('failure' in answer) throw new HttpFailure(`${who} could not be reached at ${new URL(url).origin}: ${answer.failure}`);
    return { status: answer.status, body: answer.body.length > MAX_RESPONSE_BODY_CHARS ? answer.body.slice(0, MAX_RESPONSE_BODY_CHARS) : answer.body };
  }
  let response: Response;
  try {
    response = await (platform.fetch ?? fetchFn)(target, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const cause = err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
    const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
    throw new HttpFailure(
      timedOut ? `${who} did not answer at ${new URL(url).origin} within ${timeoutMs} ms` : `${who} could not be reached at ${new URL(url).origin}: ${cause}`,
    );
  }
  let body: string;
  try {
    body = await response.text();
  } catch (err) {
    throw new HttpFailure(`the connection to ${who} broke while it answered: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { status: response.status, body: body.length > MAX_RESPONSE_BODY_CHARS ? body.slice(0, MAX_RESPONSE_BODY_CHARS) : body };
}

/** A failure `sendToLms` threw, as the reason text; anything else is rethrown. */
export function lmsFailureReason(err: unknown): string {
  if (err instanceof HttpFailure) return err.message;
  throw err;
}
