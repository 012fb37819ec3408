/**
 * Credential guessing is throttled (decision H-05), over real HTTP from several loopback addresses (the
 * client address is the TCP peer): after a burst of failed authentications, 429 with `Retry-After`,
 * logged once per window; valid credentials from other addresses are not slowed; the counters live in
 * the store, so a second instance on the same store sees them. Runs on SQLite and PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../store/helpers.js';
import { createTool, launch, placeLocation, startServer, type TestServer, type Tool } from '../harness.js';
import { platformToken } from '../dashboard/helpers.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

/** One request sent from `from` (a 127.0.0.0/8 address), so the service sees that client address. */
function send(from: string, url: string, options: { method?: string; auth?: string; body?: unknown } = {}): Promise<Answer> {
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
          ...(options.auth ? { authorization: options.auth } : {}),
          ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const guess = (): string => randomBytes(32).toString('base64url').slice(0, 43);
const clock = new ManualClock(Math.floor(Date.now() / 60_000) * 60_000 + 1_000);

let server: TestServer;
let twin: TestServer;
let tool: Tool;
let scoreUrl: string;
let rowUrl: string;
let studentAuth: string;

beforeAll(async () => {
  server = await startServer({ clock, config: { authFailuresPerAddress: 6, authFailuresPerCredential: 3 } });
  // A second instance on the same store (the same SQLite file, or the same PostgreSQL schema).
  twin = await startServer({ clock, dataDir: server.dataDir, config: { authFailuresPerAddress: 6, authFailuresPerCredential: 3 } });
  tool = await createTool(server);
  const placed = await placeLocation(server, { app: tool.app.id, type: 'assessment' });
  const student = await launch(server, { placed, groups: ['student'] });
  studentAuth = student.auth;
  rowUrl = student.claims.storage.member;
  scoreUrl = `${server.url}/v1/contexts/${placed.context.id}/apps/${tool.app.id}/locations/${placed.location.id}/members/${student.member.id}/scores`;
});
afterAll(async () => {
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
    const randomApp = (): string => `app_${Array.from(randomBytes(24), (b) => 'abcdefghijklmnopqrstuvwxyz234567'[b % 32]).join('')}`;
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

describe('the window', () => {
  it('ends: after it the guesser is judged again', async () => {
    clock.advance(60_000);
    expect((await send('127.0.0.4', rowUrl, { auth: studentAuth })).status).toBe(200);
    expect((await send('127.0.0.7', `${server.url}/dashboard/v1/apps`, { auth: `Bearer ${platformToken(server)}` })).status).toBe(200);
  });
});
