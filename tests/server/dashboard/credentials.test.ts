/**
 * The dashboard's credentials (decision S-07): the platform token (PLATFORM_TOKEN, or generated at first
 * start into DATA_DIR/platform-token, mode 0600, and reused), builder tokens, and what each sees: the
 * platform team every tool; a builder the tools of its teams, any other tool answering 404 exactly like
 * a tool that does not exist; 403 for the kind of credential an operation does not take, after the 404.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../server/config.js';
import type { TestServer } from '../harness.js';
import { launch, placeLocation, startServer } from '../harness.js';
import type { Answer, Builder, Caller } from './helpers.js';
import { caller, createBuilder, expectProblem, platformToken, register } from './helpers.js';

describe('the platform token', () => {
  it('is generated at first start into DATA_DIR/platform-token (0600) and reused after a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tis-platform-token-'));
    try {
      const first = await startServer({ dataDir });
      const token = platformToken(first);
      expect(token).toMatch(/^tisp_[A-Za-z0-9_-]{43}$/);
      expect(statSync(join(dataDir, 'platform-token')).mode & 0o777).toBe(0o600);
      expect((await caller(first, token)('GET', '/me')).body).toEqual({ kind: 'platform', builder: null });
      await first.stop();
      const second = await startServer({ dataDir });
      expect(platformToken(second)).toBe(token);
      expect((await caller(second, token)('GET', '/me')).status).toBe(200);
      await second.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('PLATFORM_TOKEN replaces it; a short one stops the start', async () => {
    const chosen = 'operator-chosen-platform-token-0123456789';
    const server = await startServer({ config: { platformToken: chosen } });
    try {
      expect((await caller(server, chosen)('GET', '/me')).body).toEqual({ kind: 'platform', builder: null });
      expect(() => statSync(join(server.dataDir, 'platform-token'))).toThrow();
    } finally {
      await server.stop();
    }
    expect(() => loadConfig({ PLATFORM_TOKEN: 'too-short' })).toThrow(ConfigError);
    expect(() => loadConfig({ PLATFORM_TOKEN: 'x'.repeat(31) })).toThrow(/PLATFORM_TOKEN must be at least 32/);
    expect(loadConfig({ PLATFORM_TOKEN: 'x'.repeat(32) }).platformToken).toBe('x'.repeat(32));
    expect(loadConfig({}).platformToken).toBeNull();
  });
});

describe('who sees what', () => {
  let server: TestServer;
  let platform: Caller;
  let owner: Builder;
  let stranger: Builder;
  let appId: string;
  let placementlessId: string;

  beforeAll(async () => {
    server = await startServer({ config: { allowLoopbackTools: true } });
    platform = caller(server, platformToken(server));
    owner = await createBuilder(server, platform, 'Owner');
    stranger = await createBuilder(server, platform, 'Stranger');
    appId = (await register(owner)).appId;
    placementlessId = 'plc_doesnotexist000000000';
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Every operation under /apps/{app_id}, with a body that passes its rules. */
  const appOperations = (id: string): Array<[string, string, unknown]> => [
    ['GET', `/apps/${id}`, undefined],
    ['PATCH', `/apps/${id}`, { description: 'x' }],
    ['GET', `/apps/${id}/builders`, undefined],
    ['POST', `/apps/${id}/builders`, { email: 'someone@northwind.example' }],
    ['DELETE', `/apps/${id}/builders/bld_doesnotexist000000000`, undefined],
    ['POST', `/apps/${id}/activate`, undefined],
    ['POST', `/apps/${id}/suspend`, undefined],
    ['POST', `/apps/${id}/rotate-key`, undefined],
    ['GET', `/apps/${id}/grades`, undefined],
    ['GET', `/apps/${id}/sandbox`, undefined],
    ['PUT', `/apps/${id}/sandbox/school`, { grants_line_item_scope: true }],
    ['POST', `/apps/${id}/sandbox/picker`, undefined],
    ['GET', `/apps/${id}/sandbox/placements`, undefined],
    ['POST', `/apps/${id}/sandbox/placements`, { extid: 'quiz-1' }],
    ['POST', `/apps/${id}/sandbox/placements/${placementlessId}/launches`, { as: 'student_1' }],
    ['POST', `/apps/${id}/sandbox/copies`, undefined],
    ['POST', `/apps/${id}/sandbox/reset`, undefined],
    ['GET', `/apps/${id}/sandbox/grades`, undefined],
  ];

  it('a builder on another team gets 404 on every tool operation, word for word as for no tool', async () => {
    for (const [method, path, body] of appOperations(appId)) {
      const answer = await stranger.call(method, path, body);
      expectProblem(answer, 404, 'app_not_found', `app ${appId} not found`);
    }
    for (const [method, path, body] of appOperations('app_doesnotexist0000000000')) {
      expectProblem(await stranger.call(method, path, body), 404, 'app_not_found', 'app app_doesnotexist0000000000 not found');
      expectProblem(await platform(method, path, body), 404, 'app_not_found', 'app app_doesnotexist0000000000 not found');
    }
  });

  it('the builder on the team reaches every operation but activate and suspend (403); the platform team every one', async () => {
    const outcome = (answer: Answer): string => `${answer.status} ${String(answer.body['code'] ?? '')}`;
    const ownerSaw: string[] = [];
    for (const [method, path, body] of appOperations(appId)) ownerSaw.push(`${method} ${path.replace(appId, '{app}')}: ${outcome(await owner.call(method, path, body))}`);
    expect(ownerSaw).toEqual([
      'GET /apps/{app}: 200 ',
      'PATCH /apps/{app}: 200 ',
      'GET /apps/{app}/builders: 200 ',
      'POST /apps/{app}/builders: 404 builder_not_found',
      'DELETE /apps/{app}/builders/bld_doesnotexist000000000: 404 team_member_not_found',
      'POST /apps/{app}/activate: 403 platform_only',
      'POST /apps/{app}/suspend: 403 platform_only',
      'POST /apps/{app}/rotate-key: 200 ',
      'GET /apps/{app}/grades: 200 ',
      'GET /apps/{app}/sandbox: 200 ',
      'PUT /apps/{app}/sandbox/school: 200 ',
      'POST /apps/{app}/sandbox/picker: 409 no_locations_url',
      'GET /apps/{app}/sandbox/placements: 200 ',
      'POST /apps/{app}/sandbox/placements: 409 picker_not_opened',
      `POST /apps/{app}/sandbox/placements/${placementlessId}/launches: 404 placement_not_found`,
      'POST /apps/{app}/sandbox/copies: 201 ',
      'POST /apps/{app}/sandbox/reset: 204 ',
      'GET /apps/{app}/sandbox/grades: 200 ',
    ]);
    const platformSaw: string[] = [];
    for (const [method, path, body] of appOperations(appId)) {
      if (path.endsWith('/suspend')) continue; // would close the Sandbox for the rest of the list
      platformSaw.push(`${method} ${path.replace(appId, '{app}')}: ${outcome(await platform(method, path, body))}`);
    }
    expect(platformSaw.filter((line) => / (401|403) /.test(line))).toEqual([]);
    expect(platformSaw).toContain('POST /apps/{app}/activate: 200 ');
  });

  it('builders and the platform team each have operations of their own', async () => {
    expectProblem(await platform('POST', '/apps', { name: 'X', hosting: 'hosted' }), 403, 'builder_only');
    expectProblem(await owner.call('GET', '/builders'), 403, 'platform_only');
    expectProblem(await owner.call('POST', '/builders', { name: 'X', email: 'x@northwind.example' }), 403, 'platform_only');
    expect((await owner.call<{ kind: string }>('GET', '/me')).body.kind).toBe('builder');
    const strangerApps = await stranger.call<{ apps: Array<{ id: string }> }>('GET', '/apps');
    expect(strangerApps.body.apps.map((a) => a.id)).not.toContain(appId);
    const platformApps = await platform<{ apps: Array<{ id: string }> }>('GET', '/apps?limit=100');
    expect(platformApps.body.apps.map((a) => a.id)).toContain(appId);
  });

  it('a tool\'s API key and a launch\'s api.token are not dashboard credentials (401)', async () => {
    const registered = await register(owner);
    await platform('POST', `/apps/${registered.appId}/activate`);
    const placed = await placeLocation(server, { app: registered.appId });
    const launched = await launch(server, { placed });
    for (const credential of [registered.apiKey as string, launched.apiToken]) {
      const answer = await caller(server, credential)('GET', `/apps/${registered.appId}`);
      expectProblem(answer, 401, 'invalid_bearer_token', 'Invalid bearer token');
      expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="dashboard"');
    }
    expectProblem(await caller(server, null)('GET', `/apps/${registered.appId}`), 401, 'missing_bearer_token', 'Missing bearer token');
  });

  it('every operation answers 401 without a credential and with an unknown one, before anything else', async () => {
    const all: Array<[string, string, unknown]> = [
      ['GET', '/me', undefined],
      ['GET', '/builders', undefined],
      ['POST', '/builders', { name: 'X', email: 'x@northwind.example' }],
      ['GET', '/apps', undefined],
      ['POST', '/apps', { name: 'X', hosting: 'hosted' }],
      ...appOperations(appId),
      // A tool that does not exist still answers 401 first: the caller learns nothing about the URL.
      ...appOperations('app_doesnotexist0000000000'),
    ];
    for (const [method, path, body] of all) {
      expectProblem(await caller(server, null)(method, path, body), 401, 'missing_bearer_token', 'Missing bearer token');
      expectProblem(await caller(server, 'tisb_' + 'A'.repeat(43))(method, path, body), 401, 'invalid_bearer_token', 'Invalid bearer token');
      // A malformed body is not looked at before the credential.
      if (method !== 'GET') {
        const raw = await caller(server, null)(method, path, undefined, { raw: '{', contentType: 'text/plain' });
        expect(raw.status).toBe(401);
      }
    }
  });

  it('settings and team bodies: 400 for malformed JSON, 415 for another media type', async () => {
    for (const [method, path] of [['PATCH', `/apps/${appId}`], ['POST', `/apps/${appId}/builders`]] as const) {
      expectProblem(await owner.call(method, path, undefined, { raw: '{"name"' }), 400, 'malformed_json');
      expectProblem(await owner.call(method, path, undefined, { raw: 'name=x', contentType: 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type');
    }
    expectProblem(await owner.call('PATCH', `/apps/${appId}`, [1, 2]), 422, 'invalid_body', 'the request body must be a JSON object');
  });

  it('a builder record of the platform role is a platform credential', async () => {
    const { token } = await server.services.store.builders.create({ name: 'Ops on call', email: `ops.${Date.now()}@northwind.example`, role: 'platform' });
    const ops = caller(server, token);
    expect((await ops('GET', '/me')).body).toEqual({ kind: 'platform', builder: null });
    expect((await ops('GET', `/apps/${appId}`)).status).toBe(200);
    expectProblem(await ops('POST', '/apps', { name: 'X', hosting: 'hosted' }), 403, 'builder_only');
  });

  it('two removals at once never leave a tool without a builder', async () => {
    const { appId: teamApp } = await register(owner);
    await owner.call('POST', `/apps/${teamApp}/builders`, { email: stranger.email });
    const [a, b] = await Promise.all([
      owner.call('DELETE', `/apps/${teamApp}/builders/${owner.id}`),
      platform('DELETE', `/apps/${teamApp}/builders/${stranger.id}`),
    ]);
    expect([a.status, b.status].sort()).toEqual([204, 409]);
    expect((await platform<{ builders: unknown[] }>('GET', `/apps/${teamApp}/builders`)).body.builders).toHaveLength(1);
  });

  it('a method the path does not take answers 405 with Allow; an unknown path 404', async () => {
    const answer = await owner.call('DELETE', `/apps/${appId}`);
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('GET, PATCH');
    expect((await owner.call('GET', '/nothing-here')).status).toBe(404);
  });
});
