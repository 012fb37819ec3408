/**
 * Nothing a caller sends produces a 500: garbage at every operation of the current contract (wrong
 * types, huge and special numbers, unicode and invalid UTF-8, missing and broken bodies, hostile keys,
 * odd path segments, every credential) must get a 4xx (or a success), each with a request id and, when
 * an error, the problem envelope.
 *
 * Aimed, not multiplied (decision CI-51): every garbage segment at every path parameter of every operation,
 * and every garbage body at every operation, goes ONCE, with the credential that takes it furthest into that
 * operation (past authentication and permissions to the handler and the store: `deepest`); and every garbage
 * segment and body goes once more with each other credential, at an operation (and parameter) drawn from the
 * run's seed, which the file prints and a failure names (`TIS_FUZZ_SEED=<seed>` replays it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations } from '../../../generated/2026-09-21/operations.js';
import type { TestServer } from '../harness.js';
import { createTool, launch, placeLocation, startServer, TEST_STORE } from '../harness.js';
import type { Attempt } from '../fuzz-runner.js';
import { fuzzSeed, runAttempts, seededPicker, urlFor as fuzzUrl } from '../fuzz-runner.js';

let server: TestServer;
let valid: Record<string, string>;
let auths: Record<string, string | null>;
let instructorMember: string;

beforeAll(async () => {
  server = await startServer({ config: { logLevel: 'warn' } });
  const tool = await createTool(server);
  const placed = await placeLocation(server, { app: tool.app.id });
  const student = await launch(server, { placed, groups: ['student'] });
  const instructor = await launch(server, { placed, groups: ['instructor'] });
  instructorMember = instructor.member.id;
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

/**
 * On PostgreSQL (the smoke set) the segments a statement could take differently there (decision CI-51): NUL,
 * multi-byte text, a key past a b-tree entry's size, numbers where a column may be cast, quotes. The rest
 * (`%`, `%E0%A4%A`, `..`, `%2E%2E`, `%2F`, `null`, `__proto__`, `constructor`) is decoding, routing and
 * JavaScript, decided before any statement the same way on both stores, which the SQLite run shows.
 */
const STORE_SEGMENTS = ['x'.repeat(3000), '%00', '%E2%98%83', '%F0%9F%92%A9', '1e309', '-1', "'; DROP TABLE apps; --"];
const SEGMENTS = TEST_STORE === 'postgres' ? STORE_SEGMENTS : GARBAGE_SEGMENTS;

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
 * The credentials the other attempts rotate through. On PostgreSQL (the smoke set) only those the service
 * accepts: a request without one, or with a malformed one, is refused before any statement with what it
 * sent, which the SQLite run shows for every credential (decision CI-28).
 */
const REFUSED = ['none', 'garbage', 'schemeOnly'];
const rotating = (): string[] => Object.keys(auths).filter((who) => TEST_STORE !== 'postgres' || !REFUSED.includes(who));
/** The other credentials name the student's member (`valid`); the instructor its own. */
const memberOf = (who: string): Record<string, string> => (who === 'instructor' ? { member_id: instructorMember } : {});

type Operation = (typeof operations)[keyof typeof operations];
/**
 * The credential that takes a request furthest into an operation: none where the operation needs none
 * (its signed URL or form is the credential), the provisioning token for provisioning, the tool's API key
 * where it is accepted (it is bound to no member), else an instructor's launch token on the instructor's
 * own member (an instructor may write every row and file a student may, and the course's too).
 */
function deepest(op: Operation): string {
  const schemes = op.security.flat() as string[];
  if (op.security.length === 0) return 'none';
  if (op.id.startsWith('provision')) return 'provision';
  if (schemes.includes('apiKey')) return 'apiKey';
  return 'instructor';
}

const SEED = fuzzSeed();
console.log(`fuzz seed ${SEED} (TIS_FUZZ_SEED=${SEED} replays this run's choices)`);
const runAll = async (attempts: Attempt[]): Promise<void> => {
  expect(await runAttempts(attempts, 12), `fuzz seed ${SEED}: TIS_FUZZ_SEED=${SEED} replays it`).toEqual([]);
};

