/**
 * The specs of the two archived contracts, openapi/2026-08-25 and openapi/2026-08-19, checked against the
 * archived contract document and the decisions that shape them (NS-15, NS-18 to NS-21, GAP-22, GAP-29,
 * GAP-40 to GAP-46). Each spec is bundled here with @redocly/openapi-core, as the generator bundles it, so the
 * assertions see the components the way clients and Prism do.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle, loadConfig } from '@redocly/openapi-core';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';

// The bundle is plain JSON of an open shape; the helpers below check what they navigate.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Node = any;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const addFormats = addFormatsModule.default;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'] as const;

const ARCHIVED = ['2026-08-25', '2026-08-19'] as const;
type Version = (typeof ARCHIVED)[number];

const specs = {} as Record<Version, Node>;

async function bundleSpec(version: Version): Promise<Node> {
  const config = await loadConfig({ configPath: path.join(root, 'redocly.yaml') });
  const result = await bundle({ ref: path.join(root, 'openapi', version, 'openapi.yaml'), config });
  const errors = result.problems.filter((p) => p.severity === 'error').map((p) => p.message);
  expect(errors, `bundling ${version}`).toEqual([]);
  return JSON.parse(JSON.stringify(result.bundle.parsed)) as Node;
}

beforeAll(async () => {
  for (const version of ARCHIVED) specs[version] = await bundleSpec(version);
});

/** Follows local `$ref`s (`#/components/...`) until a node without one. */
function deref(spec: Node, node: Node): Node {
  let current = node;
  for (let hops = 0; current && typeof current === 'object' && typeof current.$ref === 'string'; hops++) {
    if (hops > 20 || !current.$ref.startsWith('#/')) throw new Error(`cannot follow ${current.$ref}`);
    current = current.$ref
      .slice(2)
      .split('/')
      .map((s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((at: Node, key: string) => at?.[key], spec);
  }
  return current;
}

interface Operation {
  readonly where: string;
  readonly path: string;
  readonly method: string;
  readonly op: Node;
}

function operations(spec: Node): Operation[] {
  const out: Operation[] = [];
  for (const [group, items] of [['paths', spec.paths], ['webhooks', spec.webhooks ?? {}]] as const) {
    for (const [p, item0] of Object.entries<Node>(items)) {
      const item = deref(spec, item0);
      for (const method of METHODS) {
        if (item[method]) out.push({ where: group, path: p, method, op: item[method] });
      }
    }
  }
  return out;
}

function operation(spec: Node, operationId: string): Node {
  const found = operations(spec).filter((o) => o.op.operationId === operationId);
  expect(found, `operation ${operationId}`).toHaveLength(1);
  return found[0]!.op;
}

/** The problem examples of one response of an operation, as `detail -> example value`. */
function problems(spec: Node, operationId: string, status: number): Map<string, Node> {
  const response = deref(spec, operation(spec, operationId).responses?.[String(status)]);
  const media = response?.content?.['application/problem+json'];
  const out = new Map<string, Node>();
  for (const example of Object.values<Node>(media?.examples ?? {})) {
    const value = deref(spec, example).value;
    out.set(value.detail, value);
  }
  return out;
}

function schema(spec: Node, name: string): Node {
  const found = spec.components?.schemas?.[name];
  expect(found, `components.schemas.${name}`).toBeDefined();
  return deref(spec, found);
}

function propertyNames(spec: Node, name: string): string[] {
  return Object.keys(schema(spec, name).properties ?? {}).sort();
}

/** Every dotted property path of a claims schema, through `$ref`s and `oneOf` alternatives. */
function claimPaths(spec: Node, node0: Node, prefix = ''): string[] {
  const node = deref(spec, node0);
  const out: string[] = [];
  for (const alternative of node.oneOf ?? []) out.push(...claimPaths(spec, alternative, prefix));
  for (const [key, child] of Object.entries<Node>(node.properties ?? {})) {
    const here = prefix ? `${prefix}.${key}` : key;
    out.push(here, ...claimPaths(spec, child, here));
  }
  return out;
}

/** The property node at a dotted path of a schema, through `$ref`s. */
function propertyAt(spec: Node, schemaName: string, dotted: string): Node {
  let node = schema(spec, schemaName);
  for (const key of dotted.split('.')) {
    node = deref(spec, node?.properties?.[key]);
  }
  return node;
}

function validator(spec: Node) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(spec, 'spec');
  return (pointer: string, value: unknown): boolean => ajv.compile({ $ref: `spec#${pointer}` })(value) as boolean;
}

const escapePointer = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

// The grade error table of the archived document, with NS-20's allowed-values text and NS-21's 401 messages.
const GRADE_ERRORS_COMMON: ReadonlyArray<readonly [number, string]> = [
  [422, 'score must be between 0 and 1'],
  [422, 'activity_progress must be one of [Completed, Submitted]'],
  [422, 'grading_progress must be one of [FullyGraded, Pending]'],
  [422, "This launch's location is not an assessment (grade passback is only allowed for assessment locations)"],
  [422, 'Launch has no grade passback (no LMS line item)'],
  [404, 'Launch not found'],
  [401, 'Missing Bearer API key'],
  [401, 'Invalid API key'],
];
const GRADE_ERRORS: Record<Version, ReadonlyArray<readonly [number, string]>> = {
  '2026-08-25': [...GRADE_ERRORS_COMMON, [422, 'max_score must be greater than 0']],
  '2026-08-19': [...GRADE_ERRORS_COMMON, [422, 'unknown field: max_score']],
};

describe.each(ARCHIVED)('contract %s', (version) => {
  it('is marked archived, names its replacement and how to select it on the wire', () => {
    const { info, servers } = specs[version];
    expect(info.version).toBe(version);
    expect(info.title).toBe('Tool Integration Service');
    expect(info.description).toContain('ARCHIVED');
    expect(info.description).toContain('2026-09-21');
    expect(info.description).toContain(`Contract-Version: ${version}`);
    expect(info.description).toContain('application/problem+json');
    expect(servers).toEqual([{ url: 'https://tis.example.edu' }]);
  });

  it.each(GRADE_ERRORS[version])('submitGrade answers %i with "%s"', (status, message) => {
    const example = problems(specs[version], 'submitGrade', status).get(message);
    expect(example, `${status} ${message}`).toBeDefined();
    expect(example.status).toBe(status);
  });

  it('submitGrade names the suspended tool in its 401 and getGrade answers 404 Grade not found', () => {
    const spec = specs[version];
    const unauthorized = [...problems(spec, 'submitGrade', 401).keys()];
    expect(unauthorized.some((d) => /^tool \S+ is suspended$/.test(d))).toBe(true);
    const notFound = problems(spec, 'getGrade', 404).get('Grade not found');
    expect(notFound?.status).toBe(404);
    expect([...problems(spec, 'getGrade', 401).keys()]).toEqual(
      expect.arrayContaining(['Missing Bearer API key', 'Invalid API key']),
    );
  });

  it('answers 404 Location not found and refuses to delete the home location', () => {
    const spec = specs[version];
    for (const id of ['updateLocation', 'deleteLocation']) {
      expect(problems(spec, id, 404).get('Location not found')?.status).toBe(404);
    }
    expect(problems(spec, 'deleteLocation', 422).get('the home location cannot be deleted')?.status).toBe(422);
  });

  it('names blank names, bad callback URLs, read-only status and unknown types with their messages', () => {
    const spec = specs[version];
    const app = [...problems(spec, 'updateApp', 422).keys()];
    expect(app).toEqual(expect.arrayContaining(['name cannot be blank', 'status is read-only']));
    expect(app.filter((d) => d.startsWith('callback_url must'))).toHaveLength(2);
    for (const id of ['createLocation', 'updateLocation']) {
      expect(problems(spec, id, 422).has('type must be one of [assessment, practice, content, setup]')).toBe(true);
    }
  });

  it('takes the API key on management and grades, the api.token on storage and provisioning', () => {
    const spec = specs[version];
    const { apiKey, apiToken } = spec.components.securitySchemes;
    expect([apiKey.scheme, apiToken.scheme]).toEqual(['bearer', 'bearer']);
    expect(apiKey.bearerFormat).toContain('ltiaas_');
    const seen = { apiKey: 0, apiToken: 0 };
    for (const { where, path: p, method, op } of operations(spec)) {
      const label = `${method.toUpperCase()} ${p}`;
      if (where === 'webhooks') {
        expect(op.security, label).toEqual([]);
      } else if (p.startsWith('/v1/apps/me') || p.startsWith('/v1/grades')) {
        expect(op.security, label).toEqual([{ apiKey: [] }]);
        seen.apiKey++;
      } else if (p.endsWith('/storage') || p.endsWith('/provision')) {
        expect(op.security, label).toEqual([{ apiToken: [] }]);
        seen.apiToken++;
      } else {
        expect(p, label).toBe('/.well-known/jwks.json');
        expect(op.security, label).toEqual([]);
      }
    }
    // Management and grades; the four rows times GET, PUT, PATCH (plus two provision PUTs in 2026-08-25).
    expect(seen).toEqual(
      version === '2026-08-25' ? { apiKey: 9, apiToken: 14 } : { apiKey: 8, apiToken: 12 },
    );
  });

  it('serves the four storage rows at the L-02 paths and no files (GAP-44)', () => {
    const paths = Object.keys(specs[version].paths);
    const base = '/v1/contexts/{context_id}/apps/{app_id}';
    expect(paths.filter((p) => p.endsWith('/storage')).sort()).toEqual(
      [
        `${base}/storage`,
        `${base}/locations/{location_id}/storage`,
        `${base}/members/{member_id}/storage`,
        `${base}/locations/{location_id}/members/{member_id}/storage`,
      ].sort(),
    );
    expect(paths.filter((p) => p.includes('/files') || p.includes('/uploads') || p.includes('/downloads'))).toEqual(
      [],
    );
    expect(paths.filter((p) => p.includes('/scores') || p.startsWith('/account'))).toEqual([]);
  });

  it('carries grade_passback and launch_id, never files or grade, in its launch claims', () => {
    const spec = specs[version];
    const launch = schema(spec, 'LaunchClaims');
    const top = Object.keys(launch.properties);
    expect(top).toEqual(expect.arrayContaining(['grade_passback', 'launch_id', 'iss', 'aud', 'jti', 'storage']));
    expect(top).not.toContain('files');
    expect(top).not.toContain('grade');
    expect(launch.required).toEqual(expect.arrayContaining(['grade_passback', 'launch_id', 'aud', 'jti']));
    expect(propertyAt(spec, 'LaunchClaims', 'grade_passback').type).toBe('boolean');
    expect(launch.additionalProperties).toBe(false);
    expect(propertyNames(spec, 'StorageClaim')).toEqual(['context', 'location', 'member', 'member_location']);
  });

  it('signs each launch_data example with the published key, over a payload that is a LaunchClaims example', async () => {
    const spec = specs[version];
    const jwks = deref(spec, operation(spec, 'getPublicKeys').responses['200']).content['application/json'];
    const keys = createLocalJWKSet(deref(spec, Object.values<Node>(jwks.examples)[0]).value);
    const validate = validator(spec);
    const media = operation(spec, 'toolLaunch').requestBody.content['application/x-www-form-urlencoded'];
    const claimExamples = schema(spec, 'LaunchClaims').examples as Node[];
    const examples = Object.values<Node>(media.examples).map((e) => deref(spec, e).value.launch_data as string);
    expect(examples.length).toBeGreaterThan(0);
    for (const jwt of examples) {
      expect(decodeProtectedHeader(jwt)).toMatchObject({ alg: 'RS256', typ: 'JWT' });
      const claims = decodeJwt(jwt);
      const { payload } = await jwtVerify(jwt, keys, {
        issuer: 'https://tis.example.edu',
        audience: String(claims.aud),
        currentDate: new Date(((claims.iat ?? 0) + 1) * 1000),
      });
      expect(payload.exp! - payload.iat!).toBe(300);
      expect(claimExamples).toContainEqual(payload);
      expect(validate('/components/schemas/LaunchClaims', payload)).toBe(true);
    }
  });

  it('keeps every example valid against its schema', () => {
    const spec = specs[version];
    const validate = validator(spec);
    const failures: string[] = [];
    let checked = 0;
    const walk = (node: Node, pointer: string): void => {
      if (!node || typeof node !== 'object') return;
      if (node.schema && node.examples && !Array.isArray(node.examples) && !pointer.includes('/properties/')) {
        for (const [name, example] of Object.entries<Node>(node.examples)) {
          checked++;
          if (!validate(`${pointer}/schema`, deref(spec, example).value)) failures.push(`${pointer} ${name}`);
        }
      }
      if (/^\/components\/schemas\/[^/]+$/.test(pointer) && Array.isArray(node.examples)) {
        node.examples.forEach((value: Node, i: number) => {
          checked++;
          if (!validate(pointer, value)) failures.push(`${pointer} examples[${i}]`);
        });
      }
      for (const [key, child] of Object.entries<Node>(node)) walk(child, `${pointer}/${escapePointer(key)}`);
    };
    walk(spec, '');
    expect(failures).toEqual([]);
    expect(checked).toBeGreaterThan(80);
  });

  it('gives every problem example the status of the response it is listed under', () => {
    const spec = specs[version];
    const mismatches: string[] = [];
    for (const { path: p, method, op } of operations(spec)) {
      for (const [status, response0] of Object.entries<Node>(op.responses ?? {})) {
        const media = deref(spec, response0).content?.['application/problem+json'];
        for (const [name, example] of Object.entries<Node>(media?.examples ?? {})) {
          const value = deref(spec, example).value;
          if (String(value.status) !== status) mismatches.push(`${method} ${p} ${status} ${name}: ${value.status}`);
        }
      }
    }
    expect(mismatches).toEqual([]);
  });
});

describe('2026-08-25', () => {
  const v = '2026-08-25';

  it('has the management API with key rotation', () => {
    const spec = specs[v];
    const ids = operations(spec)
      .filter((o) => o.op.tags?.[0] === 'Management')
      .map((o) => o.op.operationId)
      .sort();
    expect(ids).toEqual(
      ['createLocation', 'deleteLocation', 'getApp', 'listLocations', 'rotateKey', 'updateApp', 'updateLocation'].sort(),
    );
    expect(spec.paths['/v1/apps/me/rotate-key'].post.operationId).toBe('rotateKey');
    expect(propertyNames(spec, 'RotatedKey')).toEqual(['api_key', 'api_key_hint', 'app_id', 'message']);
  });

  it('has provision_url and locations_url in the app object and its update', () => {
    const spec = specs[v];
    expect(propertyNames(spec, 'App')).toEqual(
      [
        'api_key_hint',
        'callback_url',
        'created',
        'description',
        'grades_released',
        'id',
        'locations',
        'locations_url',
        'logo_url',
        'name',
        'provision_url',
        'status',
      ].sort(),
    );
    expect(propertyNames(spec, 'AppUpdate')).toEqual(
      ['callback_url', 'description', 'grades_released', 'locations_url', 'logo_url', 'name', 'provision_url'].sort(),
    );
    expect(schema(spec, 'App').properties.status.enum).toEqual(['draft', 'active', 'suspended']);
    expect(schema(spec, 'App').properties.grades_released.default).toBe(true);
  });

  it('writes the key hint as ltiaas_ and three ASCII dots (GAP-29)', () => {
    const validate = validator(specs[v]);
    expect(validate('/components/schemas/App/properties/api_key_hint', 'ltiaas_...Q7mZ')).toBe(true);
    expect(validate('/components/schemas/App/properties/api_key_hint', 'ltiaas_\u2026Q7mZ')).toBe(false);
    expect(validate('/components/schemas/App/properties/api_key_hint', 'ltiaas_...Q7mZx')).toBe(false);
  });

  it('clears provision_url and locations_url with an empty string but never callback_url', () => {
    const validate = validator(specs[v]);
    const at = '/components/schemas/AppUpdate';
    expect(validate(at, { provision_url: '', locations_url: '' })).toBe(true);
    expect(validate(at, { callback_url: '' })).toBe(false);
    expect(validate(at, { locations_url: 'http://quizlab.example.com/tis/locations' })).toBe(false);
    expect(validate(at, { status: 'active' })).toBe(false);
    expect(validate(at, { name: '   ' })).toBe(false);
  });

  it('names every 422 of the management table (GAP-40, GAP-41)', () => {
    const spec = specs[v];
    const app = [...problems(spec, 'updateApp', 422).keys()];
    expect(app.some((d) => d.startsWith('provision_url must'))).toBe(true);
    expect(app.some((d) => d.startsWith('locations_url must'))).toBe(true);
    const create = [...problems(spec, 'createLocation', 422).keys()];
    expect(create).toContain('extid is required');
    expect(create.some((d) => /^extid \S+ is already used$/.test(d))).toBe(true);
    expect(create.some((d) => d.startsWith('extid must be'))).toBe(true);
    expect(problems(spec, 'updateLocation', 422).has('extid is permanent once placed')).toBe(true);
  });

  it('stores legacy locations as {id, extid, type, label} with the create rules', () => {
    const spec = specs[v];
    expect(propertyNames(spec, 'LegacyLocation')).toEqual(['extid', 'id', 'label', 'type']);
    const create = schema(spec, 'LocationCreate');
    expect(create.required).toEqual(['extid']);
    expect(create.properties.type.default).toBe('content');
    expect(create.properties.label.default).toBe('');
    const validate = validator(spec);
    expect(validate('/components/schemas/LocationCreate', { extid: 'quiz-week_4' })).toBe(true);
    expect(validate('/components/schemas/LocationCreate', { extid: 'quiz week 4' })).toBe(false);
    expect(validate('/components/schemas/LocationCreate', { extid: 'quiz-4', type: 'lecture' })).toBe(false);
    expect(validate('/components/schemas/LocationCreate', { label: 'No extid' })).toBe(false);
  });

  it('accepts max_score greater than 0 in the grade body and records it', () => {
    const spec = specs[v];
    expect(propertyNames(spec, 'GradeSubmission')).toContain('max_score');
    expect(propertyNames(spec, 'GradeRecord')).toContain('max_score');
    const validate = validator(spec);
    const body = '/components/schemas/GradeSubmission';
    expect(validate(body, { launch_id: 'lch_9v3b7n1m5k8j2h6g4f0d', score: 0.5, max_score: 50 })).toBe(true);
    expect(validate(body, { launch_id: 'lch_9v3b7n1m5k8j2h6g4f0d', score: 0.5, max_score: 0 })).toBe(false);
    expect(validate(body, { launch_id: 'lch_9v3b7n1m5k8j2h6g4f0d', score: 1.5 })).toBe(false);
    expect(validate(body, { score: 0.5 })).toBe(false);
    expect(validate(body, { launch_id: 'lch_9v3b7n1m5k8j2h6g4f0d', score: 0.5, points: 10 })).toBe(false);
    expect(schema(spec, 'GradeRecord').properties.sync_status.enum).toEqual(['pending', 'synced', 'failed']);
  });

  it('answers a Test-tab trial launch with a trial_ grade that is synced at once (GAP-43)', () => {
    const spec = specs[v];
    const media = operation(spec, 'submitGrade').responses['200'].content['application/json'];
    const trials = Object.values<Node>(media.examples)
      .map((e) => deref(spec, e).value)
      .filter((g) => String(g.grade_id).startsWith('trial_'));
    expect(trials).toHaveLength(1);
    expect(trials[0].sync_status).toBe('synced');
    expect(trials[0].synced_at).toBe(trials[0].submitted_at);
  });

  it('has the 2026-08-25 launch claims, marking what replaced a 2026-08-19 claim', () => {
    const spec = specs[v];
    const claims = claimPaths(spec, schema(spec, 'LaunchClaims'));
    expect(claims).toEqual(
      expect.arrayContaining([
        'user.groups',
        'user.member',
        'resource_link',
        'organization.deployment',
        'context',
        'location.extid',
        'grade_passback',
        'provision.context',
        'provision.location',
      ]),
    );
    for (const old of ['user.role', 'resource_link_id', 'organization.id', 'location.params']) {
      expect(claims).not.toContain(old);
    }
    expect(propertyAt(spec, 'LaunchClaims', 'user.groups')['x-replaces']).toBe('user.role');
    expect(propertyAt(spec, 'LaunchClaims', 'resource_link')['x-replaces']).toBe('resource_link_id');
    expect(propertyAt(spec, 'LaunchClaims', 'organization.deployment')['x-replaces']).toBe('organization.id');
    expect(propertyAt(spec, 'LaunchClaims', 'user.groups').items.enum.sort()).toEqual(
      ['assistant', 'instructor', 'manager', 'student'],
    );
  });

  it('only names 2026-08-19 claims in x-replaces', () => {
    const older = claimPaths(specs['2026-08-19'], schema(specs['2026-08-19'], 'LaunchClaims'));
    const replaced: string[] = [];
    const walk = (node: Node): void => {
      if (!node || typeof node !== 'object') return;
      if (typeof node['x-replaces'] === 'string') replaced.push(node['x-replaces']);
      for (const child of Object.values<Node>(node)) walk(child);
    };
    walk(specs[v].components.schemas);
    expect(replaced.sort()).toEqual(['organization.id', 'resource_link_id', 'user.role']);
    for (const old of replaced) expect(older).toContain(old);
  });

  it('keeps personal data out of student launches', () => {
    const validate = validator(specs[v]);
    const student = structuredClone(schema(specs[v], 'LaunchClaims').examples[0]);
    expect(student.user.groups).toEqual(['student']);
    expect(validate('/components/schemas/LaunchClaims', student)).toBe(true);
    student.user.email = 'sam.lee@northfield.edu';
    expect(validate('/components/schemas/LaunchClaims', student)).toBe(false);
  });

  it('sends launch, provision and locations requests as signed forms', () => {
    const spec = specs[v];
    expect(Object.keys(spec.webhooks).sort()).toEqual(['launch', 'locations', 'provision']);
    const expected = { launch: 'toolLaunch', provision: 'toolProvision', locations: 'toolLocations' } as const;
    for (const [name, operationId] of Object.entries(expected)) {
      const op = deref(spec, spec.webhooks[name]).post;
      expect(op.operationId).toBe(operationId);
      expect(op.tags).toEqual(['Tool endpoints']);
      const form = deref(spec, op.requestBody.content['application/x-www-form-urlencoded'].schema);
      expect(form.required).toEqual(['launch_data']);
      expect(Object.keys(op.responses).some((s) => s.startsWith('4'))).toBe(true);
    }
    const provision = claimPaths(spec, schema(spec, 'ProvisionClaims'));
    expect(provision).toEqual(expect.arrayContaining(['provision.context', 'storage.parent_context', 'course.name']));
    for (const absent of ['user', 'launch_id', 'resource_link', 'grade_passback', 'files']) {
      expect(provision).not.toContain(absent);
    }
    expect(propertyAt(spec, 'LocationsClaims', 'api.token').type).toBe('null');
    expect(claimPaths(spec, schema(spec, 'LocationsClaims'))).not.toContain('storage');
  });

  it('reads only `locations` from a locations response (GAP-46)', () => {
    const spec = specs[v];
    const response = schema(spec, 'LocationsResponse');
    expect(Object.keys(response.properties)).toEqual(['locations']);
    expect(response.required).toEqual(['locations']);
    const validate = validator(spec);
    const at = '/components/schemas/LocationsResponse';
    const quiz = { type: 'assessment', label: 'Week 3 quiz' };
    expect(validate(at, { locations: { 'quiz-week-3': quiz }, message: 'ignored', grouped_locations: [] })).toBe(true);
    expect(validate(at, { message: 'Nothing for this course yet' })).toBe(false);
    expect(validate(at, { locations: { 'quiz week 3': quiz } })).toBe(false);
    expect(validate(at, { locations: { 'quiz-week-3': { type: 'assessment' } } })).toBe(false);
    expect(schema(spec, 'LocationEntry').properties.points.default).toBe(100);
  });

  it('serves the provision URLs of L-04', () => {
    const base = '/v1/contexts/{context_id}/apps/{app_id}';
    const paths = specs[v].paths;
    expect(paths[`${base}/provision`].put.operationId).toBe('provisionContext');
    expect(paths[`${base}/locations/{location_id}/provision`].put.operationId).toBe('provisionLocation');
  });
});

describe('2026-08-19', () => {
  const v = '2026-08-19';

  it('has the management API without key rotation, which answers 404 (GAP-42)', () => {
    const spec = specs[v];
    const ids = operations(spec)
      .filter((o) => o.op.tags?.[0] === 'Management')
      .map((o) => o.op.operationId)
      .sort();
    expect(ids).toEqual(
      ['createLocation', 'deleteLocation', 'getApp', 'listLocations', 'updateApp', 'updateLocation'].sort(),
    );
    expect(spec.paths['/v1/apps/me/rotate-key']).toBeUndefined();
    expect(spec.info.description).toMatch(/rotate-key`? answers 404/);
  });

  it('has neither provision_url nor locations_url, and refuses them as unknown fields', () => {
    const spec = specs[v];
    expect(propertyNames(spec, 'App')).toEqual(
      [
        'api_key_hint',
        'callback_url',
        'created',
        'description',
        'grades_released',
        'id',
        'locations',
        'logo_url',
        'name',
        'status',
      ].sort(),
    );
    expect(propertyNames(spec, 'AppUpdate')).toEqual(
      ['callback_url', 'description', 'grades_released', 'logo_url', 'name'].sort(),
    );
    const validate = validator(spec);
    expect(validate('/components/schemas/AppUpdate', { grades_released: false })).toBe(true);
    expect(validate('/components/schemas/AppUpdate', { provision_url: '' })).toBe(false);
    const app = [...problems(spec, 'updateApp', 422).keys()];
    expect(app).toEqual(expect.arrayContaining(['unknown field: provision_url', 'unknown field: locations_url']));
    expect(app.some((d) => d.startsWith('provision_url must') || d.startsWith('locations_url must'))).toBe(false);
    expect(spec.paths['/v1/contexts/{context_id}/apps/{app_id}/provision']).toBeUndefined();
  });

  it('stores locations as {id, is_default, order, type, label, params} with their rules', () => {
    const spec = specs[v];
    expect(propertyNames(spec, 'LegacyLocation')).toEqual(['id', 'is_default', 'label', 'order', 'params', 'type']);
    expect(propertyNames(spec, 'LocationCreate')).toEqual(['label', 'order', 'params', 'type']);
    const create = schema(spec, 'LocationCreate');
    expect(create.required).toBeUndefined();
    expect(create.properties.type.default).toBe('content');
    expect(create.properties.label.default).toBe('');
    expect(create.properties.params.default).toEqual({});
    const validate = validator(spec);
    const at = '/components/schemas/LocationCreate';
    expect(validate(at, { order: 3, params: { attempts: '2' } })).toBe(true);
    expect(validate(at, { order: 1.5 })).toBe(false);
    expect(validate(at, { params: { attempts: 2 } })).toBe(false);
    expect(validate(at, { type: 'lecture' })).toBe(false);
    expect(validate(at, { extid: 'quiz-week-4' })).toBe(false);
    const messages = [...problems(spec, 'createLocation', 422).keys()];
    expect(messages).toContain('order must be an integer');
    expect(messages.some((d) => d.startsWith('params must'))).toBe(true);
    expect(messages.some((d) => d.startsWith('extid'))).toBe(false);
  });

  it('has no max_score in the grade body or record, and no max_score range message', () => {
    const spec = specs[v];
    expect(propertyNames(spec, 'GradeSubmission')).not.toContain('max_score');
    expect(propertyNames(spec, 'GradeRecord')).not.toContain('max_score');
    const validate = validator(spec);
    const body = '/components/schemas/GradeSubmission';
    expect(validate(body, { launch_id: 'lch_9v3b7n1m5k8j2h6g4f0d', score: 0.5 })).toBe(true);
    expect(validate(body, { launch_id: 'lch_9v3b7n1m5k8j2h6g4f0d', score: 0.5, max_score: 50 })).toBe(false);
    expect(problems(spec, 'submitGrade', 422).has('max_score must be greater than 0')).toBe(false);
  });

  it('has the 2026-08-19 launch claims', () => {
    const spec = specs[v];
    const claims = claimPaths(spec, schema(spec, 'LaunchClaims'));
    expect(claims).toEqual(
      expect.arrayContaining([
        'user.role',
        'resource_link_id',
        'organization.id',
        'location.params',
        'grade_passback',
        'launch_id',
        'course.name',
        'storage.member_location',
      ]),
    );
    for (const later of [
      'context',
      'user.groups',
      'user.member',
      'resource_link',
      'organization.deployment',
      'location.extid',
      'provision',
    ]) {
      expect(claims).not.toContain(later);
    }
    expect(propertyAt(spec, 'LaunchClaims', 'user.role').enum.sort()).toEqual(
      ['assistant', 'instructor', 'manager', 'student'],
    );
    expect(propertyAt(spec, 'LaunchClaims', 'location.params').additionalProperties).toEqual({ type: 'string' });
  });

  it('sends launches only: no provision or locations requests', () => {
    const spec = specs[v];
    expect(Object.keys(spec.webhooks)).toEqual(['launch']);
    expect(deref(spec, spec.webhooks.launch).post.operationId).toBe('toolLaunch');
    for (const name of ['ProvisionClaims', 'LocationsClaims', 'LocationsResponse']) {
      expect(spec.components.schemas[name]).toBeUndefined();
    }
  });
});

describe('the two launch claim shapes', () => {
  it.each([
    ['2026-08-19', '2026-08-25'],
    ['2026-08-25', '2026-08-19'],
  ] as const)('a %s launch example validates against its own LaunchClaims and not against %s', (from, against) => {
    const examples = schema(specs[from], 'LaunchClaims').examples as Node[];
    expect(examples.length).toBeGreaterThan(0);
    const own = validator(specs[from]);
    const other = validator(specs[against]);
    for (const example of examples) {
      expect(own('/components/schemas/LaunchClaims', example)).toBe(true);
      expect(other('/components/schemas/LaunchClaims', example)).toBe(false);
    }
  });
});
