/**
 * The contract front (PERF-60): contract paths are served on plain node:http objects, without Express.
 * Its answers must be the Express chain's, so each request below is sent both to the service's own server
 * (the front) and to the Express app alone (`createApp` on a server of the test's own, the same services),
 * and the two answers are compared, status, headers and body, but for what differs per request.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../server/app.js';
import { splitTarget } from '../../../server/http/front.js';
import type { TestLaunch, TestServer } from '../harness.js';
import { createTool, launch, placeLocation, startServer } from '../harness.js';

let server: TestServer;
let express: Server;
let expressUrl: string;
let student: TestLaunch;

beforeAll(async () => {
  server = await startServer();
  const tool = await createTool(server);
  const placed = await placeLocation(server, { app: tool.app.id });
  student = await launch(server, { placed });
  express = createServer(createApp(server.services));
  await new Promise<void>((resolve) => express.listen(0, '127.0.0.1', resolve));
  expressUrl = `http://127.0.0.1:${(express.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => express?.close(resolve));
  await server?.stop();
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One raw request (the target as written, no client normalization), read whole. */
function send(origin: string, method: string, target: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const url = new URL(origin);
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

/** What may differ between two answers to the same request: the request id, the date, the connection. */
function comparable(answer: Answer): Answer {
  const { date: _date, 'request-id': requestId, 'keep-alive': _keepAlive, connection: _connection, ...headers } = answer.headers;
  return { status: answer.status, headers, body: requestId ? answer.body.replaceAll(String(requestId), '<id>') : answer.body };
}

async function sameAnswer(method: string, target: (origin: string) => string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const viaFront = await send(server.url, method, target(server.url), headers, body);
  const viaExpress = await send(expressUrl, method, target(expressUrl), headers, body);
  expect(comparable(viaFront)).toEqual(comparable(viaExpress));
  return viaFront;
}

const storagePath = (): string => new URL(student.claims.storage.member).pathname;

describe('the contract front answers as the Express chain did', () => {
  it('a GET of a row, with and without a query string', async () => {
    await send(server.url, 'PUT', storagePath(), { Authorization: student.auth, 'Content-Type': 'application/json' }, '{"level":3}');
    await sameAnswer('PUT', storagePath, { Authorization: student.auth, 'Content-Type': 'application/json' }, '{"level":3}');
    const plain = await sameAnswer('GET', storagePath, { Authorization: student.auth });
    expect(plain.status).toBe(200);
    expect(plain.headers['cache-control']).toBe('no-store');
    expect(plain.headers['contract-version']).toBe('2026-09-21');
    await sameAnswer('GET', () => `${storagePath()}?a=1&a=2&b`, { Authorization: student.auth });
  });

  it('malformed percent-encoding in a path parameter', async () => {
    const answer = await sameAnswer('GET', () => storagePath().replace(/members\/[^/]+/, 'members/%E0%A4%A'), { Authorization: student.auth });
    expect(answer.status).toBe(404);
  });

  it('HEAD, OPTIONS and a method the path does not have (405 with Allow)', async () => {
    for (const method of ['HEAD', 'OPTIONS', 'POST']) {
      const answer = await sameAnswer(method, storagePath, { Authorization: student.auth });
      expect(answer.status).toBe(405);
      expect(answer.headers['allow']).toBeDefined();
    }
  });

  it('conditional requests (If-None-Match: * is fresh to Express: 304)', async () => {
    await sameAnswer('GET', storagePath, { Authorization: student.auth, 'If-None-Match': '*' });
    await sameAnswer('GET', storagePath, { Authorization: student.auth, 'If-Modified-Since': new Date().toUTCString() });
  });

  it('an absolute-form target, an unknown Contract-Version, no credential, a bad body', async () => {
    await sameAnswer('GET', (origin) => `${origin}${storagePath()}`, { Authorization: student.auth });
    await sameAnswer('GET', storagePath, { Authorization: student.auth, 'Contract-Version': '2025-01-01' });
    await sameAnswer('GET', storagePath);
    // A target the URL parser throws on is Express's, as it was.
    await sameAnswer('GET', () => `http://[bad${storagePath()}`, { Authorization: student.auth });
    await sameAnswer('PUT', storagePath, { Authorization: student.auth, 'Content-Type': 'application/json' }, '{"level":');
    await sameAnswer('PUT', storagePath, { Authorization: student.auth, 'Content-Type': 'text/plain' }, 'x');
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
