/**
 * Every operation of the current contract, exercised over real HTTP against the real service (real SQLite
 * file, the service's own response validation ON), with at least one success and one refusal each.
 *
 * It cannot pass silently:
 * - the scenario table is typed `Record<OperationId, ...>` over `generated/2026-09-21/operations.ts`, and is
 *   checked at run time against that table too: a new operation in the spec fails here until it has both
 *   a success and a refusal scenario;
 * - each answer must be one the spec lists for that operation and status (content type included), and its
 *   body is validated here, independently of the service's validator, against the bundled spec's schema
 *   with Ajv (JSON Schema 2020-12, `$ref`s resolved into `generated/2026-09-21/openapi.json`);
 * - the service's access log line for the request (found by its `Request-Id`) must name the operation,
 *   so a scenario that hit a different route than it claims fails.
 */
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OperationId, operations } from '../../generated/2026-09-21/operations.js';
import { createTool, launch, placeLocation, startServer, type PlacedLocation, type TestLaunch, type TestServer } from './harness.js';
import { api, type Course, postForm, type RowName, serverFailures, setUpCourse, storeFile } from './rows/helpers.js';

const addFormats = addFormatsModule.default;

type Json = Record<string, unknown>;
const bundle = JSON.parse(readFileSync(new URL('../../generated/2026-09-21/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, { operationId?: string; responses: Record<string, Json> }>>;
  components: Json;
};

const BUNDLE_ID = 'tis-2026-09-21';
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
ajv.addSchema({ $id: BUNDLE_ID, components: bundle.components });

/** Follows a local `$ref` of the bundle (responses are often references to `components.responses`). */
function deref(node: Json): Json {
  let current = node;
  for (let hops = 0; typeof current['$ref'] === 'string'; hops += 1) {
    if (hops > 10) throw new Error('reference loop');
    const ref = current['$ref'] as string;
    if (!ref.startsWith('#/')) throw new Error(`non-local $ref ${ref}`);
    current = ref
      .slice(2)
      .split('/')
      .map((part) => decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((at, key) => (at as Json)[key], bundle) as Json;
  }
  return current;
}

/** An inline schema with its local `$ref`s pointed at the bundle registered in Ajv. */
function anchored(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(anchored);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === '$ref' && typeof value === 'string' && value.startsWith('#/') ? `${BUNDLE_ID}${value}` : anchored(value);
  }
  return out;
}

const validators = new Map<string, ValidateFunction>();
function validatorFor(cacheKey: string, schema: unknown): ValidateFunction {
  let validate = validators.get(cacheKey);
  if (!validate) {
    validate = ajv.compile(anchored(schema) as object);
    validators.set(cacheKey, validate);
  }
  return validate;
}

const PROBLEM_SCHEMA = { $ref: '#/components/schemas/Problem' };

/** What is wrong with an answer, judged by the spec alone ([] when it is one the spec allows). */
function judge(op: OperationId, status: number, contentType: string | null, text: string, unlisted: string | undefined): string[] {
  const { method, path } = operations[op];
  const specOp = bundle.paths[path]?.[method.toLowerCase()];
  if (!specOp || specOp.operationId !== op) return [`${op} is not at ${method} ${path} in the bundle`];
  const listed = specOp.responses[String(status)] ?? specOp.responses[`${String(status)[0]}XX`] ?? specOp.responses['default'];
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (!listed) {
    if (!unlisted) return [`${op} answered ${status}, which the spec does not list: ${text.slice(0, 200)}`];
    // A refusal the contract cannot list per operation (405 for a method): still the problem envelope.
    if (mediaType !== 'application/problem+json') return [`${op} ${status} came as ${contentType}`];
    return schemaErrors(`Problem`, PROBLEM_SCHEMA, text);
  }
  const response = deref(listed);
  const content = response['content'] as Record<string, Json> | undefined;
  if (!content) return text === '' ? [] : [`${op} ${status} must have no body, got ${text.slice(0, 200)}`];
  const entry = content[mediaType] ?? content[`${mediaType.split('/')[0]}/*`] ?? content['*/*'];
  if (!entry) return [`${op} ${status} came as ${contentType}; the spec lists ${Object.keys(content).join(', ')}`];
  if (!/[/+]json$/.test(mediaType) || entry['schema'] === undefined) return [];
  return schemaErrors(`${op} ${status} ${mediaType}`, entry['schema'], text);
}

function schemaErrors(key: string, schema: unknown, text: string): string[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return [`${key}: body is not JSON: ${text.slice(0, 200)}`];
  }
  const validate = validatorFor(key, schema);
  if (validate(body)) return [];
  return (validate.errors ?? []).map((e) => `${key}: ${e.instancePath || '/'} ${e.message ?? ''} (${JSON.stringify(body).slice(0, 300)})`);
}

interface Step {
  /** The status the scenario means to produce. */
  status: number;
  call: () => Promise<Response>;
  /** Why this refusal may carry a status the operation does not list (it is not the operation's own). */
  unlisted?: string;
}

interface Scenario {
  success: Step;
  refusal: Step;
}

let server: TestServer;
let course: Course;
/** A second course of the same tool, provisioned at neither level. */
let bare: { placed: PlacedLocation; instructor: TestLaunch };
/** Another tool, for rows that are not the caller's. */
let stranger: Course;

beforeAll(async () => {
  server = await startServer();
  course = await setUpCourse(server);
  const placed = await placeLocation(server, { app: course.tool.app.id, provisionContext: false, provisionLocation: false });
  bare = { placed, instructor: await launch(server, { placed, groups: ['instructor'] }) };
  stranger = await setUpCourse(server, { tool: await createTool(server) });
});

afterAll(async () => {
  const failures = server ? serverFailures(server.logs) : [];
  await server?.stop();
  expect(failures).toEqual([]);
});

const staff = () => api(course.instructor.auth);
const student = () => api(course.student.auth);
const fileUrl = (row: RowName, key: string) => `${course.files[row]}/${key}`;
/** A URL of the caller's tool with another tool's course/row IDs: not found, never forbidden (GAP-23). */
const foreign = (url: string) => url.replace(course.tool.app.id, stranger.tool.app.id);

let keyCounter = 0;
/** A file stored through the real flow (ask to store, then the signed multipart POST). */
async function stored(row: RowName): Promise<string> {
  keyCounter += 1;
  const url = fileUrl(row, `coverage-${keyCounter}.txt`);
  const { upload } = await storeFile(course.instructor.auth, url, `file ${keyCounter}`);
  if (upload.status !== 204) throw new Error(`upload answered ${upload.status}: ${await upload.text()}`);
  return url;
}

function post(url: string, auth: string | null, body: unknown): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(auth === null ? {} : { Authorization: auth }) },
    body: JSON.stringify(body),
  });
}

