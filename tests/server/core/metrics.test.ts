/**
 * The metrics' own series (decision PERF-190), at the cheapest layer: no server, one `ServiceMetrics`. The
 * scrape over HTTP, its credentials and the counts of real traffic are `throttle.test.ts`'s ("the metrics");
 * here, what only a unit shows: prom-client stays out of a start, and what a PostgreSQL pool adds (the
 * HTTP case runs on SQLite, which has no pool).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ServiceMetrics } from '../../../server/metrics/index.js';

describe('the service metrics', () => {
  it('no module of the start imports prom-client for its values: it loads on the first scrape', () => {
    const dir = new URL('../../../server/metrics/', import.meta.url);
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.ts'))) {
      const source = readFileSync(new URL(file, dir), 'utf8');
      expect(source, file).not.toMatch(/^import\s+(?!type\b)[^;]*from\s+'prom-client'/m);
    }
  });

  it('a scrape shows the pool gauges, counters and histograms, in prom-client text, and a pool watched after the first scrape', async () => {
    const metrics = new ServiceMetrics(true);
    const first = await metrics.exposition();
    expect(first.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(first.body).toContain('tis_score_attempts_total{outcome="failed"} 0');
    expect(first.body).toContain('tis_auth_failures_total 0');
    expect(first.body).not.toContain('tis_db_pool_size');
    expect(first.body).toMatch(/^process_cpu_seconds_total \S+$/m);

    metrics.watchPool({ poolStats: () => ({ total: 3, max: 10, idle: 1, waiting: 2 }) });
    metrics.request('GET', 'getMemberRow', 200, 0.002);
    metrics.request('GET', 'getMemberRow', 200, 20);
    metrics.request('TRACE', '/x', 405, 0.0001);
    metrics.scoreAttempt('success');
    metrics.lmsRequest('token', 0.03);
    metrics.authFailed(2);
    metrics.throttled();
    const { body } = await metrics.exposition();
    for (const line of [
      '# TYPE tis_db_pool_waiting gauge',
      'tis_db_pool_size 3',
      'tis_db_pool_max 10',
      'tis_db_pool_idle 1',
      'tis_db_pool_waiting 2',
      '# TYPE http_request_duration_seconds histogram',
      'http_request_duration_seconds_bucket{method="GET",operation="getMemberRow",status="200",le="0.001"} 0',
      'http_request_duration_seconds_bucket{method="GET",operation="getMemberRow",status="200",le="0.0025"} 1',
      'http_request_duration_seconds_bucket{method="GET",operation="getMemberRow",status="200",le="10"} 1',
      'http_request_duration_seconds_bucket{method="GET",operation="getMemberRow",status="200",le="+Inf"} 2',
      'http_request_duration_seconds_count{method="GET",operation="getMemberRow",status="200"} 2',
      'http_request_duration_seconds_sum{method="GET",operation="getMemberRow",status="200"} 20.002',
      'http_request_duration_seconds_count{method="OTHER",operation="/x",status="405"} 1',
      '# TYPE tis_score_attempts_total counter',
      'tis_score_attempts_total{outcome="success"} 1',
      'tis_lms_request_duration_seconds_bucket{kind="token",le="0.05"} 1',
      'tis_lms_request_duration_seconds_count{kind="token"} 1',
      'tis_auth_failures_total 2',
      'tis_auth_throttled_total 1',
    ]) {
      expect(body.split('\n'), line).toContain(line);
    }
    // Each family once: the own metrics are registered once, however many scrapes.
    expect(body.match(/^# TYPE tis_auth_failures_total /gm)).toHaveLength(1);
  });
});
