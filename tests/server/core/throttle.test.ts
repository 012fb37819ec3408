/**
 * Credential guessing is throttled (decision H-05), over real HTTP from several loopback addresses (the
 * client address is the TCP peer): after a burst of failed authentications, 429 with `Retry-After`,
 * logged once per window; valid credentials from other addresses are not slowed; the counters live in
 * the store, so a second instance on the same store sees them. Runs on SQLite and PostgreSQL.
 *
 * The front door (issue 26) on the same two instances: the first trusts loopback proxies
 * (`TRUST_PROXY=loopback`, H-20), so a test sending `X-Forwarded-For` from a loopback address is a proxy,
 * the second trusts none; the service's own calls to its Sandbox LMS are never throttled (H-22); and a
 * Prometheus scrape after all that traffic parses and counts it (OPS-10..OPS-12).
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../store/helpers.js';
import { answer as toolAnswer, startToolServer, type ToolServer } from '../outbound/fixtures.js';
import { createTool, launch, placeLocation, startServer, type TestServer, type Tool } from '../harness.js';
import { platformToken } from '../dashboard/helpers.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

/** One request sent from `from` (a 127.0.0.0/8 address), so the service sees that client address. */
function send(from: string, url: string, options: { method?: string; auth?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
  const target = new URL(url);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? 'GET',
        localAddress: from,
        headers: {
          ...options.headers,
          ...(options.auth ? { authorization: options.auth } : {}),
          ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const json = (res.headers['content-type'] ?? '').includes('json');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === '' ? {} : json ? (JSON.parse(text) as Record<string, unknown>) : { text } });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const guess = (): string => randomBytes(32).toString('base64url').slice(0, 43);
/** A tool ID no guess shares, so only the address's bucket fills. */
const randomApp = (): string => `app_${Array.from(randomBytes(24), (b) => 'abcdefghijklmnopqrstuvwxyz234567'[b % 32]).join('')}`;
const clock = new ManualClock(Math.floor(Date.now() / 60_000) * 60_000 + 1_000);

let server: TestServer;
let twin: TestServer;
let toolServer: ToolServer;
let tool: Tool;
let scoreUrl: string;
let rowUrl: string;
let studentAuth: string;

beforeAll(async () => {
  server = await startServer({
    clock,
    config: { authFailuresPerAddress: 6, authFailuresPerCredential: 3, trustProxy: { kind: 'addresses', addresses: ['loopback'] }, metricsPort: 0, allowLoopbackTools: true },
  });
  // A second instance on the same store (the same SQLite file, or the same PostgreSQL schema), trusting no proxy.
  twin = await startServer({ clock, dataDir: server.dataDir, config: { authFailuresPerAddress: 6, authFailuresPerCredential: 3 } });
  tool = await createTool(server);
  // The tool's locations URL, for the Sandbox picker.
  toolServer = await startToolServer();
  toolServer.route('/locations', toolAnswer.json({ locations: { 'quiz-9': { type: 'assessment', label: 'Quiz 9' } } }));
  await server.services.store.apps.update(tool.app.id, { locationsUrl: toolServer.url('/locations') });
  const placed = await placeLocation(server, { app: tool.app.id, type: 'assessment' });
  const student = await launch(server, { placed, groups: ['student'] });
  studentAuth = student.auth;
  rowUrl = student.claims.storage.member;
  scoreUrl = `${server.url}/v1/contexts/${placed.context.id}/apps/${tool.app.id}/locations/${placed.location.id}/members/${student.member.id}/scores`;
});
afterAll(async () => {
  await toolServer?.close();
  await twin?.stop();
  await server?.stop();
});

function throttledLines(): Array<Record<string, unknown>> {
  return [...server.logs, ...twin.logs].filter((l) => l['msg'] === 'credential guessing throttled' || l['message'] === 'credential guessing throttled');
}

describe('guessing one tool’s API key (per credential prefix)', () => {
  it('after 3 failures 429 with Retry-After for the guesser; the valid key from another address is not slowed', async () => {
    const guesser = '127.0.0.2';
    const wrongKey = () => `Bearer ltiaas_${tool.app.id}_${guess()}`;
    for (let i = 0; i < 3; i += 1) {
      const refused = await send(guesser, scoreUrl, { method: 'POST', auth: wrongKey(), body: { score: 0.5 } });
      expect(refused.status).toBe(401);
      expect(refused.body['detail']).toBe('Invalid API key');
    }
    const throttled = await send(guesser, scoreUrl, { method: 'POST', auth: wrongKey(), body: { score: 0.5 } });
    expect(throttled.status).toBe(429);
    expect(throttled.body).toMatchObject({ code: 'too_many_failed_authentications', detail: 'too many failed authentications; retry after 59 seconds' });
    expect(throttled.headers['retry-after']).toBe('59');
    // The guesser is refused before its credential is looked at, the right one included.
    expect((await send(guesser, scoreUrl, { method: 'POST', auth: `Bearer ${tool.apiKey}`, body: { score: 0.5 } })).status).toBe(429);
    // The tool's own server, elsewhere, is not slowed.
    expect((await send('127.0.0.3', scoreUrl, { method: 'POST', auth: `Bearer ${tool.apiKey}`, body: { score: 0.5 } })).status).toBe(200);
    // Another tool's key from the guesser's address is its own prefix: still judged (401, not 429).
    expect((await send(guesser, scoreUrl, { method: 'POST', auth: `Bearer ltiaas_app_${'a'.repeat(24)}_${guess()}`, body: { score: 0.5 } })).status).toBe(401);
    // Logged once for the window, by the request that filled the bucket.
    const lines = throttledLines().filter((l) => l['bucket'] === 'credential' && l['credential'] === `api_key:${tool.app.id}`);
    expect(lines).toHaveLength(1);
  });
});

describe('guessing from one address (per client address)', () => {
  it('after 6 failures every credential from it is 429, others are served; a second instance sees the same counts', async () => {
    const guesser = '127.0.0.4';
    // Each guess names another tool, so no credential prefix fills up: only the address does.
    for (let failures = 0; failures < 6; failures += 1) {
      // Spread over both instances: they count into one store.
      const via = failures % 2 === 0 ? server : twin;
      const answer = await send(guesser, scoreUrl.replace(server.url, via.url), { method: 'POST', auth: `Bearer ltiaas_${randomApp()}_${guess()}`, body: { score: 0.5 } });
      expect(answer.status).toBe(401);
    }
    for (const via of [server, twin]) {
      const answer = await send(guesser, rowUrl.replace(server.url, via.url), { auth: studentAuth });
      expect(answer.status).toBe(429);
      expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
    }
    expect((await send('127.0.0.5', rowUrl, { auth: studentAuth })).status).toBe(200);
    expect(throttledLines().filter((l) => l['bucket'] === 'address' && l['address'] === guesser)).toHaveLength(1);
  });

  it('a request with no credential, or an expired one, is not a guess and is not throttled', async () => {
    for (let i = 0; i < 8; i += 1) expect((await send('127.0.0.6', rowUrl)).status).toBe(401);
    expect((await send('127.0.0.6', rowUrl, { auth: studentAuth })).status).toBe(200);
  });
});

describe('dashboard login', () => {
  it('guessed tokens are throttled; the platform token from another address is served', async () => {
    const apps = `${server.url}/dashboard/v1/apps`;
    for (let i = 0; i < 3; i += 1) {
      expect((await send('127.0.0.7', apps, { auth: `Bearer tisb_${guess()}` })).status).toBe(401);
    }
    const throttled = await send('127.0.0.7', apps, { auth: `Bearer tisb_${guess()}` });
    expect(throttled.status).toBe(429);
    expect(throttled.headers['retry-after']).toBeDefined();
    expect((await send('127.0.0.8', apps, { auth: `Bearer ${platformToken(server)}` })).status).toBe(200);
  });
});

describe('behind trusted proxies (TRUST_PROXY=loopback on the first instance, none on the twin)', () => {
  const proxy = '127.0.0.9';
  const through = (client: string): Record<string, string> => ({ 'x-forwarded-for': client });

  it('a client guessing through the proxy gets 429; another client behind the same proxy is served', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 100; i += 1) {
      const guessed = await send(proxy, scoreUrl, { method: 'POST', auth: `Bearer ltiaas_${randomApp()}_${guess()}`, body: { score: 0.5 }, headers: through('203.0.113.7') });
      statuses.push(guessed.status);
    }
    expect(statuses.slice(0, 6)).toEqual(Array(6).fill(401));
    expect(new Set(statuses.slice(6))).toEqual(new Set([429]));
    const other = await send(proxy, rowUrl, { auth: studentAuth, headers: through('203.0.113.8') });
    expect(other.status).toBe(200);
    // The bucket, the throttle's line and the access lines name the client the proxy named, not the proxy.
    expect(throttledLines().filter((l) => l['bucket'] === 'address').map((l) => l['address'])).toContain('203.0.113.7');
    const access = server.logs.find((l) => l['request_id'] === other.headers['request-id'] && l['msg'] === 'request');
    expect(access).toMatchObject({ status: 200, client_address: '203.0.113.8' });
    // The proxy's own address was never counted: a request it sends for itself is served.
    expect((await send(proxy, rowUrl, { auth: studentAuth })).status).toBe(200);
  });

  it('without TRUST_PROXY, a new X-Forwarded-For per request does not escape the throttle', async () => {
    const guesser = '127.0.0.10';
    const statuses: number[] = [];
    const ids = new Set<unknown>();
    for (let i = 0; i < 10; i += 1) {
      const via = scoreUrl.replace(server.url, twin.url);
      const guessed = await send(guesser, via, { method: 'POST', auth: `Bearer ltiaas_${randomApp()}_${guess()}`, body: { score: 0.5 }, headers: through(`198.51.100.${i + 1}`) });
      statuses.push(guessed.status);
      ids.add(guessed.headers['request-id']);
    }
    expect(statuses).toEqual([...Array(6).fill(401), ...Array(4).fill(429)]);
    const access = twin.logs.filter((l) => l['msg'] === 'request' && ids.has(l['request_id']));
    expect(access.map((l) => l['client_address'])).toEqual(Array(10).fill(guesser));
  });
});