function accountScoreUrl(who: TestLaunch): string {
  const p = course.placed;
  return `${server.url}/account/v1/users/${who.member.id}/apps/${p.appId}/contexts/${p.context.id}/locations/${p.location.id}/scores`;
}

const rowOps = (row: RowName, names: { get: OperationId; put: OperationId; patch: OperationId }, refusals: Record<'get' | 'put' | 'patch', Step>) => ({
  [names.get]: {
    success: { status: 200, call: () => student().get(course.storage[row]) },
    refusal: refusals.get,
  },
  [names.put]: {
    success: { status: 204, call: () => (row === 'context' || row === 'location' ? staff() : student()).put(course.storage[row], { week: 3, done: ['intro'] }) },
    refusal: refusals.put,
  },
  [names.patch]: {
    success: {
      status: 204,
      call: () =>
        (row === 'context' || row === 'location' ? staff() : student()).patch(course.storage[row], {
          patch: [{ op: 'add', path: '/patched', value: { at: row } }],
        }),
    },
    refusal: refusals.patch,
  },
});

const fileOps = (
  row: RowName,
  names: { list: OperationId; get: OperationId; put: OperationId; del: OperationId },
  refusals: Record<'list' | 'get' | 'put' | 'del', Step>,
) => ({
  [names.list]: { success: { status: 200, call: async () => (await stored(row), staff().get(course.files[row])) }, refusal: refusals.list },
  [names.get]: { success: { status: 200, call: async () => staff().get(await stored(row)) }, refusal: refusals.get },
  [names.put]: { success: { status: 200, call: () => staff().put(fileUrl(row, 'asked.bin'), { size: 12, mimetype: 'text/plain' }) }, refusal: refusals.put },
  [names.del]: { success: { status: 204, call: async () => staff().del(await stored(row)) }, refusal: refusals.del },
});

