/**
 * The dashboard's builders, registration, settings, status, key and grade history operations over real
 * HTTP, with response validation on (the harness): every success and every error the spec lists, with the
 * exact messages of decisions NS-10, GAP-29 to GAP-31, S-07, S-08 and S-13.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { launch, placeLocation, startServer } from '../harness.js';
import type { Builder, Caller } from './helpers.js';
import { caller, createBuilder, expectProblem, platformToken, register } from './helpers.js';

let server: TestServer;
let platform: Caller;
let ana: Builder;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true } });
  platform = caller(server, platformToken(server));
  ana = await createBuilder(server, platform, 'Ana Ruiz');
});
afterAll(async () => {
  await server?.stop();
});

describe('builders', () => {
  it('the platform team creates a builder; its token is shown once and works', async () => {
    const email = `Lee.Park.${Date.now()}@Northwind.example`;
    const created = await platform<{ builder: Record<string, unknown>; token: string }>('POST', '/builders', { name: 'Lee Park', email });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    expect(created.body.token).toMatch(/^tisb_[A-Za-z0-9_-]{43}$/);
    expect(created.body.builder).toMatchObject({ name: 'Lee Park', email: email.toLowerCase() });
    const me = await caller(server, created.body.token)('GET', '/me');
    expect(me.body).toEqual({ kind: 'builder', builder: created.body.builder });
    const again = await platform('POST', '/builders', { name: 'Lee again', email: email.toUpperCase() });
    expectProblem(again, 409, 'builder_email_taken', `a builder with the email ${email.toLowerCase()} already exists`);
  });

  it('422 for each body rule, 400 for malformed JSON, 415 for another media type', async () => {
    expectProblem(await platform('POST', '/builders', { email: 'a@b.example' }), 422, 'field_required', 'name is required');
    expectProblem(await platform('POST', '/builders', { name: '  ', email: 'a@b.example' }), 422, 'field_blank', 'name cannot be blank');
    expectProblem(await platform('POST', '/builders', { name: 'X' }), 422, 'field_required', 'email is required');
    expectProblem(await platform('POST', '/builders', { name: 'X', email: 'not-an-address' }), 422, 'invalid_email', 'email must be an email address');
    expectProblem(await platform('POST', '/builders', { name: 'X', email: 'a@b.example', role: 'platform' }), 422, 'unknown_field', 'unknown field: role');
    expectProblem(await platform('POST', '/builders', undefined, { raw: '{"name":' }), 400, 'malformed_json');
    expectProblem(await platform('POST', '/builders', undefined, { raw: 'name=x', contentType: 'text/plain' }), 415, 'unsupported_media_type');
  });

  it('a builder may not list or create builders (403); nobody without a credential (401)', async () => {
    expectProblem(await ana.call('GET', '/builders'), 403, 'platform_only', "this operation takes the platform team's credential");
    expectProblem(await ana.call('POST', '/builders', { name: 'X', email: 'x@y.example' }), 403, 'platform_only');
    const anonymous = await caller(server, null)('GET', '/builders');
    expectProblem(anonymous, 401, 'missing_bearer_token', 'Missing bearer token');
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="dashboard"');
    expectProblem(await caller(server, 'tisb_' + 'x'.repeat(43))('GET', '/me'), 401, 'invalid_bearer_token', 'Invalid bearer token');
    expectProblem(await caller(server, 'not-the-platform-token-but-long-enough-to-be')('GET', '/me'), 401, 'invalid_bearer_token');
  });

  it('lists oldest first, by cursor; bad limit and cursor answer 400', async () => {
    for (let i = 0; i < 3; i += 1) await createBuilder(server, platform, `Paged ${i}`);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { builders: Array<{ id: string }>; next_cursor: string | null } } = await platform(
        'GET',
        `/builders?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.builders.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.builders.map((b) => b.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    const all = await platform<{ builders: Array<{ id: string }>; next_cursor: null }>('GET', '/builders?limit=100');
    expect(seen).toEqual(all.body.builders.map((b) => b.id));
    expect(all.body.next_cursor).toBeNull();
    expect(seen.length).toBeGreaterThanOrEqual(4);
    for (const limit of ['0', '101', 'x', '2.5']) {
      expectProblem(await platform('GET', `/builders?limit=${limit}`), 400, 'invalid_limit', 'limit must be an integer from 1 to 100');
    }
    expectProblem(await platform('GET', '/builders?cursor=garbage'), 400, 'invalid_cursor', 'cursor is not valid for this list');
    const appsPage = await platform<{ next_cursor: string | null }>('GET', '/apps?limit=1');
    if (appsPage.body.next_cursor) {
      // A cursor of another list is not a cursor of this one.
      expectProblem(await platform('GET', `/builders?cursor=${appsPage.body.next_cursor}`), 400, 'invalid_cursor');
    }
  });
});

describe('registration (NS-10, GAP-31)', () => {
  it('a self-hosted tool: 201, draft, its key shown once, Location, the builder on its team', async () => {
    const answer = await ana.call<{ app: Record<string, unknown>; api_key: string }>('POST', '/apps', {
      name: 'Week quizzes',
      description: 'Quizzes every week',
      logo_url: 'https://quiz.northwind.example/logo.png',
      hosting: 'self_hosted',
      contract_version: '2026-08-25',
    });
    expect(answer.status).toBe(201);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const app = answer.body.app;
    expect(answer.headers.get('location')).toBe(`/dashboard/v1/apps/${String(app['id'])}`);
    expect(app).toMatchObject({ status: 'draft', hosting: 'self_hosted', contract_version: '2026-08-25', callback_url: null, grades_released: true });
    expect(answer.body.api_key).toMatch(new RegExp(`^ltiaas_${String(app['id'])}_[A-Za-z0-9_-]{43}$`));
    expect(app['api_key_hint']).toBe(`ltiaas_...${answer.body.api_key.slice(-4)}`);
    const read = await ana.call('GET', `/apps/${String(app['id'])}`);
    expect(read.body).toEqual(app);
    expect(JSON.stringify(read.body)).not.toContain(answer.body.api_key);
    const team = await ana.call<{ builders: Array<{ id: string }> }>('GET', `/apps/${String(app['id'])}/builders`);
    expect(team.body.builders.map((b) => b.id)).toEqual([ana.id]);
    // The Sandbox comes with the tool.
    const sandbox = await ana.call<{ users: Record<string, unknown> }>('GET', `/apps/${String(app['id'])}/sandbox`);
    expect(sandbox.status).toBe(200);
    expect(Object.keys(sandbox.body.users)).toEqual(['instructor', 'assistant', 'manager', 'student_1', 'student_2']);
  });

  it('a hosted tool has no key; the default contract is the current one', async () => {
    const answer = await ana.call<{ app: Record<string, unknown>; api_key: null }>('POST', '/apps', { name: 'Hosted', hosting: 'hosted' });
    expect(answer.status).toBe(201);
    expect(answer.body.api_key).toBeNull();
    expect(answer.body.app).toMatchObject({ api_key_hint: null, contract_version: '2026-09-21', hosting: 'hosted' });
  });

  it('the platform token answers 403; each refused body 422, and nothing is registered', async () => {
    expectProblem(
      await platform('POST', '/apps', { name: 'X', hosting: 'hosted' }),
      403,
      'builder_only',
      'registering a tool takes a builder credential; the platform team adds builders to a tool afterwards',
    );
    const before = (await ana.call<{ apps: unknown[] }>('GET', '/apps?limit=100')).body.apps.length;
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ name: 'X', hosting: 'self_hosted', callback_url: 'https://a.example/launch' }, 'endpoint_url_at_registration', "callback_url is not accepted at registration; set it in the tool's settings"],
      [{ name: 'X', hosting: 'self_hosted', provision_url: 'https://a.example/p' }, 'endpoint_url_at_registration', "provision_url is not accepted at registration; set it in the tool's settings"],
      [{ name: 'X', hosting: 'self_hosted', locations_url: 'https://a.example/l' }, 'endpoint_url_at_registration', "locations_url is not accepted at registration; set it in the tool's settings"],
      [{ name: 'X', hosting: 'self_hosted', api_key: 'mine' }, 'unknown_field', 'unknown field: api_key'],
      [{ name: 'X', hosting: 'self_hosted', grades_released: false }, 'unknown_field', 'unknown field: grades_released'],
      [{ hosting: 'self_hosted' }, 'field_required', 'name is required'],
      [{ name: ' \t', hosting: 'self_hosted' }, 'field_blank', 'name cannot be blank'],
      [{ name: 'X' }, 'field_required', 'hosting is required'],
      [{ name: 'X', hosting: 'cloud' }, 'invalid_enum', 'hosting must be one of [hosted, self_hosted]'],
      [{ name: 'X', hosting: 'hosted', contract_version: '2025-01-01' }, 'invalid_enum', 'contract_version must be one of [2026-09-21, 2026-08-25, 2026-08-19]'],
      [{ name: 'X', hosting: 'hosted', logo_url: 'http://a.example/logo.png' }, 'url_not_https', 'logo_url must be an absolute https:// URL'],
    ];
    for (const [body, code, detail] of cases) expectProblem(await ana.call('POST', '/apps', body), 422, code, detail);
    expectProblem(await ana.call('POST', '/apps', undefined, { raw: '[' }), 400, 'malformed_json');
    expectProblem(await ana.call('POST', '/apps', undefined, { raw: 'x', contentType: 'text/plain' }), 415, 'unsupported_media_type');
    expect((await ana.call<{ apps: unknown[] }>('GET', '/apps?limit=100')).body.apps).toHaveLength(before);
  });
});

describe('settings (GAP-30, S-08)', () => {
  it('a partial update, URL rules on write, all or nothing', async () => {
    const { appId } = await register(ana);
    const set = await ana.call<Record<string, unknown>>('PATCH', `/apps/${appId}`, {
      name: 'Renamed',
      callback_url: 'http://127.0.0.1:9/launch',
      locations_url: 'http://127.0.0.1:9/locations',
      provision_url: 'http://127.0.0.1:9/provision',
      contract_version: '2026-08-19',
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ name: 'Renamed', callback_url: 'http://127.0.0.1:9/launch', contract_version: '2026-08-19' });
    const cleared = await ana.call<Record<string, unknown>>('PATCH', `/apps/${appId}`, { provision_url: '', locations_url: null });
    expect(cleared.body).toMatchObject({ provision_url: null, locations_url: null, callback_url: 'http://127.0.0.1:9/launch', name: 'Renamed' });

    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ status: 'active' }, 'status_read_only', 'status is changed only by the platform team'],
      [{ hosting: 'hosted' }, 'hosting_permanent', 'hosting mode is permanent'],
      [{ grades_released: false }, 'unknown_field', 'unknown field: grades_released'],
      [{ callback_url: 'https://user:pw@quiz.example/launch' }, 'url_has_credentials', 'callback_url must not contain credentials'],
      [{ callback_url: 'ftp://quiz.example/launch' }, 'url_not_https', 'callback_url must be an absolute https:// URL'],
      [{ callback_url: null }, 'url_not_https', 'callback_url must be an absolute https:// URL'],
      [{ locations_url: 'https://10.0.4.17/locations' }, 'url_not_public', 'locations_url must resolve only to publicly routable addresses (10.0.4.17 is private)'],
      [{ logo_url: 'http://quiz.example/logo.png' }, 'url_not_https', 'logo_url must be an absolute https:// URL'],
      [{ name: '' }, 'field_blank', 'name cannot be blank'],
      [{ contract_version: '2027-01-01' }, 'invalid_enum', 'contract_version must be one of [2026-09-21, 2026-08-25, 2026-08-19]'],
      // The valid name is not written when another field fails.
      [{ name: 'Half written', provision_url: 'https://169.254.169.254/p' }, 'url_not_public', /^provision_url must resolve only to publicly routable addresses \(169\.254\.169\.254 is /],
    ] as Array<[Record<string, unknown>, string, string]>;
    for (const [body, code, detail] of cases) expectProblem(await ana.call('PATCH', `/apps/${appId}`, body), 422, code, detail);
    expect((await ana.call<{ name: string }>('GET', `/apps/${appId}`)).body.name).toBe('Renamed');
  });

  it('a hosted tool has no endpoint URLs', async () => {
    const { appId } = await register(ana, { name: 'Hosted', hosting: 'hosted' });
    expectProblem(await ana.call('PATCH', `/apps/${appId}`, { callback_url: 'https://a.example/l' }), 422, 'hosted_no_urls', 'hosted tools have no endpoint URLs');
    expect((await ana.call('PATCH', `/apps/${appId}`, { description: 'Runs here' })).status).toBe(200);
  });
});

describe('status: activate and suspend (GAP-01, NS-08, S-08)', () => {
  it('platform only; every move answers 200, a repeat too; the API key follows the status', async () => {
    const { appId, apiKey } = await register(ana);
    expectProblem(await ana.call('POST', `/apps/${appId}/activate`), 403, 'platform_only');
    expectProblem(await ana.call('POST', `/apps/${appId}/suspend`), 403, 'platform_only');
    const scoreUrl = `${server.url}/v1/contexts/ctx_none/apps/${appId}/locations/loc_none/members/mem_none/scores`;
    const score = (): Promise<Response> =>
      fetch(scoreUrl, { method: 'POST', headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, body: '{"score":1}' });
    for (const [action, status] of [['suspend', 'suspended'], ['suspend', 'suspended'], ['activate', 'active'], ['activate', 'active'], ['suspend', 'suspended']] as const) {
      const answer = await platform<{ status: string }>('POST', `/apps/${appId}/${action}`);
      expect(answer.status).toBe(200);
      expect(answer.body.status).toBe(status);
    }
    const refused = await score();
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { detail: string }).detail).toBe(`tool ${appId} is suspended`);
    await platform('POST', `/apps/${appId}/activate`);
    expect((await score()).status).not.toBe(401);
    expectProblem(await platform('POST', '/apps/app_doesnotexist0000000000/activate'), 404, 'app_not_found', 'app app_doesnotexist0000000000 not found');
  });
});

describe('rotate-key', () => {
  it('a new key at once, the old one refused; hosted tools have none (409)', async () => {
    const { appId, apiKey } = await register(ana);
    const rotated = await ana.call<{ api_key: string; api_key_hint: string }>('POST', `/apps/${appId}/rotate-key`);
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
    expect(rotated.body.api_key).not.toBe(apiKey);
    expect(rotated.body.api_key_hint).toBe(`ltiaas_...${rotated.body.api_key.slice(-4)}`);
    expect((await ana.call<{ api_key_hint: string }>('GET', `/apps/${appId}`)).body.api_key_hint).toBe(rotated.body.api_key_hint);
    const scoreUrl = `${server.url}/v1/contexts/ctx_none/apps/${appId}/locations/loc_none/members/mem_none/scores`;
    const old = await fetch(scoreUrl, { method: 'POST', headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, body: '{"score":1}' });
    expect(old.status).toBe(401);
    expect(((await old.json()) as { detail: string }).detail).toBe('Invalid API key');
    const viaPlatform = await platform('POST', `/apps/${appId}/rotate-key`);
    expect(viaPlatform.status).toBe(200);
    const hosted = await register(ana, { name: 'Hosted', hosting: 'hosted' });
    expectProblem(await ana.call('POST', `/apps/${hosted.appId}/rotate-key`), 409, 'hosted_no_api_key', 'hosted tools have no API key');
  });
});

describe('teams', () => {
  it('add by email (201, then 200), remove (204), never the last (409); the removed builder sees 404', async () => {
    const lee = await createBuilder(server, platform, 'Lee Park');
    const { appId } = await register(ana);
    expectProblem(await lee.call('GET', `/apps/${appId}`), 404, 'app_not_found', `app ${appId} not found`);
    const added = await ana.call<{ id: string }>('POST', `/apps/${appId}/builders`, { email: lee.email.toUpperCase() });
    expect(added.status).toBe(201);
    expect(added.body.id).toBe(lee.id);
    expect((await platform('POST', `/apps/${appId}/builders`, { email: lee.email })).status).toBe(200);
    expect((await lee.call('GET', `/apps/${appId}`)).status).toBe(200);
    const team = await lee.call<{ builders: Array<{ id: string }> }>('GET', `/apps/${appId}/builders`);
    expect(team.body.builders.map((b) => b.id)).toEqual([ana.id, lee.id]);
    expectProblem(await ana.call('POST', `/apps/${appId}/builders`, { email: 'nobody@northwind.example' }), 404, 'builder_not_found', 'no builder has the email nobody@northwind.example');
    expectProblem(await ana.call('POST', `/apps/${appId}/builders`, {}), 422, 'field_required', 'email is required');
    expectProblem(await ana.call('POST', `/apps/${appId}/builders`, { email: 'nope' }), 422, 'invalid_email', 'email must be an email address');
    expect((await lee.call('DELETE', `/apps/${appId}/builders/${ana.id}`)).status).toBe(204);
    expectProblem(await ana.call('GET', `/apps/${appId}`), 404, 'app_not_found');
    expectProblem(await lee.call('DELETE', `/apps/${appId}/builders/${ana.id}`), 404, 'team_member_not_found', `builder ${ana.id} is not on the team of app ${appId}`);
    expectProblem(await lee.call('DELETE', `/apps/${appId}/builders/${lee.id}`), 409, 'last_builder', `app ${appId} must keep at least one builder`);
    expectProblem(await platform('DELETE', `/apps/${appId}/builders/${lee.id}`), 409, 'last_builder');
  });
});

describe('listing tools', () => {
  it('a builder sees its teams\' tools, newest first; the platform team every tool; status filter', async () => {
    const zoe = await createBuilder(server, platform, 'Zoe');
    const first = await register(zoe, { name: 'First', hosting: 'self_hosted' });
    const second = await register(zoe, { name: 'Second', hosting: 'hosted' });
    const own = await zoe.call<{ apps: Array<{ id: string }>; next_cursor: string | null }>('GET', '/apps?limit=1');
    expect(own.body.apps.map((a) => a.id)).toEqual([second.appId]);
    const next = await zoe.call<{ apps: Array<{ id: string }>; next_cursor: string | null }>('GET', `/apps?limit=1&cursor=${own.body.next_cursor}`);
    expect(next.body.apps.map((a) => a.id)).toEqual([first.appId]);
    expect(next.body.next_cursor).toBeNull();
    const all = await platform<{ apps: Array<{ id: string }> }>('GET', '/apps?limit=100');
    expect(all.body.apps.map((a) => a.id)).toEqual(expect.arrayContaining([first.appId, second.appId]));
    expect((await ana.call<{ apps: Array<{ id: string }> }>('GET', '/apps?limit=100')).body.apps.map((a) => a.id)).not.toContain(first.appId);
    await platform('POST', `/apps/${first.appId}/activate`);
    const active = await zoe.call<{ apps: Array<{ id: string }> }>('GET', '/apps?status=active');
    expect(active.body.apps.map((a) => a.id)).toEqual([first.appId]);
    // A cursor belongs to its filters.
    expectProblem(await zoe.call('GET', `/apps?status=draft&cursor=${own.body.next_cursor}`), 400, 'invalid_cursor');
    expectProblem(await zoe.call('GET', '/apps?limit=0'), 400, 'invalid_limit');
  });
});

describe('grade history', () => {
  it('every attempt, newest first, filtered and paged; empty for a new tool', async () => {
    const { appId } = await register(ana);
    const empty = await ana.call('GET', `/apps/${appId}/grades`);
    expect(empty.body).toEqual({ attempts: [], points: {}, next_cursor: null });
    await platform('POST', `/apps/${appId}/activate`);
    const placed = await placeLocation(server, { app: appId, type: 'assessment', points: 10 });
    const student = await launch(server, { placed, groups: ['student'] });
    const other = await launch(server, { placed, groups: ['student'] });
    for (const [who, score] of [[student, 0.5], [student, 0.75], [other, 1]] as const) {
      const submitted = await fetch(who.claims.grade?.submit as string, {
        method: 'POST',
        headers: { Authorization: who.auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ score }),
      });
      expect(submitted.status).toBe(200);
    }
    const history = await ana.call<{ attempts: Array<Record<string, unknown>>; points: Record<string, number>; next_cursor: string | null }>('GET', `/apps/${appId}/grades`);
    expect(history.body.attempts.map((a) => a['score'])).toEqual([1, 0.75, 0.5]);
    // No max_score was sent: the points are the location's the scores were published against (OPS-50).
    expect(history.body.attempts.map((a) => [a['max_score'], history.body.points[a['id'] as string]])).toEqual([[null, 10], [null, 10], [null, 10]]);
    expect(history.body.attempts[0]).toMatchObject({ app: appId, context: placed.context.id, location: placed.location.id, status: 'success' });
    const mine = await platform<{ attempts: Array<Record<string, unknown>> }>('GET', `/apps/${appId}/grades?member_id=${student.member.id}`);
    expect(mine.body.attempts.map((a) => a['score'])).toEqual([0.75, 0.5]);
    const page1 = await ana.call<{ attempts: Array<{ id: string }>; next_cursor: string }>('GET', `/apps/${appId}/grades?limit=2`);
    const page2 = await ana.call<{ attempts: Array<{ id: string }>; next_cursor: null }>('GET', `/apps/${appId}/grades?limit=2&cursor=${page1.body.next_cursor}`);
    expect([...page1.body.attempts, ...page2.body.attempts].map((a) => a.id)).toEqual(history.body.attempts.map((a) => a['id']));
    expect(page2.body.next_cursor).toBeNull();
    expectProblem(await ana.call('GET', `/apps/${appId}/grades?context_id=${placed.context.id}&cursor=${page1.body.next_cursor}`), 400, 'invalid_cursor');
    expectProblem(await ana.call('GET', `/apps/${appId}/grades?limit=500`), 400, 'invalid_limit');
    expect((await ana.call<{ attempts: unknown[] }>('GET', `/apps/${appId}/grades?context_id=ctx_other`)).body.attempts).toEqual([]);
  });
});