describe("the service's own calls to its Sandbox LMS", () => {
  it("are not throttled by a burst of wrong keys from the service's own address: scores succeed, the picker works", async () => {
    // The service reaches its Sandbox LMS at its own listening address, 127.0.0.1: fill that address's bucket.
    for (let i = 0; i < 8; i += 1) {
      await send('127.0.0.1', scoreUrl, { method: 'POST', auth: `Bearer ltiaas_${randomApp()}_${guess()}`, body: { score: 0.1 } });
    }
    expect((await send('127.0.0.1', rowUrl, { auth: studentAuth })).status).toBe(429);
    // A valid score from elsewhere: published to the Sandbox's gradebook, over HTTP to 127.0.0.1.
    const scored = await send('127.0.0.11', scoreUrl, { method: 'POST', auth: `Bearer ${tool.apiKey}`, body: { score: 0.75 } });
    expect(scored.status).toBe(200);
    expect(scored.body['status']).toBe('success');
    // The Sandbox picker: its control calls to the Sandbox LMS, then the tool's locations URL.
    const picker = await send('127.0.0.11', `${server.url}/dashboard/v1/apps/${tool.app.id}/sandbox/picker`, { method: 'POST', auth: `Bearer ${platformToken(server)}` });
    expect(picker.status, JSON.stringify(picker.body)).toBe(200);
    expect(JSON.stringify(picker.body)).toContain('quiz-9');
  });
});