/** Built lazily: the fixtures exist only once `beforeAll` ran. */
function scenarios(): Record<OperationId, Scenario> {
  return {
    submitScore: {
      success: { status: 200, call: () => post(course.student.claims.grade.submit ?? '', course.student.auth, { score: 0.75, comment: 'Covered.' }) },
      refusal: { status: 422, call: () => post(course.student.claims.grade.submit ?? '', course.student.auth, { score: 'high' }) },
    },
    submitScoreAsUser: {
      success: { status: 200, call: () => post(accountScoreUrl(course.student), course.student.auth, { score: 1 }) },
      // The API key is refused on /account URLs (Authentication rule 5).
      refusal: { status: 401, call: () => post(accountScoreUrl(course.student), `Bearer ${course.tool.apiKey}`, { score: 1 }) },
    },
    ...(rowOps(
      'context',
      { get: 'getContextRow', put: 'putContextRow', patch: 'patchContextRow' },
      {
        get: { status: 422, call: () => api(bare.instructor.auth).get(bare.instructor.claims.storage.context) },
        put: { status: 403, call: () => student().put(course.storage.context, { by: 'student' }) },
        patch: { status: 422, call: () => staff().patch(course.storage.context, { patch: [{ op: 'test', path: '/week', value: 'never' }] }) },
      },
    ) as Record<'getContextRow' | 'putContextRow' | 'patchContextRow', Scenario>),
    ...(rowOps(
      'location',
      { get: 'getLocationRow', put: 'putLocationRow', patch: 'patchLocationRow' },
      {
        get: { status: 401, call: () => api(null).get(course.storage.location) },
        put: { status: 415, call: () => fetch(course.storage.location, { method: 'PUT', headers: { Authorization: course.instructor.auth, 'Content-Type': 'text/plain' }, body: '{}' }) },
        patch: { status: 403, call: () => student().patch(course.storage.location, { patch: [{ op: 'add', path: '/x', value: 1 }] }) },
      },
    ) as Record<'getLocationRow' | 'putLocationRow' | 'patchLocationRow', Scenario>),
    ...(rowOps(
      'member',
      { get: 'getMemberRow', put: 'putMemberRow', patch: 'patchMemberRow' },
      {
        get: { status: 403, call: () => api(course.otherStudent.auth).get(course.storage.member) },
        put: { status: 422, call: () => student().putText(course.storage.member, '{"broken": ') },
        patch: { status: 422, call: () => student().patch(course.storage.member, { patch: [{ op: 'remove', path: '/nothing/here' }] }) },
      },
    ) as Record<'getMemberRow' | 'putMemberRow' | 'patchMemberRow', Scenario>),
    ...(rowOps(
      'member_location',
      { get: 'getMemberLocationRow', put: 'putMemberLocationRow', patch: 'patchMemberLocationRow' },
      {
        get: { status: 401, call: () => api(`Bearer ${course.tool.apiKey}`).get(course.storage.member_location) },
        put: { status: 422, call: () => student().put(course.storage.member_location, { big: 'x'.repeat(512 * 1024) }) },
        patch: { status: 404, call: () => student().patch(foreign(course.storage.member_location), { patch: [] }) },
      },
    ) as Record<'getMemberLocationRow' | 'putMemberLocationRow' | 'patchMemberLocationRow', Scenario>),
    ...(fileOps(
      'context',
      { list: 'listContextFiles', get: 'getContextFile', put: 'putContextFile', del: 'deleteContextFile' },
      {
        list: { status: 401, call: () => api(null).get(course.files.context) },
        get: { status: 404, call: () => staff().get(fileUrl('context', 'never-stored.txt')) },
        put: { status: 422, call: () => staff().put(fileUrl('context', 'huge.bin'), { size: 26_214_401 }) },
        del: { status: 403, call: () => student().del(fileUrl('context', 'anything.txt')) },
      },
    ) as Record<'listContextFiles' | 'getContextFile' | 'putContextFile' | 'deleteContextFile', Scenario>),
    ...(fileOps(
      'location',
      { list: 'listLocationFiles', get: 'getLocationFile', put: 'putLocationFile', del: 'deleteLocationFile' },
      {
        list: { status: 422, call: () => api(bare.instructor.auth).get(bare.instructor.claims.files.location) },
        get: { status: 422, call: () => staff().get(fileUrl('location', '.hidden')) },
        put: { status: 403, call: () => student().put(fileUrl('location', 'mine.txt'), { size: 1 }) },
        del: { status: 401, call: () => api(null).del(fileUrl('location', 'anything.txt')) },
      },
    ) as Record<'listLocationFiles' | 'getLocationFile' | 'putLocationFile' | 'deleteLocationFile', Scenario>),
    ...(fileOps(
      'member',
      { list: 'listMemberFiles', get: 'getMemberFile', put: 'putMemberFile', del: 'deleteMemberFile' },
      {
        list: { status: 403, call: () => api(course.otherStudent.auth).get(course.files.member) },
        get: { status: 404, call: () => staff().get(foreign(fileUrl('member', 'x.txt'))) },
        put: { status: 422, call: () => staff().put(fileUrl('member', 'x.txt'), { size: 1, expires: 0 }) },
        del: { status: 422, call: () => staff().del(fileUrl('member', '-dash')) },
      },
    ) as Record<'listMemberFiles' | 'getMemberFile' | 'putMemberFile' | 'deleteMemberFile', Scenario>),
    ...(fileOps(
      'member_location',
      { list: 'listMemberLocationFiles', get: 'getMemberLocationFile', put: 'putMemberLocationFile', del: 'deleteMemberLocationFile' },
      {
        list: { status: 404, call: () => staff().get(foreign(course.files.member_location)) },
        get: { status: 403, call: () => api(course.otherStudent.auth).get(fileUrl('member_location', 'x.txt')) },
        put: { status: 415, call: () => fetch(fileUrl('member_location', 'x.txt'), { method: 'PUT', headers: { Authorization: course.instructor.auth, 'Content-Type': 'text/plain' }, body: 'size=1' }) },
        del: { status: 403, call: () => api(course.otherStudent.auth).del(fileUrl('member_location', 'x.txt')) },
      },
    ) as Record<'listMemberLocationFiles' | 'getMemberLocationFile' | 'putMemberLocationFile' | 'deleteMemberLocationFile', Scenario>),
    uploadFile: {
      success: {
        status: 204,
        call: async () => {
          const asked = await staff().put(fileUrl('member', 'uploaded.txt'), { size: 5 });
          return postForm((await asked.json()) as { url: string; fields: Record<string, string> }, 'hello');
        },
      },
      refusal: {
        status: 403,
        call: async () => {
          const asked = await staff().put(fileUrl('member', 'forged.txt'), { size: 5 });
          const form = (await asked.json()) as { url: string; fields: Record<string, string> };
          const signature = form.fields['signature'] ?? '';
          const forged = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
          return postForm({ url: form.url, fields: { ...form.fields, signature: forged } }, 'hello');
        },
      },
    },
    downloadFile: {
      success: {
        status: 200,
        call: async () => {
          const read = (await (await staff().get(await stored('member'))).json()) as { url: string };
          return fetch(read.url);
        },
      },
      refusal: {
        status: 403,
        call: async () => {
          const read = (await (await staff().get(await stored('member'))).json()) as { url: string };
          const token = read.url.slice(read.url.lastIndexOf('/') + 1);
          const forged = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
          return fetch(`${server.url}/v1/downloads/${forged}`);
        },
      },
    },
    provisionContext: {
      success: {
        status: 204,
        call: async () => {
          const r = await server.services.launches.provisionRequest({ appId: bare.placed.appId, contextId: bare.placed.context.id, locationId: null });
          return fetch(r.claims.provision.context, { method: 'PUT', headers: { Authorization: `Bearer ${r.apiToken}` } });
        },
      },
      // A launch token provisions nothing (L-04).
      refusal: { status: 403, call: () => fetch(course.instructor.claims.provision.context, { method: 'PUT', headers: { Authorization: course.instructor.auth } }) },
    },
    provisionLocation: {
      success: {
        status: 204,
        call: async () => {
          const r = await server.services.launches.provisionRequest({
            appId: bare.placed.appId,
            contextId: bare.placed.context.id,
            locationId: bare.placed.location.id,
          });
          return fetch(r.claims.provision.location ?? '', { method: 'PUT', headers: { Authorization: `Bearer ${r.apiToken}` } });
        },
      },
      refusal: {
        status: 403,
        call: async () => {
          const r = await server.services.launches.provisionRequest({ appId: bare.placed.appId, contextId: bare.placed.context.id, locationId: null });
          const url = server.services.launches.urls.provisionLocation(bare.placed.context.id, bare.placed.appId, bare.placed.location.id);
          return fetch(url, { method: 'PUT', headers: { Authorization: `Bearer ${r.apiToken}` } });
        },
      },
    },
    getPublicKeys: {
      success: { status: 200, call: () => fetch(`${server.url}/.well-known/jwks.json`) },
      refusal: {
        status: 405,
        // The spec's only listed refusal (404) is never answered on this fixed path.
        unlisted: 'a method the path does not serve',
        call: () => fetch(`${server.url}/.well-known/jwks.json`, { method: 'DELETE' }),
      },
    },
  };
}

