/**
 * Nothing a caller sends produces a 500: garbage at every operation of the current contract (wrong
 * types, huge and special numbers, unicode and invalid UTF-8, missing and broken bodies, hostile keys,
 * odd path segments, every credential) must get a 4xx (or a success), each with a request id and, when
 * an error, the problem envelope.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../../generated/2026-09-21/operations.js';
import type { TestServer } from '../harness.js';
import { createTool, launch, placeLocation, startServer, TEST_STORE } from '../harness.js';
import type { Attempt } from '../fuzz-runner.js';
import { runAttempts, urlFor as fuzzUrl } from '../fuzz-runner.js';

let server: TestServer;
let valid: Record<string, string>;
let auths: Record<string, string | null>;

beforeAll(async () => {
  server = await startServer({ config: { logLevel: 'warn' } });
  const tool = await createTool(server);
  const placed = await placeLocation(server, { app: tool.app.id });
  const student = await launch(server, { placed, groups: ['student'] });
  const instructor = await launch(server, { placed, groups: ['instructor'] });
  const provision = await server.services.launches.provisionRequest({
    appId: tool.app.id,
    contextId: placed.context.id,
    locationId: placed.location.id,
  });
  valid = {
    context_id: placed.context.id,
    app_id: tool.app.id,
    location_id: placed.location.id,
    member_id: student.member.id,
    key: 'notes.txt',
    download_token: 'eyJhIjoxfQ.c2ln',
  };
  auths = {
    none: null,
    student: student.auth,
    instructor: instructor.auth,
    provision: `Bearer ${provision.apiToken}`,
    apiKey: `Bearer ${tool.apiKey}`,
    garbage: `Bearer ${'\u00e9x'.repeat(3000)}`,
    schemeOnly: 'Bearer',
  };
});
afterAll(async () => server?.stop());

const GARBAGE_SEGMENTS = [
  'x'.repeat(3000),
  '%00',
  '%',
  '%E0%A4%A',
  '..',
  '%2E%2E',
  '%E2%98%83',
  '1e309',
  '-1',
  '%2F',
  'null',
  '__proto__',
  'constructor',
  '%F0%9F%92%A9',
  "'; DROP TABLE apps; --",
];

const deepArray = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
const deepObject = `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`;
const manyKeys = `{${Array.from({ length: 20_000 }, (_, i) => `"k${i}":${i}`).join(',')}}`;

const BODIES: Array<string | Uint8Array | undefined> = [
  undefined,
  '',
  '   ',
  'null',
  'true',
  '[]',
  '{}',
  '"string"',
  '1e999',
  '-0',
  '{"score":1e309}',
  '{"score":"0.5"}',
  '{"score":null}',
  '{"score":0.5,"max_score":-1e308,"comment":{"a":1}}',
  '{"score":0.5,"activity_progress":null,"grading_progress":["Pending"]}',
  '{"score":NaN}',
  '{"patch":null}',
  '{"patch":{}}',
  '{"patch":[null,1,"x",[]]}',
  '{"patch":[{"op":"add","path":"/__proto__/polluted","value":1}]}',
  '{"patch":[{"op":"add","path":"/constructor/prototype/polluted","value":1}]}',
  '{"patch":[{"op":"copy","from":"/a","path":"/a/b"},{"op":"move","from":"","path":"/x"}]}',
  '{"patch":[{"op":"test","path":"/01","value":1},{"op":"remove","path":"/~2"}]}',
  '{"patch":[{"op":"add","path":"","value":[1,2]}]}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"size":1e400}',
  '{"size":9007199254740993}',
  '{"size":-0.5,"mimetype":"\\u0000/\\u0000","filename":"../../etc/passwd","attachment":"yes"}',
  '{"size":10,"mimetype":"text/html; charset=\\"x","filename":"a\\\\b"}',
  '{"\\ud800":"\\udfff","\\u0000":"\\u0000"}',
  deepArray,
  deepObject,
  manyKeys,
  new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
  '{"a":1}{"b":2}',
  '\ufeff{"a":1}',
];

const CONTENT_TYPES = ['application/json', 'text/plain', 'application/json; charset=utf-16', 'multipart/form-data; boundary=x', undefined];

const urlFor = (template: string, params: Record<string, string>): string => fuzzUrl(server.url, template, params);

/**
 * The credentials each attempt is sent with. On PostgreSQL (the smoke set) only those the service accepts:
 * a request without one, or with a malformed one, is refused before any statement with what it sent, which
 * the SQLite run shows for every credential (decision CI-28).
 */
