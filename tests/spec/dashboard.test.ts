/**
 * The dashboard API (openapi/dashboard/) is this implementation's own API, not part of the published contract.
 * These tests pin what the contract and docs/decisions/ require of it: that it says so, that every operation
 * takes the right credential (decision GAP-01, NS-10), that registration refuses `callback_url` and returns the
 * API key (GAP-31, NS-10), and that the Sandbox picker reports every locations failure of the contract's table.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundle, loadConfig } from '@redocly/openapi-core';
import { beforeAll, describe, expect, it } from 'vitest';

type Obj = Record<string, unknown>;

const repoPath = (relative: string): string => fileURLToPath(new URL(`../../${relative}`, import.meta.url));
const ROOT = repoPath('openapi/dashboard/openapi.yaml');
const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options', 'trace'] as const;

function isObj(value: unknown): value is Obj {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

let doc: Obj = {};

/** Follows local `$ref`s; the bundle keeps components as references. */
function deref(node: unknown): unknown {
  let current = node;
  const seen = new Set<string>();
  while (isObj(current) && typeof current.$ref === 'string') {
    const ref = current.$ref;
    if (!ref.startsWith('#/')) throw new Error(`a reference survived bundling: ${ref}`);
    if (seen.has(ref)) throw new Error(`reference cycle at ${ref}`);
    seen.add(ref);
    current = ref
      .slice(2)
      .split('/')
      .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((at, key) => (isObj(at) ? at[key] : undefined), doc);
  }
  return current;
}

function obj(node: unknown, what: string): Obj {
  const value = deref(node);
  if (!isObj(value)) throw new Error(`${what} is not an object`);
  return value;
}

interface Operation {
  readonly path: string;
  readonly method: string;
  readonly id: string;
  readonly op: Obj;
}

function operations(): Operation[] {
  const found: Operation[] = [];
  for (const [path, item] of Object.entries(obj(doc.paths, 'paths'))) {
    const pathItem = obj(item, path);
    for (const method of METHODS) {
      const op = pathItem[method];
      if (!isObj(op)) continue;
      found.push({ path, method, id: String(op.operationId), op });
    }
  }
  return found;
}

function operation(id: string): Obj {
  const match = operations().find((o) => o.id === id);
  if (!match) throw new Error(`no operation ${id}`);
  return match.op;
}

function response(op: Obj, status: string): Obj {
  return obj(obj(op.responses, 'responses')[status], `response ${status}`);
}

/** The `value`s of the named examples of one media type of a response. */
function exampleValues(op: Obj, status: string, mediaType: string): unknown[] {
  const media = obj(obj(response(op, status).content, `content of ${status}`)[mediaType], `${status} ${mediaType}`);
  return Object.values(obj(media.examples, `examples of ${status} ${mediaType}`)).map(
    (example) => obj(example, 'example').value,
  );
}

function problemDetails(op: Obj, status: string): string[] {
  return exampleValues(op, status, 'application/problem+json').map((value) => {
    const problem = obj(value, 'problem example');
    expect(problem.status).toBe(Number(status));
    return String(problem.detail);
  });
}

/** Security requirements as sorted scheme-name lists, e.g. `[['builderToken'], ['platformToken']]`. */
function securityOf(op: Obj): string[][] | undefined {
  if (!Array.isArray(op.security)) return undefined;
  return op.security
    .map((requirement: unknown) => Object.keys(obj(requirement, 'security requirement')).sort())
    .sort((a, b) => a.join('+').localeCompare(b.join('+')));
}

beforeAll(async () => {
  const configPath = repoPath('redocly.yaml');
  const config = existsSync(configPath) ? await loadConfig({ configPath }) : await loadConfig();
  const result = await bundle({ ref: ROOT, config, dereference: false });
  const errors = result.problems.filter((problem) => problem.severity === 'error').map((problem) => problem.message);
  expect(errors).toEqual([]);
  doc = JSON.parse(JSON.stringify(result.bundle.parsed)) as Obj;
});

