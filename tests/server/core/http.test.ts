/**
 * The HTTP envelope of every answer, over real HTTP against the real app: problem bodies, request ids
 * and logs, contract headers, 404/405/415/413/400, the precedence of GAP-23, and the health check.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlacedLocation, TestLaunch, TestServer, Tool } from '../harness.js';
import { contract20260921 } from '../../../server/contracts/2026-09-21/index.js';
import { createTool, launch, placeLocation, problemOf, startServer } from '../harness.js';

let server: TestServer;
let tool: Tool;
let placed: PlacedLocation;
let unprovisioned: PlacedLocation;
let student: TestLaunch;
let studentOfUnprovisioned: TestLaunch;

beforeAll(async () => {
  server = await startServer();
  tool = await createTool(server);
  placed = await placeLocation(server, { app: tool.app.id });
  unprovisioned = await placeLocation(server, { app: tool.app.id, provisionContext: false, provisionLocation: false });
  student = await launch(server, { placed });
  studentOfUnprovisioned = await launch(server, { placed: unprovisioned });
});
afterAll(async () => server?.stop());

const json = (auth: string | null, body: string, contentType = 'application/json'): RequestInit => ({
  method: 'PUT',
  headers: { ...(auth ? { Authorization: auth } : {}), 'Content-Type': contentType },
  body,
});

describe('problem envelope (NS-15)', () => {
  it('answers application/problem+json with the request id', async () => {
    const res = await fetch(`${server.url}/v1/nowhere`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ type: 'about:blank', title: 'Not Found', status: 404, code: 'not_found' });
    expect(body['request_id']).toBe(res.headers.get('request-id'));
  });
});

describe('request ids and logs', () => {
  it('keeps a sane incoming Request-Id and puts it on every log line of the request', async () => {
    const id = 'trace-0123456789abcdef';
    const res = await fetch(student.claims.storage.member, { headers: { Authorization: student.auth, 'Request-Id': id } });
    expect(res.status).toBe(200);
    expect(res.headers.get('request-id')).toBe(id);
    await new Promise((r) => setTimeout(r, 20));
    const lines = server.logs.filter((l) => l['request_id'] === id);
    const access = lines.find((l) => l['msg'] === 'request');
    expect(access).toMatchObject({
      method: 'GET',
      path: '/v1/contexts/{context_id}/apps/{app_id}/members/{member_id}/storage',
      status: 200,
      level: 'info',
    });
    expect(typeof access?.['duration_ms']).toBe('number');
  });

  it('replaces an incoming id that is not safe to echo', async () => {
    const res = await fetch(`${server.url}/healthz`, { headers: { 'Request-Id': 'bad id with spaces and \u00e9' } });
    const id = res.headers.get('request-id') ?? '';
    expect(id).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
  });
});

describe('contract headers (NS-18)', () => {
  it('every response carries Contract-Version and Vary', async () => {
    for (const res of [await fetch(`${server.url}/healthz`), await fetch(`${server.url}/nope`), await fetch(`${server.url}/.well-known/jwks.json`)]) {
      expect(res.headers.get('contract-version')).toBe('2026-09-21');
      expect(res.headers.get('vary')).toMatch(/Contract-Version/);
    }
  });

  it('refuses an unknown Contract-Version with 400', async () => {
    const res = await fetch(`${server.url}/.well-known/jwks.json`, { headers: { 'Contract-Version': '2025-01-01' } });
    const p = await problemOf(res);
    expect(p.status).toBe(400);
    expect(p.detail).toBe('unknown Contract-Version "2025-01-01"; served versions: 2026-09-21, 2026-08-25, 2026-08-19');
  });

  it('serves an archived contract named explicitly, under its own Contract-Version', async () => {
    for (const version of ['2026-08-25', '2026-08-19']) {
      const res = await fetch(`${server.url}/.well-known/jwks.json`, { headers: { 'Contract-Version': version } });
      expect(res.status).toBe(200);
      expect(res.headers.get('contract-version')).toBe(version);
    }
  });

  it('says a known contract that a build does not serve is not served (400), without a 500', async () => {
    const only = await startServer({ contracts: [contract20260921] });
    try {
      const res = await fetch(`${only.url}/.well-known/jwks.json`, { headers: { 'Contract-Version': '2026-08-25' } });
      expect(await problemOf(res)).toMatchObject({ status: 400, code: 'contract_not_served', detail: 'contract 2026-08-25 is not served by this build' });
    } finally {
      await only.stop();
    }
  });

  it('accepts the current contract named explicitly', async () => {
    const res = await fetch(`${server.url}/.well-known/jwks.json`, { headers: { 'Contract-Version': '2026-09-21' } });
    expect(res.status).toBe(200);
  });
});

describe('404, 405 (GAP-15)', () => {
  it('404 for an unknown path, including removed endpoints (L-07)', async () => {
    for (const path of ['/v1/grades', '/v1/apps/me', '/v1/apps/me/locations', '/v1/contexts/x/apps/y/storage/extra']) {
      expect((await fetch(`${server.url}${path}`)).status).toBe(404);
    }
  });

  it('405 with Allow for an unlisted method on a known path', async () => {
    const res = await fetch(student.claims.storage.context, { method: 'DELETE', headers: { Authorization: student.auth } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, PATCH, PUT');
    expect((await problemOf(res)).code).toBe('method_not_allowed');
    const post = await fetch(`${server.url}/.well-known/jwks.json`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
  });
});

describe('request bodies', () => {
  it('415 for another Content-Type on a JSON body (GAP-14)', async () => {
    const res = await fetch(student.claims.storage.member, json(student.auth, '{"a":1}', 'text/plain'));
    const p = await problemOf(res);
    expect(p.status).toBe(415);
    expect(p.detail).toBe('Content-Type must be application/json');
  });

  it('accepts application/json with a UTF-8 charset and refuses another charset', async () => {
    expect((await fetch(student.claims.storage.member, json(student.auth, '{"a":1}', 'application/json; charset=utf-8'))).status).toBe(204);
    expect((await fetch(student.claims.storage.member, json(student.auth, '{"a":1}', 'application/json; charset=latin1'))).status).toBe(415);
  });

  it('422 for malformed JSON on a row, whose spec declares no 400 (H-02)', async () => {
    const res = await fetch(student.claims.storage.member, json(student.auth, '{"a": }'));
    const p = await problemOf(res);
    expect(p.status).toBe(422);
    expect(p.code).toBe('malformed_json');
    expect(p.detail).toMatch(/^request body is not valid JSON: /);
  });

  it('413 for a body over the HTTP limit, before reading it all', async () => {
    const limit = server.services.config.httpBodyLimitBytes;
    const big = `{"a":"${'x'.repeat(limit)}"}`;
    const res = await fetch(student.claims.storage.member, json(student.auth, big));
    const p = await problemOf(res);
    expect(p.status).toBe(413);
    expect(p.detail).toBe(`request body exceeds the HTTP limit of ${limit} bytes`);
  });

  it('413 also when the size is not announced (chunked)', async () => {
    const limit = server.services.config.httpBodyLimitBytes;
    const url = new URL(student.claims.storage.member);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: url.hostname, port: url.port, path: url.pathname, method: 'PUT', headers: { Authorization: student.auth, 'Content-Type': 'application/json' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      const chunk = 'x'.repeat(64 * 1024);
      req.write('{"a":"');
      let sent = 0;
      const pump = (): void => {
        while (sent <= limit) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', pump);
            return;
          }
        }
        req.end('"}');
      };
      pump();
    });
    expect(status).toBe(413);
  });

  it('an empty body is no body: a PUT without one is refused, never an empty row', async () => {
    await fetch(student.claims.storage.member, json(student.auth, '{"kept":true}'));
    const res = await fetch(student.claims.storage.member, json(student.auth, ''));
    expect(res.status).toBe(422);
    const row = await fetch(student.claims.storage.member, { headers: { Authorization: student.auth } });
    expect(await row.json()).toEqual({ kept: true });
  });
});

describe('validation failures through the real validator', () => {
  const post = (url: string, body: string) =>
    fetch(url, { method: 'POST', headers: { Authorization: student.auth, 'Content-Type': 'application/json' }, body });
  const send = (method: string, url: string, body: string) =>
    fetch(url, { method, headers: { Authorization: student.auth, 'Content-Type': 'application/json' }, body });

  it.each([
    ['{"score":1.5}', 'score must be between 0 and 1'],
    ['{"score":0.5,"max_score":0}', 'max_score must be greater than 0'],
    ['{"score":0.5,"activity_progress":"Done"}', 'activity_progress must be one of [Completed, Submitted]'],
    ['{"score":0.5,"grading_progress":"Done"}', 'grading_progress must be one of [FullyGraded, Pending]'],
    ['{}', 'score is required'],
    ['{"score":"0.5"}', 'score must be a number'],
    ['{"score":0.5,"points":10}', 'unknown field: points'],
  ])('score body %s → 422 %s', async (body, detail) => {
    const p = await problemOf(await post(student.claims.grade.submit!, body));
    expect({ status: p.status, detail: p.detail }).toEqual({ status: 422, detail });
    expect(Array.isArray(p.body['errors'])).toBe(true);
  });

  it('lists every failure of a request in errors', async () => {
    const p = await problemOf(await post(student.claims.grade.submit!, '{"score":2,"max_score":-1,"extra":true}'));
    const errors = p.body['errors'] as Array<{ path: string; message: string }>;
    expect(errors).toEqual(
      expect.arrayContaining([
        { path: '/body/score', message: 'score must be between 0 and 1' },
        { path: '/body/max_score', message: 'max_score must be greater than 0' },
        { path: '/body/extra', message: 'unknown field: extra' },
      ]),
    );
  });

  it('a PATCH without the wrapper, or with keys beside it, is 422 (GAP-13)', async () => {
    for (const body of ['[{"op":"add","path":"/a","value":1}]', '{"patch":[],"also":1}', '{"ops":[]}']) {
      const p = await problemOf(await send('PATCH', student.claims.storage.member, body));
      expect({ status: p.status, detail: p.detail }).toEqual({ status: 422, detail: 'PATCH body must be an object with the single key "patch"' });
    }
    const p = await problemOf(await send('PATCH', student.claims.storage.member, '{"patch":[{"op":"jump","path":"/a"}]}'));
    expect(p.status).toBe(422);
    expect(p.detail).toMatch(/^patch operation 0 /);
  });

  it('an invalid file key is 422 on every method (GAP-03); a size over 25 MB is 422 (GAP-04)', async () => {
    const bad = `${student.claims.files.member}/.hidden`;
    for (const method of ['GET', 'DELETE']) {
      const p = await problemOf(await fetch(bad, { method, headers: { Authorization: student.auth } }));
      expect({ status: p.status, code: p.code }).toEqual({ status: 422, code: 'invalid_file_key' });
    }
    expect((await problemOf(await send('PUT', bad, '{"size":1}'))).code).toBe('invalid_file_key');
    const p = await problemOf(await send('PUT', `${student.claims.files.member}/big.bin`, '{"size":26214401}'));
    expect({ status: p.status, detail: p.detail }).toEqual({ status: 422, detail: 'size must be at most 26214400 bytes (25 MB)' });
  });

  it('a body nested absurdly deep is refused, not a crash', async () => {
    const p = await problemOf(await send('PUT', student.claims.storage.member, `${'['.repeat(600)}${']'.repeat(600)}`));
    expect(p.status).toBe(422);
    expect(p.code).toBe('body_too_deep');
  });
});

describe('precedence (GAP-23)', () => {
  it('an unauthenticated malformed body gets 401', async () => {
    const res = await fetch(student.claims.storage.member, json(null, '{"a": '));
    expect((await problemOf(res)).detail).toBe('Missing bearer token');
  });

  it('an unauthenticated body of the wrong type gets 401, not 415', async () => {
    const res = await fetch(student.claims.storage.member, json(null, 'hello', 'text/plain'));
    expect(res.status).toBe(401);
  });

  it('a student writing to an unprovisioned context row gets 403, not 422', async () => {
    const res = await fetch(studentOfUnprovisioned.claims.storage.context, json(studentOfUnprovisioned.auth, '{"a":1}'));
    const p = await problemOf(res);
    expect(p.status).toBe(403);
    expect(p.detail).toBe('students may read but not write the context and location rows');
  });

  it('a student reading an unprovisioned context row gets the state 422', async () => {
    const res = await fetch(studentOfUnprovisioned.claims.storage.context, { headers: { Authorization: studentOfUnprovisioned.auth } });
    expect(res.status).toBe(422);
  });

  it('404 for a row of another tool comes before 403 and before the body', async () => {
    const other = await createTool(server);
    const url = student.claims.storage.context.replace(tool.app.id, other.app.id);
    const res = await fetch(url, json(student.auth, 'not json'));
    expect(res.status).toBe(404);
  });

  it('403 comes before 415 and 413', async () => {
    const res = await fetch(student.claims.storage.context, json(student.auth, 'x'.repeat(3_000_000), 'text/plain'));
    expect(res.status).toBe(403);
  });

  it('415 comes before 413', async () => {
    const res = await fetch(student.claims.storage.member, json(student.auth, 'x'.repeat(3_000_000), 'text/plain'));
    expect(res.status).toBe(415);
  });
});

describe('healthz', () => {
  it('checks the store', async () => {
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', store: 'ok' });
  });
});