const REFUSED = ['none', 'garbage', 'schemeOnly'];
const REFUSED_BODIES: ReadonlyArray<string | Uint8Array | undefined> = [undefined, '{}', deepObject];
const credentials = (): Array<[string, string | null]> =>
  Object.entries(auths).filter(([who]) => TEST_STORE !== 'postgres' || !REFUSED.includes(who));
const runAll = (attempts: Attempt[]) => runAttempts(attempts, 12);

// Thousands of requests per test, about 33 s on PostgreSQL on CI's machine with a file beside it (CI-01):
// the suite's 60 s is a hang guard, and this one needs more room under load.
describe('no caller input produces a 500', { timeout: 240_000 }, () => {
  it('garbage path segments, with every credential', async () => {
    const attempts: Attempt[] = [];
    for (const op of Object.values(operations)) {
      const names = [...op.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1] as string);
      for (const name of names) {
        for (const segment of GARBAGE_SEGMENTS) {
          for (const [who, auth] of credentials()) {
            if (who === 'garbage' || who === 'schemeOnly') continue;
            attempts.push({
              method: op.method,
              url: urlFor(op.path, { ...valid, [name]: segment }),
              headers: { ...(auth ? { Authorization: auth } : {}), 'Content-Type': 'application/json' },
              ...(op.method === 'GET' || op.method === 'DELETE' ? {} : { body: '{"score":0.5,"size":1}' }),
              label: `${op.id} ${name}=${segment.slice(0, 20)} as ${who}`,
            });
          }
        }
      }
    }
    expect(await runAll(attempts)).toEqual([]);
  });

  it('garbage bodies and content types, with every credential', async () => {
    const attempts: Attempt[] = [];
    for (const op of Object.values(operations)) {
      for (const body of BODIES) {
        for (const [who, auth] of credentials()) {
          // A refused credential is refused before its body is read, and a body that upsets the parser
          // does so with an accepted one too: the refused ones carry three bodies, not all (CI-28).
          if (REFUSED.includes(who) && !REFUSED_BODIES.includes(body)) continue;
          attempts.push({
            method: op.method === 'GET' ? 'GET' : op.method,
            url: urlFor(op.path, valid),
            headers: { ...(auth ? { Authorization: auth } : {}), 'Content-Type': op.id === 'uploadFile' ? 'multipart/form-data; boundary=x' : 'application/json' },
            ...(op.method === 'GET' ? {} : body === undefined ? {} : { body }),
            label: `${op.id} body=${String(body).slice(0, 30)} as ${who}`,
          });
        }
      }
      for (const contentType of CONTENT_TYPES) {
        attempts.push({
          method: op.method,
          url: urlFor(op.path, valid),
          headers: { Authorization: auths['instructor'] ?? '', ...(contentType ? { 'Content-Type': contentType } : {}) },
          ...(op.method === 'GET' ? {} : { body: '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc\r\n--x--\r\n' }),
          label: `${op.id} content-type=${contentType}`,
        });
      }
    }
    expect(await runAll(attempts)).toEqual([]);
  });

  it('odd methods, headers and contract versions on every path', async () => {
    const attempts: Attempt[] = [];
    const paths = [...new Set(Object.values(operations).map((op) => op.path))];
    for (const path of paths) {
      for (const method of ['HEAD', 'OPTIONS', 'PATCH', 'POST', 'DELETE', 'PUT']) {
        attempts.push({ method, url: urlFor(path, valid), headers: { Authorization: auths['student'] ?? '' }, label: `${method} ${path}` });
      }
      for (const version of ['', 'x', '2026-09-21, 2026-08-25', '\u00e9', '2026-08-19']) {
        attempts.push({
          method: 'GET',
          url: urlFor(path, valid),
          headers: { 'Contract-Version': encodeURIComponent(version), Authorization: auths['student'] ?? '' },
          label: `Contract-Version ${version} ${path}`,
        });
      }
      attempts.push({
        method: 'GET',
        url: `${urlFor(path, valid)}?__proto__[x]=1&a=${'b'.repeat(5000)}&a=c`,
        headers: { Authorization: auths['student'] ?? '', 'Request-Id': '../../\r\n' },
        label: `query ${path}`,
      });
    }
    expect(await runAll(attempts)).toEqual([]);
  });

  it('leaves no polluted prototype behind', () => {
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});
