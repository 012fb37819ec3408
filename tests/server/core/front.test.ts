/**
 * The one request pipeline (decisions PERF-60, KIT-63): every request enters it on the front's `node:http`
 * objects; a contract operation's path is served on them without Express, with Express's semantics (the
 * answers below were the Express chain's, compared side by side while two chains existed), and any other
 * path is handed to the Express app with the same context, headers and access line.
 */
import { request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitTarget } from '../../../server/http/front.js';
import type { TestLaunch, TestServer } from '../harness.js';
import { createTool, launch, placeLocation, startServer } from '../harness.js';

let server: TestServer;
let student: TestLaunch;

beforeAll(async () => {
  server = await startServer();
  const tool = await createTool(server);
  const placed = await placeLocation(server, { app: tool.app.id });
  student = await launch(server, { placed });
});
afterAll(async () => {
  await server?.stop();
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One raw request (the target as written, no client normalization), read whole. */
function send(method: string, target: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const storagePath = (): string => new URL(student.claims.storage.member).pathname;
const json = { Authorization: '', 'Content-Type': 'application/json' };

describe('a contract path, served on the front\'s objects with Express\'s semantics', () => {
  it('a GET of a row, with and without a query string', async () => {
    expect((await send('PUT', storagePath(), { ...json, Authorization: student.auth }, '{"level":3}')).status).toBe(204);
    const plain = await send('GET', storagePath(), { Authorization: student.auth });
    expect(plain.status).toBe(200);
    expect(plain.headers['cache-control']).toBe('no-store');
    expect(plain.headers['contract-version']).toBe('2026-09-21');
    expect(plain.headers['vary']).toBe('Contract-Version');
    expect(plain.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(plain.headers['request-id']).toMatch(/^req_/);
    expect(Number(plain.headers['content-length'])).toBe(Buffer.byteLength(plain.body));
    expect(plain.body).toContain('"level":3');
    const queried = await send('GET', `${storagePath()}?a=1&a=2&b`, { Authorization: student.auth });
    expect(queried.status).toBe(200);
    expect(queried.body).toBe(plain.body);
  });

  it('malformed percent-encoding in a path parameter', async () => {
    const answer = await send('GET', storagePath().replace(/members\/[^/]+/, 'members/%E0%A4%A'), { Authorization: student.auth });
    expect(answer.status).toBe(404);
    expect(answer.headers['content-type']).toBe('application/problem+json');
  });

  it('HEAD, OPTIONS and a method the path does not have (405 with Allow)', async () => {
    for (const method of ['HEAD', 'OPTIONS', 'POST']) {
      const answer = await send(method, storagePath(), { Authorization: student.auth });
      expect(answer.status).toBe(405);
      expect(answer.headers['allow']).toBeDefined();
    }
  });

  it('conditional requests: If-None-Match: * is fresh (304, no body), a date alone is not', async () => {
    const fresh = await send('GET', storagePath(), { Authorization: student.auth, 'If-None-Match': '*' });
    expect(fresh.status).toBe(304);
    expect(fresh.body).toBe('');
    const dated = await send('GET', storagePath(), { Authorization: student.auth, 'If-Modified-Since': new Date().toUTCString() });
    expect(dated.status).toBe(200);
  });

  it('an absolute-form target, an unknown Contract-Version, no credential, a bad body, a target the URL parser throws on', async () => {
    expect((await send('GET', `${server.url}${storagePath()}`, { Authorization: student.auth })).status).toBe(200);
    const unknown = await send('GET', storagePath(), { Authorization: student.auth, 'Contract-Version': '2025-01-01' });
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.body)).toMatchObject({ code: 'unknown_contract_version' });
    expect((await send('GET', storagePath())).status).toBe(401);
    // Handed to Express, whose router answers it in the problem envelope, with the request's context.
    const unparsable = await send('GET', `http://[bad${storagePath()}`, { Authorization: student.auth });
    expect(unparsable.status).toBeGreaterThanOrEqual(400);
    expect(unparsable.status).toBeLessThan(500);
    expect(unparsable.headers['request-id']).toMatch(/^req_/);
    expect((await send('PUT', storagePath(), { ...json, Authorization: student.auth }, '{"level":')).status).toBe(422);
    expect((await send('PUT', storagePath(), { Authorization: student.auth, 'Content-Type': 'text/plain' }, 'x')).status).toBe(415);
  });
});

describe('any other path, handed to the Express app after the same steps', () => {
  it('carries the request id, the contract headers, no-store with a credential, and is throttled like a contract path', async () => {
    const health = await send('GET', '/healthz', { 'Request-Id': 'health-check-0001' });
    expect(health.status).toBe(200);
    expect(health.headers['request-id']).toBe('health-check-0001');
    expect(health.headers['contract-version']).toBe('2026-09-21');
    const dashboard = await send('GET', '/dashboard/v1/me', { Authorization: 'Bearer tisb_not-a-token' });
    expect(dashboard.status).toBe(401);
    expect(dashboard.headers['cache-control']).toBe('no-store');
    expect(dashboard.headers['contract-version']).toBe('2026-09-21');
    expect(server.logs.some((l) => l['request_id'] === 'health-check-0001' && l['msg'] === 'request' && l['status'] === 200)).toBe(true);
  });
});

describe('the front itself', () => {
  it('logs 499 for a request whose client went away before the answer', async () => {
    const id = `aborted-${Date.now()}-body`;
    await new Promise<void>((resolve) => {
      const url = new URL(student.claims.storage.member);
      const req = httpRequest({
        host: url.hostname,
        port: url.port,
        method: 'PUT',
        path: url.pathname,
        headers: { Authorization: student.auth, 'Content-Type': 'application/json', 'Content-Length': '100', 'Request-Id': id },
      });
      req.on('error', () => resolve());
      req.write('{"level":');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 200);
    });
    let line: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && !line; i += 1) {
      await new Promise((r) => setTimeout(r, 20));
      line = server.logs.find((l) => l['request_id'] === id && l['msg'] === 'request aborted by the client');
    }
    expect(line).toMatchObject({ status: 499, method: 'PUT', level: 'warn' });
  });

  it('splits a target as parseurl does', () => {
    expect(splitTarget('/v1/a?b=1?c')).toEqual({ pathname: '/v1/a', query: 'b=1?c' });
    expect(splitTarget('/v1/a')).toEqual({ pathname: '/v1/a', query: null });
    expect(splitTarget('/v1/a#x?y')).toEqual({ pathname: '/v1/a', query: null });
    expect(splitTarget('*')).toEqual({ pathname: '*', query: null });
    expect(splitTarget('http://h/v1/a?q')).toEqual({ pathname: '/v1/a', query: 'q' });
  });
});
