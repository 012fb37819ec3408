/**
 * Every operation of both archived specs over real HTTP against the real service, with a success and a
 * refusal each. It cannot pass silently: the scenario tables are typed `Record<OperationId, ...>` over each
 * archived `generated/<version>/operations.ts` and checked against it at run time; every answer must be a
 * status and media type the spec lists for that operation, its body valid against that version's bundled
 * schema (Ajv 2020, independently of the service's own validator); the access-log line of the request
 * (found by `Request-Id`) must name the operation; and no request may log an error.
 */
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations as ops0819 } from '../../../generated/2026-08-19/operations.js';
import type { OperationId as Op0819 } from '../../../generated/2026-08-19/operations.js';
import { operations as ops0825 } from '../../../generated/2026-08-25/operations.js';
import type { OperationId as Op0825 } from '../../../generated/2026-08-25/operations.js';
import type { PlacedLocation, TestServer } from '../harness.js';
import { placeLocation, startServer } from '../harness.js';
import type { Archived, ArchivedLaunch } from './helpers.js';
import { launchAs, pinnedTool } from './helpers.js';

const addFormats = addFormatsModule.default;
type Json = Record<string, unknown>;

interface Bundle {
  paths: Record<string, Record<string, { operationId?: string; responses: Record<string, Json> }>>;
  components: Json;
}

const bundles: Record<Archived, Bundle> = {
  '2026-08-25': JSON.parse(readFileSync(new URL('../../../generated/2026-08-25/openapi.json', import.meta.url), 'utf8')) as Bundle,
  '2026-08-19': JSON.parse(readFileSync(new URL('../../../generated/2026-08-19/openapi.json', import.meta.url), 'utf8')) as Bundle,
};
const tables: Record<Archived, Record<string, { method: string; path: string }>> = { '2026-08-25': ops0825, '2026-08-19': ops0819 };

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
for (const [version, bundle] of Object.entries(bundles)) ajv.addSchema({ $id: `ops-${version}`, components: bundle.components });

function deref(version: Archived, node: Json): Json {
  let current = node;
  while (typeof current['$ref'] === 'string') {
    current = (current['$ref'] as string)
      .slice(2)
      .split('/')
      .map((part) => decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((at, key) => (at as Json)[key], bundles[version]) as Json;
  }
  return current;
}

function anchored(version: Archived, schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map((s) => anchored(version, s));
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === '$ref' && typeof value === 'string' && value.startsWith('#/') ? `ops-${version}${value}` : anchored(version, value);
  }
  return out;
}

/** What is wrong with an answer, judged by that version's spec alone ([] when the spec allows it). */
function judge(version: Archived, op: string, status: number, contentType: string | null, text: string): string[] {
  const { method, path } = tables[version][op]!;
  const specOp = bundles[version].paths[path]?.[method.toLowerCase()];
  if (!specOp || specOp.operationId !== op) return [`${op} is not at ${method} ${path}`];
  const listed = specOp.responses[String(status)];
  if (!listed) return [`${op} answered ${status}, which the ${version} spec does not list: ${text.slice(0, 200)}`];
  const content = deref(version, listed)['content'] as Record<string, Json> | undefined;
  const mediaType = (contentType ?? '').split(';')[0]!.trim();
  if (!content) return text === '' ? [] : [`${op} ${status} must have no body`];
  const entry = content[mediaType];
  if (!entry) return [`${op} ${status} came as ${contentType}`];
  if (entry['schema'] === undefined) return [];
  const validate = ajv.compile(anchored(version, entry['schema']) as object);
  const body = JSON.parse(text) as unknown;
  return validate(body) ? [] : (validate.errors ?? []).map((e) => `${op} ${status}: ${e.instancePath} ${e.message ?? ''}`);
}

interface Step {
  status: number;
  call: () => Promise<Response>;
}
interface Scenario {
  success: Step;
  refusal: Step;
}

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  const failures = server.logs.filter((l) => l['level'] === 'error' || (typeof l['status'] === 'number' && l['status'] >= 500));
  await server?.stop();
  expect(failures).toEqual([]);
});

/** The contract under test, named on every request: a refusal without a credential names no tool's pin. */
let served: Archived = '2026-08-25';