const ALL_OPERATIONS = Object.values(operations);
const paramsOf = (op: Operation): string[] => [...op.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1] as string);
const WITH_PARAMS = ALL_OPERATIONS.filter((op) => paramsOf(op).length > 0);
const WITH_BODY = ALL_OPERATIONS.filter((op) => op.method !== 'GET');

function segmentAttempt(op: Operation, name: string, segment: string, who: string): Attempt {
  const auth = auths[who] ?? null;
  return {
    method: op.method,
    url: urlFor(op.path, { ...valid, ...memberOf(who), [name]: segment }),
    headers: { ...(auth ? { Authorization: auth } : {}), 'Content-Type': 'application/json' },
    ...(op.method === 'GET' || op.method === 'DELETE' ? {} : { body: '{"score":0.5,"size":1}' }),
    label: `${op.id} ${name}=${segment.slice(0, 20)} as ${who}`,
  };
}

function bodyAttempt(op: Operation, body: string | Uint8Array | undefined, who: string): Attempt {
  const auth = auths[who] ?? null;
  return {
    method: op.method,
    url: urlFor(op.path, { ...valid, ...memberOf(who) }),
    headers: { ...(auth ? { Authorization: auth } : {}), 'Content-Type': op.id === 'uploadFile' ? 'multipart/form-data; boundary=x' : 'application/json' },
    ...(op.method === 'GET' || body === undefined ? {} : { body }),
    label: `${op.id} body=${String(body).slice(0, 30)} as ${who}`,
  };
}

// Thousands of requests per test; the suite's 60 s is a hang guard, and these need more room under load.
describe('no caller input produces a 500', { timeout: 240_000 }, () => {
  it('garbage path segments: at every parameter of every operation, and with every credential', async () => {
    const pick = seededPicker(SEED, 1);
    const attempts: Attempt[] = [];
    for (const op of WITH_PARAMS) {
      for (const name of paramsOf(op)) {
        for (const segment of SEGMENTS) attempts.push(segmentAttempt(op, name, segment, deepest(op)));
      }
    }
    for (const segment of SEGMENTS) {
      // A credential that is not even a token is refused before the path is looked at: the bodies carry it.
      for (const who of rotating().filter((w) => w !== 'garbage' && w !== 'schemeOnly')) {
        const op = pick(WITH_PARAMS.filter((o) => deepest(o) !== who));
        attempts.push(segmentAttempt(op, pick(paramsOf(op)), segment, who));
      }
    }
    await runAll(attempts);
  });

  it('garbage bodies and content types: at every operation, and with every credential', async () => {
    const pick = seededPicker(SEED, 2);
    const attempts: Attempt[] = [];
    for (const op of ALL_OPERATIONS) {
      // A GET goes without a body, so every garbage body would be the same request: it goes once, and the
      // content types carry no body either (each still with its header).
      for (const body of op.method === 'GET' ? [undefined] : BODIES) attempts.push(bodyAttempt(op, body, deepest(op)));
      // A content type is accepted or refused before any statement, the same way on both stores: SQLite's run.
      for (const contentType of TEST_STORE === 'postgres' ? [] : CONTENT_TYPES) {
        const auth = auths[deepest(op)] ?? null;
        attempts.push({
          method: op.method,
          url: urlFor(op.path, { ...valid, ...memberOf(deepest(op)) }),
          headers: { ...(auth ? { Authorization: auth } : {}), ...(contentType ? { 'Content-Type': contentType } : {}) },
          ...(op.method === 'GET' ? {} : { body: '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc\r\n--x--\r\n' }),
          label: `${op.id} content-type=${contentType}`,
        });
      }
    }
    for (const body of BODIES) {
      for (const who of rotating()) {
        const op = pick(WITH_BODY.filter((o) => deepest(o) !== who));
        attempts.push(bodyAttempt(op, body, who));
      }
    }
    await runAll(attempts);
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
    await runAll(attempts);
  });

  it('leaves no polluted prototype behind', () => {
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});