describe('the dashboard API document', () => {
  it('is marked as this implementation’s own API, not the published contract', () => {
    expect(doc['x-implementation-specific']).toBe(true);
    const info = obj(doc.info, 'info');
    expect(info.title).toBe('Dashboard API');
    expect(info.version).toBe('1');
    expect(String(info.description)).toMatch(/not part of the published\s+Tool Integration Service\s+contract/);
    expect(doc.servers).toEqual([expect.objectContaining({ url: 'https://tis.example.edu' })]);
  });

  it('serves only under /dashboard/v1 and the launch page (decisions L-08, LTI-57)', () => {
    const paths = Object.keys(obj(doc.paths, 'paths'));
    expect(paths.length).toBeGreaterThan(20);
    for (const path of paths) {
      expect(path).toMatch(/^(\/dashboard\/v1\/|\/launch\/\{ticket\}$)/);
    }
    expect(paths).toContain('/launch/{ticket}');
  });

  it('declares both dashboard credentials as bearer schemes', () => {
    const schemes = obj(obj(doc.components, 'components').securitySchemes, 'securitySchemes');
    expect(Object.keys(schemes).sort()).toEqual(['builderToken', 'platformToken']);
    for (const name of ['platformToken', 'builderToken']) {
      expect(obj(schemes[name], name)).toMatchObject({ type: 'http', scheme: 'bearer' });
    }
    expect(String(obj(schemes.platformToken, 'platformToken').description)).toMatch(/PLATFORM_TOKEN/);
    expect(String(obj(schemes.platformToken, 'platformToken').description)).toMatch(/DATA_DIR\/platform-token/);
    expect(String(obj(schemes.builderToken, 'builderToken').bearerFormat)).toMatch(/^tisb_/);
  });
});