/** The access log line is written when the response finishes, which can trail the client's read a little. */
async function accessLogLine(requestId: string | null): Promise<Record<string, unknown> | undefined> {
  for (let i = 0; requestId && i < 50; i += 1) {
    const line = server.logs.find((l) => l['request_id'] === requestId && l['msg'] === 'request');
    if (line) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

interface Observed {
  op: OperationId;
  kind: 'success' | 'refusal';
  status: number;
  problems: string[];
}

describe('every operation of the current contract', () => {
  const observed: Observed[] = [];

  it('has a success and a refusal scenario for every operationId in generated/2026-09-21/operations.ts', () => {
    const table = scenarios();
    const missing = Object.keys(operations).filter((op) => !(op in table));
    const extra = Object.keys(table).filter((op) => !(op in operations));
    expect(missing, 'operations without a scenario').toEqual([]);
    expect(extra, 'scenarios of operations the spec no longer has').toEqual([]);
    for (const [op, scenario] of Object.entries(table)) {
      expect(scenario.success.status, op).toBeGreaterThanOrEqual(200);
      expect(scenario.success.status, op).toBeLessThan(300);
      expect(scenario.refusal.status, op).toBeGreaterThanOrEqual(400);
      expect(scenario.refusal.status, op).toBeLessThan(500);
    }
  });

  it.each(Object.keys(operations) as OperationId[])('%s: a success and a refusal, each as the spec describes', async (op) => {
    const scenario = scenarios()[op];
    for (const kind of ['success', 'refusal'] as const) {
      const step = scenario[kind];
      const response = await step.call();
      const text = await response.text();
      const problems = judge(op, response.status, response.headers.get('content-type'), text, step.unlisted);
      if (response.status !== step.status) problems.unshift(`${op} ${kind}: expected ${step.status}, got ${response.status}: ${text.slice(0, 300)}`);
      // The service's access log says which operation served the request.
      const requestId = response.headers.get('request-id');
      const line = await accessLogLine(requestId);
      if (!requestId || !line) problems.push(`${op} ${kind}: no access log line for request ${requestId}`);
      else if (!step.unlisted && line['operation'] !== op) problems.push(`${op} ${kind}: served by ${String(line['operation'])}`);
      observed.push({ op, kind, status: response.status, problems });
      expect(problems).toEqual([]);
    }
  });

  it('saw a validated 2xx and a validated 4xx for every operation', () => {
    const uncovered = (Object.keys(operations) as OperationId[]).filter((op) => {
      const ok = observed.filter((o) => o.op === op && o.problems.length === 0);
      return !ok.some((o) => o.status >= 200 && o.status < 300) || !ok.some((o) => o.status >= 400 && o.status < 500);
    });
    expect(uncovered).toEqual([]);
  });
});
