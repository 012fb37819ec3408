/**
 * The archived management API over real HTTP, for both archived contracts: `/v1/apps/me`, the stored
 * locations and (2026-08-25) key rotation, every success checked against that version's bundled spec and
 * every refusal with its exact message (contract, Errors › Management API; decisions S-14, GAP-40 to
 * GAP-42). The server validates its own responses too (response validation is on in the harness).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { placeLocation, startServer } from '../harness.js';
import type { Archived } from './helpers.js';
import { ARCHIVED, call, expectProblem, expectValid, pinnedTool } from './helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  await server?.stop();
});

/** An IP literal is never resolved and never called here: the write-time rules only classify it. */
const PUBLIC_URL = 'https://93.184.216.34/tool/launch';

describe.each(ARCHIVED)('management API under %s', (version: Archived) => {
  const url = (path: string) => `${server.url}/v1/apps/me${path}`;

  it('GET /apps/me answers the app object of this version, its Home location included', async () => {
    const tool = await pinnedTool(server, version);
    const res = await call('GET', url(''), { auth: tool.auth });
    expect(res.status).toBe(200);
    expect(res.headers.get('contract-version')).toBe(version);
    expectValid(version, 'App', res.body);
    expect(res.body['id']).toBe(tool.appId);
    expect(res.body['grades_released']).toBe(true);
    expect(res.body['api_key_hint']).toBe(`ltiaas_...${tool.apiKey.slice(-4)}`);
    expect('provision_url' in res.body).toBe(version === '2026-08-25');
    const locations = res.body['locations'] as Array<Record<string, unknown>>;
    expect(locations).toHaveLength(1);
    if (version === '2026-08-25') expect(locations[0]).toMatchObject({ extid: 'home', type: 'content', label: 'Home' });
    else expect(locations[0]).toMatchObject({ is_default: true, order: 0, type: 'content', label: 'Home', params: {} });
  });

  it('401 for a missing, invalid or suspended key', async () => {
    expectProblem(await call('GET', url(''), { version }), 401, 'Missing Bearer API key', version);
    expectProblem(await call('GET', url(''), { auth: 'Bearer ltiaas_nothing', version }), 401, 'Invalid API key', version);
    const suspended = await pinnedTool(server, version, { status: 'suspended' });
    expectProblem(await call('GET', url(''), { auth: suspended.auth }), 401, `tool ${suspended.appId} is suspended`, version);
  });

  it('PATCH /apps/me updates only the fields sent, in one write', async () => {
    const tool = await pinnedTool(server, version);
    const res = await call('PATCH', url(''), {
      auth: tool.auth,
      body: { name: 'Quiz Engine', description: 'Quizzes', callback_url: PUBLIC_URL, grades_released: false },
    });
    expect(res.status).toBe(200);
    expectValid(version, 'App', res.body);
    expect(res.body).toMatchObject({ name: 'Quiz Engine', description: 'Quizzes', callback_url: PUBLIC_URL, grades_released: false });
    const stored = await server.services.store.apps.get(tool.appId);
    expect(stored).toMatchObject({ name: 'Quiz Engine', callbackUrl: PUBLIC_URL, gradesReleased: false });
  });

  it('refuses a blank name, bad URLs, read-only and unknown fields with 422, changing nothing', async () => {
    const tool = await pinnedTool(server, version);
    const patch = (body: unknown) => call('PATCH', url(''), { auth: tool.auth, body });
    expectProblem(await patch({ name: '   ' }), 422, 'name cannot be blank');
    expectProblem(await patch({ name: '' }), 422, 'name cannot be blank');
    expectProblem(await patch({ callback_url: 'http://tool.example/launch' }), 422, 'callback_url must be an absolute https:// URL');
    expectProblem(
      await patch({ callback_url: 'https://127.0.0.1/launch' }),
      422,
      'callback_url must resolve to a publicly routable host; private, loopback and link-local addresses are refused',
    );
    expectProblem(
      await patch({ callback_url: 'https://10.1.2.3/launch', name: 'Kept out' }),
      422,
      'callback_url must resolve to a publicly routable host; private, loopback and link-local addresses are refused',
    );
    expectProblem(await patch({ status: 'active' }), 422, 'status is read-only');
    expectProblem(await patch({ api_key_hint: 'x' }), 422, 'api_key_hint is read-only');
    expectProblem(await patch({ theme: 'dark' }), 422, 'unknown field: theme');
    expectProblem(await patch({ grades_released: 'yes' }), 422, 'grades_released must be true or false');
    expectProblem(await patch(['name']), 422, 'the request body must be a JSON object');
    const app = await server.services.store.apps.get(tool.appId);
    expect(app?.name).not.toBe('Kept out');
    expect(app?.callbackUrl).toBeNull();
  });

  if (version === '2026-08-25') {
    it('provision_url and locations_url follow the URL rules; an empty string clears them', async () => {
      const tool = await pinnedTool(server, version);
      const patch = (body: unknown) => call('PATCH', url(''), { auth: tool.auth, body });
      const set = await patch({ provision_url: 'https://93.184.216.34/provision', locations_url: 'https://93.184.216.34/locations' });
      expect(set.status).toBe(200);
      expect(set.body).toMatchObject({ provision_url: 'https://93.184.216.34/provision', locations_url: 'https://93.184.216.34/locations' });
      expectProblem(await patch({ provision_url: 'ftp://x.example/p' }), 422, 'provision_url must be an absolute https:// URL');
      expectProblem(
        await patch({ locations_url: 'https://192.168.0.9/l' }),
        422,
        'locations_url must resolve to a publicly routable host; private, loopback and link-local addresses are refused',
      );
      const cleared = await patch({ provision_url: '', locations_url: '' });
      expect(cleared.body).toMatchObject({ provision_url: '', locations_url: '' });
      const app = await server.services.store.apps.get(tool.appId);
      expect(app).toMatchObject({ provisionUrl: null, locationsUrl: null });
    });
  } else {
    it('provision_url, locations_url are unknown fields (GAP-42)', async () => {
      const tool = await pinnedTool(server, version);
      expectProblem(await call('PATCH', url(''), { auth: tool.auth, body: { provision_url: '' } }), 422, 'unknown field: provision_url');
      expectProblem(await call('PATCH', url(''), { auth: tool.auth, body: { locations_url: PUBLIC_URL } }), 422, 'unknown field: locations_url');
    });
  }

  it('creates, lists, updates and deletes stored locations with this version fields', async () => {
    const tool = await pinnedTool(server, version);
    const created =
      version === '2026-08-25'
        ? await call('POST', url('/locations'), { auth: tool.auth, body: { extid: 'quiz-week-3', type: 'assessment', label: 'Week 3 quiz' } })
        : await call('POST', url('/locations'), { auth: tool.auth, body: { type: 'assessment', label: 'Week 3 quiz', params: { attempts: '3' } } });
    expect(created.status).toBe(201);
    expectValid(version, 'LegacyLocation', created.body);
    const minimal = await call('POST', url('/locations'), { auth: tool.auth, body: version === '2026-08-25' ? { extid: 'intro' } : {} });
    expect(minimal.status).toBe(201);
    expect(minimal.body).toMatchObject({ type: 'content', label: '' });
    if (version === '2026-08-19') {
      // `order` defaults to the end of the list; `params` to an empty object.
      expect(created.body['order']).toBe(1);
      expect(minimal.body).toMatchObject({ order: 2, params: {}, is_default: false });
    }

    const list = await call('GET', url('/locations'), { auth: tool.auth });
    expect(list.status).toBe(200);
    expectValid(version, 'LocationList', list.body);
    const ids = (list.body['locations'] as Array<{ id: string }>).map((l) => l.id);
    expect(ids.slice(1)).toEqual([created.body['id'], minimal.body['id']]);

    const id = created.body['id'] as string;
    const updated =
      version === '2026-08-25'
        ? await call('PATCH', url(`/locations/${id}`), { auth: tool.auth, body: { label: 'Week 3 quiz (revised)', extid: 'quiz-w3' } })
        : await call('PATCH', url(`/locations/${id}`), { auth: tool.auth, body: { label: 'Week 3 quiz (revised)', params: { time: '20' }, order: -1 } });
    expect(updated.status).toBe(200);
    expectValid(version, 'LegacyLocation', updated.body);
    expect(updated.body['label']).toBe('Week 3 quiz (revised)');
    if (version === '2026-08-25') expect(updated.body['extid']).toBe('quiz-w3');
    else {
      // `params` is replaced whole; a lower order moves it first.
      expect(updated.body['params']).toEqual({ time: '20' });
      const again = await call('GET', url('/locations'), { auth: tool.auth });
      expect((again.body['locations'] as Array<{ id: string }>)[0]?.id).toBe(id);
    }

    const deleted = await call('DELETE', url(`/locations/${id}`), { auth: tool.auth });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ deleted: id });
    expectProblem(await call('DELETE', url(`/locations/${id}`), { auth: tool.auth }), 404, 'Location not found');
    expectProblem(await call('PATCH', url(`/locations/${id}`), { auth: tool.auth, body: { label: 'x' } }), 404, 'Location not found');
  });

  it('the home location cannot be deleted (422); another tool’s location is not found (404)', async () => {
    const tool = await pinnedTool(server, version);
    const other = await pinnedTool(server, version);
    const home = ((await call('GET', url('/locations'), { auth: tool.auth })).body['locations'] as Array<{ id: string }>)[0]!;
    expectProblem(await call('DELETE', url(`/locations/${home.id}`), { auth: tool.auth }), 422, 'the home location cannot be deleted');
    expectProblem(await call('DELETE', url(`/locations/${home.id}`), { auth: other.auth }), 404, 'Location not found');
    expectProblem(await call('PATCH', url(`/locations/${home.id}`), { auth: other.auth, body: { label: 'x' } }), 404, 'Location not found');
    expectProblem(await call('PATCH', url('/locations/no%20such'), { auth: tool.auth, body: { label: 'x' } }), 404, 'Location not found');
  });

  it('refuses an unknown type (never coerced) and this version’s invalid fields with 422', async () => {
    const tool = await pinnedTool(server, version);
    const post = (body: unknown) => call('POST', url('/locations'), { auth: tool.auth, body });
    const base = version === '2026-08-25' ? { extid: 'x1' } : {};
    expectProblem(await post({ ...base, type: 'quiz' }), 422, 'type must be one of [assessment, practice, content, setup]');
    expectProblem(await post({ ...base, id: 'loc_x' }), 422, 'id is read-only');
    expectProblem(await post({ ...base, colour: 'red' }), 422, 'unknown field: colour');
    if (version === '2026-08-25') {
      expectProblem(await post({ label: 'No extid' }), 422, 'extid is required');
      expectProblem(await post({ extid: 'has space' }), 422, "extid must be 1 to 128 characters of letters, digits, '-' or '_'");
      expectProblem(await post({ extid: 'x'.repeat(129) }), 422, "extid must be 1 to 128 characters of letters, digits, '-' or '_'");
      expectProblem(await post({ extid: 'home' }), 422, 'extid home is already used');
      expectProblem(await post({ extid: 'x2', params: {} }), 422, 'unknown field: params');
      expectProblem(await post({ extid: 'x3', is_default: true }), 422, 'unknown field: is_default');
    } else {
      expectProblem(await post({ params: { attempts: 3 } }), 422, 'params must be an object whose values are strings');
      expectProblem(await post({ params: 'a=1' }), 422, 'params must be an object whose values are strings');
      expectProblem(await post({ order: 1.5 }), 422, 'order must be an integer');
      expectProblem(await post({ order: '2' }), 422, 'order must be an integer');
      // Kept in an INTEGER column on both stores (S-38).
      expectProblem(await post({ order: 2 ** 31 }), 422, 'order must be an integer from -2147483648 to 2147483647');
      expectProblem(await post({ is_default: true }), 422, 'is_default is read-only');
      expectProblem(await post({ extid: 'quiz' }), 422, 'unknown field: extid');
    }
    const list = await call('GET', url('/locations'), { auth: tool.auth });
    expect(list.body['locations']).toHaveLength(1);
    if (version === '2026-08-19') {
      // The end of the order stays the end once the top value is taken.
      expect((await post({ order: 2 ** 31 - 1 })).body['order']).toBe(2 ** 31 - 1);
      const last = await post({ label: 'after the top' });
      expect([last.status, last.body['order']]).toEqual([201, 2 ** 31 - 1]);
      const ordered = await call('GET', url('/locations'), { auth: tool.auth });
      expect((ordered.body['locations'] as Array<{ id: string }>).at(-1)?.id).toBe(last.body['id']);
    }
  });

  if (version === '2026-08-25') {
    it('an extid is unique and permanent once placed (GAP-40, GAP-41)', async () => {
      const tool = await pinnedTool(server, version);
      const a = await call('POST', url('/locations'), { auth: tool.auth, body: { extid: 'unit-1', type: 'assessment' } });
      await call('POST', url('/locations'), { auth: tool.auth, body: { extid: 'unit-2' } });
      const id = a.body['id'] as string;
      expectProblem(await call('PATCH', url(`/locations/${id}`), { auth: tool.auth, body: { extid: 'unit-2' } }), 422, 'extid unit-2 is already used');
      await server.services.launches.place({
        appId: tool.appId,
        contextId: (await placeLocation(server, { app: tool.appId, type: 'content' })).context.id,
        locationId: id,
      });
      expectProblem(await call('PATCH', url(`/locations/${id}`), { auth: tool.auth, body: { extid: 'unit-9' } }), 422, 'extid is permanent once placed');
      const relabel = await call('PATCH', url(`/locations/${id}`), { auth: tool.auth, body: { extid: 'unit-1', label: 'Unit 1' } });
      expect(relabel.status).toBe(200);
    });

    it('rotate-key issues a new key and the old one, the calling one included, is refused at once', async () => {
      const tool = await pinnedTool(server, version);
      const rotated = await call('POST', url('/rotate-key'), { auth: tool.auth });
      expect(rotated.status).toBe(200);
      expectValid(version, 'RotatedKey', rotated.body);
      const newKey = rotated.body['api_key'] as string;
      expect(newKey).not.toBe(tool.apiKey);
      expect(rotated.body['api_key_hint']).toBe(`ltiaas_...${newKey.slice(-4)}`);
      expectProblem(await call('GET', url(''), { auth: tool.auth }), 401, 'Invalid API key');
      expectProblem(await call('POST', url('/rotate-key'), { auth: tool.auth }), 401, 'Invalid API key');
      const withNew = await call('GET', url(''), { auth: `Bearer ${newKey}` });
      expect(withNew.status).toBe(200);
      expect(withNew.body['api_key_hint']).toBe(rotated.body['api_key_hint']);
    });
  } else {
    it('has no rotate-key (404, GAP-42); 2026-08-19 locations change in place', async () => {
      const tool = await pinnedTool(server, version);
      const res = await call('POST', url('/rotate-key'), { auth: tool.auth });
      expect(res.status).toBe(404);
      expect(res.headers.get('contract-version')).toBe(version);
      expect((await call('GET', url(''), { auth: tool.auth })).status).toBe(200);
    });
  }
});