describe('the metrics (a Prometheus scrape after the traffic above)', () => {
  it('/metrics takes the platform token; METRICS_PORT serves the same text without one; it parses and counts', async () => {
    const metricsPath = `${server.url}/metrics`;
    expect((await send('127.0.0.12', metricsPath)).status).toBe(401);
    expect((await send('127.0.0.12', metricsPath, { auth: `Bearer tisb_${guess()}` })).status).toBe(401);
    // From an address that never failed: the dashboard's credential bucket is full since the login test above.
    const viaToken = await send('127.0.0.13', metricsPath, { auth: `Bearer ${platformToken(server)}` });
    expect(viaToken.status).toBe(200);
    expect(viaToken.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(server.running.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const open = await fetch(server.running.metricsUrl as string);
    expect(open.status).toBe(200);
    expect((await fetch((server.running.metricsUrl as string).replace('/metrics', '/v1/x'))).status).toBe(404);

    const families = parsePrometheus(await open.text());
    const samples = (name: string) => families.get(name)?.samples ?? [];
    const value = (name: string, labels: Record<string, string> = {}): number =>
      samples(name)
        .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((sum, s) => sum + s.value, 0);

    expect(families.get('http_request_duration_seconds')?.type).toBe('histogram');
    const labelSets = samples('http_request_duration_seconds_count').map((s) => s.labels);
    // Labels name operations and templates only, never a path as sent (no IDs).
    for (const labels of labelSets) {
      expect(Object.keys(labels).sort()).toEqual(['method', 'operation', 'status']);
      expect(labels['operation']).not.toMatch(/app_|ctx_|loc_|mem_|\/v1\//);
    }
    expect(value('http_request_duration_seconds_count', { method: 'GET', status: '200', operation: 'getMemberRow' })).toBeGreaterThan(0);
    expect(value('http_request_duration_seconds_count', { method: 'POST', status: '200', operation: 'submitScore' })).toBeGreaterThan(0);
    expect(value('http_request_duration_seconds_count', { status: '429' })).toBeGreaterThan(0);
    expect(value('http_request_duration_seconds_count', { operation: '/metrics', method: 'GET', status: '401' })).toBe(2);
    expect(value('http_request_duration_seconds_sum')).toBeGreaterThan(0);
    expect(value('tis_score_attempts_total', { outcome: 'success' })).toBeGreaterThanOrEqual(1);
    expect(families.get('tis_score_attempts_total')?.type).toBe('counter');
    // 100 + 8 + 3 + ... refusals on this instance; the twin counts its own.
    expect(value('tis_auth_failures_total')).toBeGreaterThanOrEqual(6 + 3 + 8);
    expect(value('tis_auth_throttled_total')).toBeGreaterThanOrEqual(94);
    expect(value('tis_lms_request_duration_seconds_count', { kind: 'score' })).toBeGreaterThanOrEqual(1);
    expect(value('tis_lms_request_duration_seconds_count', { kind: 'token' })).toBeGreaterThanOrEqual(1);
    expect(value('tis_tool_request_duration_seconds_count', { kind: 'locations' })).toBe(1);
    expect(value('process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(value('nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    // The pool's gauges on PostgreSQL; SQLite has no pool.
    if (server.services.store.driver.poolStats) {
      expect(value('tis_db_pool_max')).toBeGreaterThan(0);
      expect(value('tis_db_pool_size')).toBeGreaterThan(0);
      expect(families.get('tis_db_pool_waiting')?.type).toBe('gauge');
    } else expect(families.has('tis_db_pool_size')).toBe(false);
  });
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Prometheus's text format (0.0.4), strictly: HELP and TYPE once per family and before its samples, names
 * and label names as the format allows, quoted and escaped label values, float values; a histogram's
 * buckets ascend, never decrease, end at +Inf and equal its _count.
 */
function parsePrometheus(text: string): Map<string, { type: string; help: string; samples: Sample[] }> {
  const families = new Map<string, { type: string; help: string; samples: Sample[] }>();
  const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  expect(text.endsWith('\n')).toBe(true);
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      const [, kind, name = '', rest = ''] = meta;
      expect(name, line).toMatch(NAME);
      const family = families.get(name) ?? { type: '', help: '', samples: [] };
      families.set(name, family);
      expect(family.samples, `${name}: ${kind} after samples`).toHaveLength(0);
      if (kind === 'TYPE') {
        expect(['counter', 'gauge', 'histogram', 'summary', 'untyped'], line).toContain(rest);
        expect(family.type, `${name}: two TYPE lines`).toBe('');
        family.type = rest;
      } else family.help = rest;
      continue;
    }
    expect(line.startsWith('#'), line).toBe(false);
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
    expect(sample, `not a sample line: ${line}`).not.toBeNull();
    const [, name = '', labelText = '', raw = ''] = sample as RegExpExecArray;
    const labels: Record<string, string> = {};
    const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/y;
    let at = 0;
    while (at < labelText.length) {
      LABEL.lastIndex = at;
      const label = LABEL.exec(labelText);
      expect(label, `bad labels in ${line}`).not.toBeNull();
      const [whole, key = '', escaped = ''] = label as RegExpExecArray;
      expect(labels[key], `label ${key} twice in ${line}`).toBeUndefined();
      labels[key] = escaped.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c));
      at += whole.length;
    }
    // Prometheus reads values as Go's ParseFloat does: NaN in any case (prom-client writes `Nan`), ±Inf.
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : /^nan$/i.test(raw) ? Number.NaN : Number(raw);
    expect(/^nan$/i.test(raw) || (!Number.isNaN(value) && /^[-+]?(\d|\.\d)/.test(raw)), line).toBe(true);
    const base = name.replace(/_(bucket|sum|count|total|created)$/, '');
    const family = families.get(name) ?? families.get(base);
    expect(family, `sample before its TYPE: ${line}`).toBeDefined();
    family?.samples.push({ name, labels, value });
  }
  for (const [name, family] of families) {
    // Samples are kept under the family's name; index them by sample name too, for the test's reads.
    for (const s of family.samples) {
      if (s.name === name) continue;
      const own = families.get(s.name) ?? { type: 'sample', help: '', samples: [] };
      own.samples.push(s);
      families.set(s.name, own);
    }
    if (family.type !== 'histogram') continue;
    const series = new Map<string, Sample[]>();
    for (const s of family.samples.filter((x) => x.name === `${name}_bucket`)) {
      const { le, ...rest } = s.labels;
      expect(le, `${name}: bucket without le`).toBeDefined();
      const key = JSON.stringify(Object.entries(rest).sort());
      series.set(key, [...(series.get(key) ?? []), s]);
    }
    for (const [key, buckets] of series) {
      const bounds = buckets.map((b) => (b.labels['le'] === '+Inf' ? Infinity : Number(b.labels['le'])));
      expect(bounds, `${name} ${key}`).toEqual([...bounds].sort((a, b) => a - b));
      expect(bounds.at(-1)).toBe(Infinity);
      const counts = buckets.map((b) => b.value);
      expect(counts, `${name} ${key}: buckets decrease`).toEqual([...counts].sort((a, b) => a - b));
      const count = family.samples.find((x) => x.name === `${name}_count` && JSON.stringify(Object.entries(x.labels).sort()) === key);
      expect(count?.value).toBe(counts.at(-1));
    }
  }
  return families;
}

describe('the window', () => {
  it('ends: after it the guesser is judged again', async () => {
    clock.advance(60_000);
    expect((await send('127.0.0.4', rowUrl, { auth: studentAuth })).status).toBe(200);
    expect((await send('127.0.0.7', `${server.url}/dashboard/v1/apps`, { auth: `Bearer ${platformToken(server)}` })).status).toBe(200);
  });
});