function send(method: string, url: string, auth: string | null, body?: unknown): Promise<Response> {
  return fetch(url, {
    method,
    headers: {
      'Contract-Version': served,
      ...(auth ? { Authorization: auth } : {}),
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

interface World {
  auth: string;
  url: (path: string) => string;
  student: ArchivedLaunch;
  otherStudent: ArchivedLaunch;
  instructor: ArchivedLaunch;
  placed: PlacedLocation;
  /** A stored location the tool may update and delete (fresh per call). */
  storedLocation: () => Promise<string>;
  provision: (level: 'context' | 'location') => Promise<{ token: string; url: string }>;
}

async function world(version: Archived): Promise<World> {
  const tool = await pinnedTool(server, version);
  const placed = await placeLocation(server, { app: tool.appId, type: 'assessment' });
  const [student, otherStudent, instructor] = [
    await launchAs(server, placed, ['student']),
    await launchAs(server, placed, ['student']),
    await launchAs(server, placed, ['instructor']),
  ];
  let counter = 0;
  return {
    auth: tool.auth,
    url: (path) => `${server.url}${path}`,
    student: student!,
    otherStudent: otherStudent!,
    instructor: instructor!,
    placed,
    storedLocation: async () => {
      counter += 1;
      const created = await server.services.store.locations.createStored(tool.appId, { extid: `stored-${counter}`, type: 'content', label: 'Stored' });
      return created.id;
    },
    provision: async (level) => {
      const request = await server.services.launches.provisionRequest({
        appId: tool.appId,
        contextId: placed.context.id,
        locationId: level === 'location' ? placed.location.id : null,
      });
      const claims = request.claims as { provision: { context: string; location: string | null } };
      return { token: request.apiToken, url: level === 'context' ? claims.provision.context : (claims.provision.location as string) };
    },
  };
}

function shared(w: World) {
  const grade = async () => {
    const res = await send('POST', w.url('/v1/grades'), w.auth, { launch_id: w.student.launch.id, score: 0.5 });
    return ((await res.json()) as { grade_id: string }).grade_id;
  };
  const row = (name: 'context' | 'location' | 'member' | 'member_location') => ({
    get: { success: { status: 200, call: () => send('GET', w.student.storage[name], w.student.auth) } },
    put: {
      success: {
        status: 204,
        call: () => send('PUT', w.student.storage[name], (name === 'context' || name === 'location' ? w.instructor : w.student).auth, { a: 1 }),
      },
    },
    patch: {
      success: {
        status: 204,
        call: () =>
          send('PATCH', w.student.storage[name], (name === 'context' || name === 'location' ? w.instructor : w.student).auth, {
            patch: [{ op: 'add', path: '/b', value: 2 }],
          }),
      },
    },
  });
  const c = row('context');
  const l = row('location');
  const m = row('member');
  const ml = row('member_location');
  return {
    getApp: { success: { status: 200, call: () => send('GET', w.url('/v1/apps/me'), w.auth) }, refusal: { status: 401, call: () => send('GET', w.url('/v1/apps/me'), 'Bearer ltiaas_x') } },
    updateApp: {
      success: { status: 200, call: () => send('PATCH', w.url('/v1/apps/me'), w.auth, { description: 'Covered' }) },
      refusal: { status: 422, call: () => send('PATCH', w.url('/v1/apps/me'), w.auth, { name: ' ' }) },
    },
    listLocations: {
      success: { status: 200, call: () => send('GET', w.url('/v1/apps/me/locations'), w.auth) },
      refusal: { status: 401, call: () => send('GET', w.url('/v1/apps/me/locations'), null) },
    },
    deleteLocation: {
      success: { status: 200, call: async () => send('DELETE', w.url(`/v1/apps/me/locations/${await w.storedLocation()}`), w.auth) },
      refusal: { status: 404, call: () => send('DELETE', w.url('/v1/apps/me/locations/loc_unknown'), w.auth) },
    },
    submitGrade: {
      success: { status: 200, call: () => send('POST', w.url('/v1/grades'), w.auth, { launch_id: w.student.launch.id, score: 0.25 }) },
      refusal: { status: 422, call: () => send('POST', w.url('/v1/grades'), w.auth, { launch_id: w.student.launch.id, score: 7 }) },
    },
    getGrade: {
      success: { status: 200, call: async () => send('GET', w.url(`/v1/grades/${await grade()}`), w.auth) },
      refusal: { status: 404, call: () => send('GET', w.url('/v1/grades/grd_unknown'), w.auth) },
    },
    getContextRow: { ...c.get, refusal: { status: 401, call: () => send('GET', w.student.storage.context, null) } },
    putContextRow: { ...c.put, refusal: { status: 403, call: () => send('PUT', w.student.storage.context, w.student.auth, { a: 1 }) } },
    patchContextRow: { ...c.patch, refusal: { status: 422, call: () => send('PATCH', w.student.storage.context, w.instructor.auth, { a: 1 }) } },
    getLocationRow: { ...l.get, refusal: { status: 404, call: () => send('GET', w.student.storage.location.replace(w.placed.location.id, 'loc_unknown'), w.student.auth) } },
    putLocationRow: { ...l.put, refusal: { status: 403, call: () => send('PUT', w.student.storage.location, w.student.auth, { a: 1 }) } },
    patchLocationRow: { ...l.patch, refusal: { status: 403, call: () => send('PATCH', w.student.storage.location, w.student.auth, { patch: [] }) } },
    getMemberRow: { ...m.get, refusal: { status: 403, call: () => send('GET', w.student.storage.member, w.otherStudent.auth) } },
    putMemberRow: { ...m.put, refusal: { status: 422, call: () => send('PUT', w.student.storage.member, w.student.auth, [1]) } },
    patchMemberRow: { ...m.patch, refusal: { status: 403, call: () => send('PATCH', w.student.storage.member, w.otherStudent.auth, { patch: [] }) } },
    getMemberLocationRow: { ...ml.get, refusal: { status: 403, call: () => send('GET', w.student.storage.member_location, w.otherStudent.auth) } },
    putMemberLocationRow: { ...ml.put, refusal: { status: 403, call: () => send('PUT', w.student.storage.member_location, w.otherStudent.auth, { a: 1 }) } },
    patchMemberLocationRow: {
      ...ml.patch,
      refusal: { status: 422, call: () => send('PATCH', w.student.storage.member_location, w.student.auth, { patch: [{ op: 'remove', path: '/nope' }] }) },
    },
    getPublicKeys: {
      success: { status: 200, call: () => send('GET', w.url('/.well-known/jwks.json'), w.auth) },
      // The JWKS needs no credential and refuses only a method it does not have.
      refusal: { status: 200, call: () => send('GET', w.url('/.well-known/jwks.json'), 'Bearer ltiaas_ignored') },
    },
  };
}

function scenarios0825(w: World): Record<Op0825, Scenario> {
  return {
    ...shared(w),
    createLocation: {
      success: { status: 201, call: () => send('POST', w.url('/v1/apps/me/locations'), w.auth, { extid: 'covered', type: 'practice' }) },
      refusal: { status: 422, call: () => send('POST', w.url('/v1/apps/me/locations'), w.auth, { label: 'no extid' }) },
    },
    updateLocation: {
      success: { status: 200, call: async () => send('PATCH', w.url(`/v1/apps/me/locations/${await w.storedLocation()}`), w.auth, { label: 'L' }) },
      refusal: { status: 422, call: async () => send('PATCH', w.url(`/v1/apps/me/locations/${await w.storedLocation()}`), w.auth, { extid: 'bad extid' }) },
    },
    rotateKey: {
      // Last in the table: the tool's key changes here.
      success: { status: 200, call: () => send('POST', w.url('/v1/apps/me/rotate-key'), w.auth) },
      refusal: { status: 401, call: () => send('POST', w.url('/v1/apps/me/rotate-key'), null) },
    },
    provisionContext: {
      success: { status: 204, call: async () => { const p = await w.provision('context'); return send('PUT', p.url, `Bearer ${p.token}`); } },
      refusal: { status: 401, call: async () => send('PUT', (await w.provision('context')).url, w.auth) },
    },
    provisionLocation: {
      success: { status: 204, call: async () => { const p = await w.provision('location'); return send('PUT', p.url, `Bearer ${p.token}`, {}); } },
      refusal: { status: 403, call: async () => send('PUT', (await w.provision('location')).url, w.student.auth) },
    },
  };
}

function scenarios0819(w: World): Record<Op0819, Scenario> {
  return {
    ...shared(w),
    createLocation: {
      success: { status: 201, call: () => send('POST', w.url('/v1/apps/me/locations'), w.auth, { type: 'practice', params: { a: 'b' } }) },
      refusal: { status: 422, call: () => send('POST', w.url('/v1/apps/me/locations'), w.auth, { order: 'last' }) },
    },
    updateLocation: {
      success: { status: 200, call: async () => send('PATCH', w.url(`/v1/apps/me/locations/${await w.storedLocation()}`), w.auth, { params: { x: 'y' } }) },
      refusal: { status: 422, call: async () => send('PATCH', w.url(`/v1/apps/me/locations/${await w.storedLocation()}`), w.auth, { type: 'quiz' }) },
    },
  };
}

describe.each(['2026-08-25', '2026-08-19'] as const)('every operation of %s', (version) => {
  let table: Record<string, Scenario>;

  beforeAll(async () => {
    served = version;
    const w = await world(version);
    table = version === '2026-08-25' ? scenarios0825(w) : scenarios0819(w);
  });

  it('has a scenario for each operation of the spec, and no other', () => {
    expect(Object.keys(table).sort()).toEqual(Object.keys(tables[version]).sort());
  });

  // rotate-key last: it replaces the key the other scenarios use.
  const ids = Object.keys(tables[version]).sort((a, b) => Number(a === 'rotateKey') - Number(b === 'rotateKey'));
  for (const op of ids) {
    for (const kind of ['refusal', 'success'] as const) {
      it(`${op}: ${kind}`, async () => {
        const step = table[op]![kind];
        const res = await step.call();
        const text = await res.text();
        expect([res.status, text.slice(0, 300)]).toEqual([step.status, expect.any(String)]);
        expect(res.headers.get('contract-version')).toBe(version);
        expect(judge(version, op, res.status, res.headers.get('content-type'), text)).toEqual([]);
        const requestId = res.headers.get('request-id');
        const line = server.logs.find((l) => l['request_id'] === requestId && l['msg'] === 'request');
        expect(line?.['operation']).toBe(op);
      });
    }
  }
});
