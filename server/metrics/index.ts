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
 * So are the others (`series.ts`), and prom-client, with its default metrics, loads on the first scrape
 * (decision PERF-190): it was a tenth of the CPU of a start, for a registry that only a scrape reads.
 */
import type { Registry } from 'prom-client';
import type { RootDriver } from '../store/driver.js';
import type { Publisher } from '../scores/publisher.js';
import type { LmsEndpointField } from '../outbound/index.js';
import { RequestHistogram } from './request-histogram.js';
import { Counter, Gauge, KindHistogram } from './series.js';
import type { ScrapedMetric } from './series.js';

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
  private readonly requests: RequestHistogram;
  private readonly scoreAttempts: Counter<'outcome'>;
  private readonly lmsRequests: KindHistogram<LmsRequestKind>;
  private readonly toolRequests: KindHistogram<ToolRequestKind>;
  private readonly authFailures: Counter;
  private readonly authThrottled: Counter;
  /** In the order a scrape shows them, before prom-client's default metrics. */
  private readonly own: ScrapedMetric[];
  private registry: Promise<Registry> | null = null;
  private registered = 0;

  /** `enabled` false (`METRICS=off`): nothing is timed per request, and no default metrics are collected. */
  constructor(readonly enabled: boolean) {
    this.requests = new RequestHistogram(
      'http_request_duration_seconds',
      'Time from a request’s arrival to its last byte written, by method, operation (operationId or route template) and status.',
      REQUEST_BUCKETS,
    );
    // Known at start so a scrape shows zeros rather than nothing before the first score.
    this.scoreAttempts = new Counter(
      'tis_score_attempts_total',
      'Score attempts published to an LMS gradebook, by outcome (success or failed).',
      'outcome',
      ['success', 'failed'],
    );
    this.lmsRequests = new KindHistogram(
      'tis_lms_request_duration_seconds',
      'Calls to an LMS (token, score, line item, registration, keys, deep linking), whatever their answer.',
      OUTBOUND_BUCKETS,
    );
    this.toolRequests = new KindHistogram(
      'tis_tool_request_duration_seconds',
      'Calls to a tool: its launch address checked before a launch, provision, locations; whatever their outcome.',
      OUTBOUND_BUCKETS,
    );
    this.authFailures = new Counter(
      'tis_auth_failures_total',
      'Refused credentials that name nothing (unknown API keys and bearer tokens), as the throttle counts them.',
    );
    this.authThrottled = new Counter('tis_auth_throttled_total', 'Requests answered 429 by the credential throttle.');
    this.own = [this.requests, this.scoreAttempts, this.lmsRequests, this.toolRequests, this.authFailures, this.authThrottled];
  }

  /** One finished request (the access line's hook, both fronts). */
  request(method: string | undefined, operation: string, status: number, seconds: number): void {
    this.requests.observe(method !== undefined && METHODS.has(method) ? method : 'OTHER', operation, status, seconds);
  }

  scoreAttempt(outcome: 'success' | 'failed'): void {
    this.scoreAttempts.inc(1, outcome);
  }

  lmsRequest(kind: LmsRequestKind, seconds: number): void {
    this.lmsRequests.observe(kind, seconds);
  }

  toolRequest(kind: ToolRequestKind, seconds: number): void {
    this.toolRequests.observe(kind, seconds);
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
    this.own.push(
      new Gauge('tis_db_pool_size', 'PostgreSQL connections open in this instance’s pool (busy or idle).', () => stats().total),
      new Gauge('tis_db_pool_max', 'PostgreSQL connections this instance’s pool may open (DATABASE_POOL_SIZE).', () => stats().max),
      new Gauge('tis_db_pool_idle', 'Idle PostgreSQL connections in this instance’s pool.', () => stats().idle),
      new Gauge('tis_db_pool_waiting', 'Queries waiting for a PostgreSQL connection of this instance’s pool.', () => stats().waiting),
    );
  }

  /**
   * The registry, made on the first scrape (PERF-190): prom-client loaded, this app's metrics registered, and
   * its default metrics (process and Node.js) collected from then on. Their counters read the process's own
   * totals (CPU seconds, start time, heap); the GC-duration and event-loop-lag histograms count from the first
   * scrape, which Prometheus sends within one scrape interval of the start.
   */
  private registryOf(): Promise<Registry> {
    this.registry ??= import('prom-client').then(({ Registry, collectDefaultMetrics }) => {
      const registry = new Registry();
      this.registerOwn(registry);
      if (this.enabled) collectDefaultMetrics({ register: registry });
      return registry;
    });
    return this.registry;
  }

  /** This app's metrics not yet in the registry (a pool watched after the first scrape, too). */
  private registerOwn(registry: Registry): void {
    for (const metric of this.own.slice(this.registered)) registry.registerMetric(metric as never);
    this.registered = this.own.length;
  }

  /** The text a scrape gets, and its Content-Type. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    const registry = await this.registryOf();
    this.registerOwn(registry);
    return { contentType: registry.contentType, body: await registry.metrics() };
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
