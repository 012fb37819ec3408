/**
 * The service's Prometheus metrics (decisions OPS-10..OPS-13): one `prom-client` Registry per app (tests run
 * several apps in one process, so the global registry is never used), served at `GET /metrics` to the
 * platform team and on `METRICS_PORT` without a credential (`server/metrics/serve.ts`).
 *
 * Every label takes a value from a closed set (OPS-12): methods outside the usual seven are `OTHER`, the
 * operation is the operationId or the route's template (never a path as sent), statuses are three digits.
 * Nothing names a tool, a course or a person.
 *
 * The request histogram is on every request's path, so it is a light one of its own (`request-histogram.ts`).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RootDriver } from '../store/driver.js';
import type { Publisher } from '../scores/publisher.js';
import type { LmsEndpointField } from '../outbound/index.js';
import { RequestHistogram } from './request-histogram.js';

declare module '../http/services.js' {
  interface Services {
    /** The metrics of this app (OPS-10); their timings stay off the request path when `METRICS` is off. */
    metrics: ServiceMetrics;
  }
}

/** The LMS calls the service times (issue 26): a token, a score, a line item, a registration. */
export type LmsRequestKind = 'token' | 'score' | 'line_item' | 'registration' | 'keys' | 'deep_linking';
/** The tool calls the service times: the launch's endpoint check, provision, locations. */
export type ToolRequestKind = 'launch' | 'provision' | 'locations';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Request latencies: a contract GET is about a millisecond, a score waits for the LMS. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Outbound calls: a loopback LMS answers in milliseconds, a school's across the internet in tenths. */
const OUTBOUND_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Which kind of LMS call a request is. The grade calls all pass as `lineitem` requests (their URLs are the
 * school's, under the same rules): the client-credentials grant is the form-encoded one, a score is the
 * line item's `/scores`, anything else is the line item itself.
 */
export function lmsRequestKind(request: { field: LmsEndpointField; url: string; headers?: Record<string, string> }): LmsRequestKind | null {
  switch (request.field) {
    case 'token_endpoint':
      return 'token';
    case 'lineitem': {
      const type = Object.entries(request.headers ?? {}).find(([name]) => name.toLowerCase() === 'content-type')?.[1] ?? '';
      if (type.startsWith('application/x-www-form-urlencoded')) return 'token';
      return /\/scores\/?(?:\?|$)/.test(request.url) ? 'score' : 'line_item';
    }
    // Named by the publisher since LTI-124: the scores endpoint, and the container a missing line item is made in.
    case 'scores':
      return 'score';
    case 'lineitems':
      return 'line_item';
    case 'registration_endpoint':
    case 'openid_configuration':
      return 'registration';
    case 'jwks_uri':
      return 'keys';
    case 'deep_link_return_url':
      return 'deep_linking';
    default:
      return null;
  }
}

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requests: RequestHistogram;
  private readonly scoreAttempts: Counter<'outcome'>;
  private readonly lmsRequests: Histogram<'kind'>;
  private readonly toolRequests: Histogram<'kind'>;
  private readonly authFailures: Counter;
  private readonly authThrottled: Counter;

  /** `enabled` false (`METRICS=off`): nothing is timed per request, and no default metrics are collected. */
  constructor(readonly enabled: boolean) {
    const registers = [this.registry];
    this.requests = new RequestHistogram(
      'http_request_duration_seconds',
      'Time from a request’s arrival to its last byte written, by method, operation (operationId or route template) and status.',
      REQUEST_BUCKETS,
      this.registry,
    );
    this.scoreAttempts = new Counter({
      name: 'tis_score_attempts_total',
      help: 'Score attempts published to an LMS gradebook, by outcome (success or failed).',
      labelNames: ['outcome'],
      registers,
    });
    this.lmsRequests = new Histogram({
      name: 'tis_lms_request_duration_seconds',
      help: 'Calls to an LMS (token, score, line item, registration, keys, deep linking), whatever their answer.',
      labelNames: ['kind'],
      buckets: OUTBOUND_BUCKETS,
      registers,
    });
    this.toolRequests = new Histogram({
      name: 'tis_tool_request_duration_seconds',
      help: 'Calls to a tool: its launch address checked before a launch, provision, locations; whatever their outcome.',
      labelNames: ['kind'],
      buckets: OUTBOUND_BUCKETS,
      registers,
    });
    this.authFailures = new Counter({
      name: 'tis_auth_failures_total',
      help: 'Refused credentials that name nothing (unknown API keys and bearer tokens), as the throttle counts them.',
      registers,
    });
    this.authThrottled = new Counter({
      name: 'tis_auth_throttled_total',
      help: 'Requests answered 429 by the credential throttle.',
      registers,
    });
    // Known at start so a scrape shows zeros rather than nothing before the first score.
    for (const outcome of ['success', 'failed']) this.scoreAttempts.labels(outcome);
    if (enabled) collectDefaultMetrics({ register: this.registry });
  }

  /** One finished request (the access line's hook, both fronts). */
  request(method: string | undefined, operation: string, status: number, seconds: number): void {
    this.requests.observe(method !== undefined && METHODS.has(method) ? method : 'OTHER', operation, status, seconds);
  }

  scoreAttempt(outcome: 'success' | 'failed'): void {
    this.scoreAttempts.labels(outcome).inc();
  }

  lmsRequest(kind: LmsRequestKind, seconds: number): void {
    this.lmsRequests.labels(kind).observe(seconds);
  }

  toolRequest(kind: ToolRequestKind, seconds: number): void {
    this.toolRequests.labels(kind).observe(seconds);
  }

  authFailed(count = 1): void {
    this.authFailures.inc(count);
  }

  throttled(): void {
    this.authThrottled.inc();
  }

  /** The PostgreSQL pool's gauges (OPS-12), read at each scrape; SQLite has no pool and shows none. */
  watchPool(driver: Pick<RootDriver, 'poolStats'>): void {
    const stats = driver.poolStats?.bind(driver);
    if (stats === undefined) return;
    const registers = [this.registry];
    new Gauge({
      name: 'tis_db_pool_size',
      help: 'PostgreSQL connections open in this instance’s pool (busy or idle).',
      registers,
      collect() {
        this.set(stats().total);
      },
    });
    new Gauge({
      name: 'tis_db_pool_max',
      help: 'PostgreSQL connections this instance’s pool may open (DATABASE_POOL_SIZE).',
      registers,
      collect() {
        this.set(stats().max);
      },
    });
    new Gauge({
      name: 'tis_db_pool_idle',
      help: 'Idle PostgreSQL connections in this instance’s pool.',
      registers,
      collect() {
        this.set(stats().idle);
      },
    });
    new Gauge({
      name: 'tis_db_pool_waiting',
      help: 'Queries waiting for a PostgreSQL connection of this instance’s pool.',
      registers,
      collect() {
        this.set(stats().waiting);
      },
    });
  }

  /** The text a scrape gets, and its Content-Type. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** The publisher, counting each attempt's outcome; a publisher that throws counts as failed (the attempt is). */
export function countingPublisher(inner: Publisher, metrics: ServiceMetrics): Publisher {
  return {
    // The wrapper counts; whatever else the publisher does is still its own.
    ...(inner.forgetClient ? { forgetClient: (tokenUrl: string, clientId: string) => inner.forgetClient?.(tokenUrl, clientId) } : {}),
    async publish(publication) {
      try {
        const outcome = await inner.publish(publication);
        metrics.scoreAttempt(outcome.status === 'success' ? 'success' : 'failed');
        return outcome;
      } catch (err) {
        metrics.scoreAttempt('failed');
        throw err;
      }
    },
  };
}