describe('credentials per operation', () => {
  // Every operation is classified here on purpose: a new operation fails this test until someone decides
  // which credential it takes.
  const PLATFORM_ONLY = [
    'activateApp',
    'suspendApp',
    'createBuilder',
    'listBuilders',
    // Named operators and the audit log (decisions OPS-02, OPS-03).
    'listOperators',
    'createOperator',
    'revokeOperator',
    'listAuditLog',
    // LMS registrations (decision LTI-07).
    'listLmsRegistrations',
    'addLmsRegistration',
    'getLmsRegistration',
    'activateLmsRegistration',
    'deactivateLmsRegistration',
    // Refused LMS messages (decision LTI-126).
    'listLmsRefusals',
    'getLmsRefusal',
    // The Sandbox LMS's LMS-wide controls (decision LTI-69).
    'updateSandboxLmsSettings',
    'resetSandboxLmsSettings',
    'updateSandboxLmsRegistration',
  ];
  const BUILDER_ONLY = ['registerApp']; // decision NS-10: registration takes a builder credential
  const NO_CREDENTIAL = ['openLaunchPage']; // a ticket
  const expected = (id: string): string[][] => {
    if (PLATFORM_ONLY.includes(id)) return [['platformToken']];
    if (BUILDER_ONLY.includes(id)) return [['builderToken']];
    if (NO_CREDENTIAL.includes(id)) return [];
    return [['builderToken'], ['platformToken']];
  };

  it('names every classified operation', () => {
    const ids = operations().map((o) => o.id);
    for (const id of [...PLATFORM_ONLY, ...BUILDER_ONLY, ...NO_CREDENTIAL]) expect(ids).toContain(id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('states its security on every operation, of the right kind', () => {
    expect(doc.security).toBeUndefined();
    const all = operations();
    expect(all.length).toBeGreaterThan(25);
    for (const { id, op } of all) {
      expect({ id, security: securityOf(op) }).toEqual({ id, security: expected(id) });
    }
  });

  it('answers a builder on a platform-only operation with 403, and everyone else unknown with 401', () => {
    for (const id of PLATFORM_ONLY) {
      const op = operation(id);
      expect(problemDetails(op, '403')).toContain("this operation takes the platform team's credential");
      expect(problemDetails(op, '401')).toEqual(expect.arrayContaining(['Missing bearer token', 'Invalid bearer token']));
    }
    expect(problemDetails(operation('registerApp'), '403')[0]).toMatch(/^registering a tool takes a builder credential/);
    for (const { id, op } of operations()) {
      if (NO_CREDENTIAL.includes(id)) continue;
      expect({ id, has401: response(op, '401') !== undefined }).toEqual({ id, has401: true });
    }
  });

  it('leaves the launch page without any credential and answers it only in HTML', () => {
    const op = operation('openLaunchPage');
    expect(op.security).toEqual([]);
    const statuses = Object.keys(obj(op.responses, 'responses'));
    expect(statuses).toEqual(expect.arrayContaining(['200', '403', '404', '410']));
    for (const status of statuses) {
      const content = obj(response(op, status).content, `content of ${status}`);
      expect(Object.keys(content)).toEqual(['text/html']);
    }
    const form = String(exampleValues(op, '200', 'text/html')[0]);
    expect(form).toMatch(/<form[^>]*method="post"[^>]*action="https:\/\//);
    expect(form).toMatch(/name="launch_data"/);
    for (const status of ['403', '404', '410']) {
      for (const page of exampleValues(op, status, 'text/html')) expect(String(page)).toMatch(/Report ID/);
    }
  });
});

describe('registration (decisions NS-10, GAP-31)', () => {
  const CALLBACK_REFUSED = "callback_url is not accepted at registration; set it in the tool's settings";

  it('has no callback_url in its body schema and refuses unknown fields', () => {
    const body = obj(obj(obj(operation('registerApp').requestBody, 'requestBody').content, 'content')['application/json'], 'json');
    const schema = obj(body.schema, 'AppRegistration');
    expect(schema.additionalProperties).toBe(false);
    const properties = obj(schema.properties, 'properties');
    expect(Object.keys(properties)).not.toContain('callback_url');
    expect(Object.keys(properties).sort()).toEqual(['contract_version', 'description', 'hosting', 'logo_url', 'name']);
    expect(schema.required).toEqual(expect.arrayContaining(['name', 'hosting']));
    expect(obj(properties.hosting, 'hosting').enum).toEqual(['hosted', 'self_hosted']);
    const version = obj(properties.contract_version, 'contract_version');
    expect(version.enum).toEqual(['2026-09-21', '2026-08-25', '2026-08-19']);
    expect(version.default).toBe('2026-09-21');
  });

  it('answers callback_url with the 422 of decision GAP-31', () => {
    expect(problemDetails(operation('registerApp'), '422')).toContain(CALLBACK_REFUSED);
  });

  it('returns the API key once for a self-hosted tool and null for a hosted one', () => {
    const op = operation('registerApp');
    const created = obj(obj(obj(response(op, '201').content, 'content')['application/json'], 'json').schema, 'schema');
    expect(created.required).toEqual(expect.arrayContaining(['app', 'api_key']));
    const apiKey = obj(obj(created.properties, 'properties').api_key, 'api_key');
    expect(apiKey.type).toEqual(['string', 'null']);
    const values = exampleValues(op, '201', 'application/json').map((value) => obj(value, 'registered'));
    const selfHosted = values.find((value) => obj(value.app, 'app').hosting === 'self_hosted');
    const hosted = values.find((value) => obj(value.app, 'app').hosting === 'hosted');
    expect(String(selfHosted?.api_key)).toMatch(/^ltiaas_app_[a-z0-9]+_[A-Za-z0-9_-]{43}$/);
    expect(hosted?.api_key).toBeNull();
    expect(obj(selfHosted?.app, 'app').status).toBe('draft');
  });
});

describe('settings and status (decisions GAP-30, NS-08)', () => {
  it('refuses status and hosting in the settings with the decided messages', () => {
    const op = operation('updateAppSettings');
    const schema = obj(obj(obj(obj(op.requestBody, 'requestBody').content, 'content')['application/json'], 'json').schema, 'patch');
    expect(schema.additionalProperties).toBe(false);
    const settable = Object.keys(obj(schema.properties, 'properties'));
    expect(settable).toContain('callback_url');
    expect(settable).not.toContain('status');
    expect(settable).not.toContain('hosting');
    expect(problemDetails(op, '422')).toEqual(
      expect.arrayContaining(['status is changed only by the platform team', 'hosting mode is permanent']),
    );
  });

  it('makes activate and suspend idempotent: they never answer 409', () => {
    for (const id of ['activateApp', 'suspendApp']) {
      const responses = obj(operation(id).responses, 'responses');
      expect(Object.keys(responses)).toContain('200');
      expect(Object.keys(responses)).not.toContain('409');
    }
  });
});

describe('the Sandbox picker', () => {
  // The contract's "Locations request failures" table, word for word. The row the table says comes "with the
  // status" carries it in parentheses, the one "with detail" carries it after ": " (decision S-05).
  const EXACT = [
    'app connection timeout',
    'app connection failure',
    'the app redirected the locations request; locations_url must name the endpoint itself',
    'the app returned invalid JSON',
    'the app nested location groups more than 5 levels deep',
    'the app returned a location group with an empty label',
  ];
  const WITH_STATUS = 'app failed to provide the available locations';
  const WITH_DETAIL = 'the app returned an invalid locations structure';

  it('has an example detail for every locations failure of the contract', () => {
    const details = problemDetails(operation('openSandboxPicker'), '502');
    for (const message of EXACT) expect(details).toContain(message);
    expect(details.some((detail) => detail.startsWith(`${WITH_DETAIL}: `) && detail.length > WITH_DETAIL.length + 2)).toBe(true);
    expect(details.find((detail) => detail.startsWith(WITH_STATUS))).toMatch(/^app failed to provide the available locations \(HTTP \d{3}\)$/);
  });

  it('answers a tool without a locations URL with the contract’s message', () => {
    expect(problemDetails(operation('openSandboxPicker'), '409')).toContain('App does not have a locations_url configured');
  });
});

describe('error bodies', () => {
  it('are Problems everywhere except the launch page', () => {
    let checked = 0;
    for (const { id, op } of operations()) {
      if (id === 'openLaunchPage') continue;
      for (const [status, raw] of Object.entries(obj(op.responses, 'responses'))) {
        if (Number(status) < 400) continue;
        const content = obj(obj(raw, `${id} ${status}`).content, `${id} ${status} content`);
        expect({ id, status, types: Object.keys(content) }).toEqual({ id, status, types: ['application/problem+json'] });
        const schema = obj(content['application/problem+json'], 'media').schema;
        expect({ id, status, schema }).toEqual({ id, status, schema: { $ref: '#/components/schemas/Problem' } });
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(80);
  });

  it('one rule for a body that is not JSON: 400 `malformed_json` on every operation that takes a body (S-50)', () => {
    const info = String(obj(doc.info, 'info').description).replace(/\s+/g, ' ');
    expect(info).toContain('a request body that is not JSON answers 400 `malformed_json`');
    let checked = 0;
    for (const { id, op } of operations()) {
      if (op.requestBody === undefined) continue;
      const types = Object.keys(obj(obj(deref(op.requestBody), `${id} requestBody`).content, `${id} content`));
      if (!types.some((type) => type.includes('json'))) continue;
      const refused = obj(deref(obj(op.responses, 'responses')['400']), `${id} 400`);
      expect({ id, description: refused.description }).toEqual({ id, description: 'The body is not valid JSON.\n' });
      checked++;
    }
    expect(checked).toBeGreaterThan(20);
  });
});
