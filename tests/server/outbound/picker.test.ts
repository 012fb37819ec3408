/**
 * The locations request: every row of the contract's failure table, each against a real HTTP endpoint on
 * 127.0.0.1 misbehaving that way (ALLOW_LOOPBACK_TOOLS on, the 30 s wait made short); the token the tool
 * receives; the order of keys as sent; and what opening the picker records: extids bound for good,
 * dropped ones hidden, reused ones retargeted while placements keep their copies (rules 2, 4, 5, 6).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { issueLaunchTicket } from '../../../server/launch-page/index.js';
import { ToolHttpClient } from '../../../server/outbound/index.js';
import type { LocationsRequestError, Picker } from '../../../server/placements/index.js';
import { lastPickerAnswer, openPicker, PlacementError, placeFromPicker } from '../../../server/placements/index.js';
import type { ContextRecord } from '../../../server/store/index.js';
import { claimErrors } from '../core/claims-schema.js';
import type { TestServer, Tool } from '../harness.js';
import { createTool, startServer } from '../harness.js';
import type { ToolServer } from './fixtures.js';
import { answer, closedPort, memberOf, placeFromSandboxPicker, realCourse, sandboxCourse, setUrls, startToolServer, verifyToken } from './fixtures.js';

const TIMEOUT_MS = 400;

let server: TestServer;
let toolServer: ToolServer;
let tool: Tool;
let course: ContextRecord;
let instructorId: string;

function nested(depth: number): unknown {
  let group: Record<string, unknown> = { label: `Level ${depth}`, locations: { deep: { type: 'content', label: 'Deep' } } };
  for (let level = depth - 1; level >= 1; level -= 1) group = { label: `Level ${level}`, grouped_locations: [group] };
  return { grouped_locations: [group] };
}

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, locationsTimeoutMs: TIMEOUT_MS, provisionTimeoutMs: TIMEOUT_MS } });
  toolServer = await startToolServer();
  const t = toolServer;
  t.route('/hang', answer.hang());
  t.route('/error', answer.json({ error: 'database down' }, 500));
  t.route('/unavailable', answer.text('busy', 503));
  t.route('/redirect', answer.redirect('/locations'));
  t.route('/not-json', answer.text('<html>Locations</html>', 200, 'text/html'));
  t.route('/empty', answer.status(200));
  t.route('/no-content', answer.status(204));
  t.route('/wrong-shape', answer.json({ locations: [{ type: 'content', label: 'A list, not a map' }] }));
  t.route('/bad-type', answer.json({ locations: { 'quiz-week-1': { type: 'exam', label: 'Week 1 quiz' } } }));
  t.route('/bad-extid', answer.json({ locations: { 'week 3 quiz': { type: 'assessment', label: 'Week 3 quiz' } } }));
  t.route('/nothing-named', answer.json({ items: [] }));
  t.route('/six-deep', answer.json(nested(6)));
  t.route('/five-deep', answer.json(nested(5)));
  t.route('/empty-label', answer.json({ grouped_locations: [{ label: '  <b> </b> ', locations: {} }] }));
  t.route('/missing-label', answer.json({ grouped_locations: [{ locations: {} }] }));
  t.route('/json-as-text', answer.text('{"message":"Sent as text/plain"}', 200, 'text/plain'));
  t.route('/big', (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(`{"message":"${'x'.repeat(1_100_000)}"}`);
  });
  t.route('/locations', answer.json({ message: 'Pick one', locations: { intro: { type: 'content', label: 'Introduction' } } }));
  tool = await createTool(server);
  course = await sandboxCourse(server, tool.app.id);
  instructorId = (await memberOf(server, course, ['instructor'])).member.id;
});
afterAll(async () => {
  await toolServer?.close();
  await server?.stop();
});

async function failure(locationsUrl: string | null): Promise<LocationsRequestError> {
  await setUrls(server, tool.app.id, { locationsUrl });
  try {
    await openPicker(server.services, { appId: tool.app.id, contextId: course.id, memberId: instructorId });
  } catch (err) {
    return err as LocationsRequestError;
  }
  throw new Error('the picker opened');
}

describe('every row of the locations failure table', () => {
  it('no response within the wait: app connection timeout', async () => {
    const started = Date.now();
    const err = await failure(toolServer.url('/hang'));
    expect(err).toMatchObject({ status: 502, code: 'locations_timeout', detail: 'app connection timeout' });
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 1500);
  });

  it('connection refused: app connection failure', async () => {
    const port = await closedPort();
    const err = await failure(`http://127.0.0.1:${port}/locations`);
    expect(err).toMatchObject({ status: 502, code: 'locations_connection_failure', detail: 'app connection failure' });
  });

  it('bad TLS: app connection failure', async () => {
    const err = await failure(`https://127.0.0.1:${toolServer.port}/locations`);
    expect(err).toMatchObject({ status: 502, code: 'locations_connection_failure', detail: 'app connection failure' });
  });

  it('DNS failure: app connection failure naming the rule (GAP-26, S-19)', async () => {
    const saved = server.services.outbound;
    server.services.outbound = new ToolHttpClient({
      resolve: async () => Promise.reject(Object.assign(new Error('no such host'), { code: 'ENOTFOUND' })),
      allowLoopback: false,
    });
    try {
      const err = await failure('https://quiz.northwind.example/locations');
      expect(err).toMatchObject({
        code: 'locations_connection_failure',
        detail: 'app connection failure: locations_url must resolve to a publicly routable host (quiz.northwind.example did not resolve: ENOTFOUND)',
      });
    } finally {
      server.services.outbound = saved;
    }
  });

  it('a URL failing the rules at call time: app connection failure with the rule (GAP-26)', async () => {
    const err = await failure('https://10.0.4.17/locations');
    expect(err).toMatchObject({
      status: 502,
      code: 'locations_connection_failure',
      detail: 'app connection failure: locations_url must resolve only to publicly routable addresses (10.0.4.17 is private)',
    });
    expect(err.failure.reason).toBe('rule public_address');
  });

  it('a name resolving to a private address, with the switch off: app connection failure with the rule', async () => {
    const saved = server.services.outbound;
    const asked: string[] = [];
    server.services.outbound = new ToolHttpClient({
      resolve: async (host) => (asked.push(host), ['192.168.1.20']),
      allowLoopback: false,
      connect: () => {
        throw new Error('no connection may be attempted');
      },
    });
    try {
      const err = await failure('https://quiz.northwind.example/locations');
      expect(err.detail).toBe(
        'app connection failure: locations_url must resolve only to publicly routable addresses (192.168.1.20 is private)',
      );
      expect(asked).toEqual(['quiz.northwind.example']);
    } finally {
      server.services.outbound = saved;
    }
  });

  it.each([
    ['/error', 500],
    ['/unavailable', 503],
  ])('a non-2xx status (%s): app failed to provide the available locations (HTTP n)', async (path, status) => {
    const err = await failure(toolServer.url(path));
    expect(err).toMatchObject({
      status: 502,
      code: 'locations_http_error',
      detail: `app failed to provide the available locations (HTTP ${status})`,
    });
  });

  it('a 3xx, not followed: the app redirected the locations request', async () => {
    const before = toolServer.to('/locations').length;
    const err = await failure(toolServer.url('/redirect'));
    expect(err).toMatchObject({
      status: 502,
      code: 'locations_redirect',
      detail: 'the app redirected the locations request; locations_url must name the endpoint itself',
    });
    expect(toolServer.to('/locations')).toHaveLength(before);
  });

  it.each([['/not-json'], ['/empty'], ['/no-content']])('a body that is not JSON (%s): the app returned invalid JSON', async (path) => {
    const err = await failure(toolServer.url(path));
    expect(err).toMatchObject({ status: 502, code: 'locations_invalid_json', detail: 'the app returned invalid JSON' });
  });

  it.each([
    ['/wrong-shape', '/locations must be an object mapping extids to location entries, not an array'],
    ['/bad-type', '/locations/quiz-week-1/type must be one of assessment, practice, content, setup'],
    ['/bad-extid', '/locations/week 3 quiz extid must be 1 to 128 letters, digits, underscores or dashes'],
    ['/nothing-named', 'the response names none of locations, grouped_locations, message'],
    ['/big', 'the response body is larger than 1048576 bytes'],
  ])('JSON that does not match the shape (%s): invalid locations structure with the detail', async (path, detail) => {
    const err = await failure(toolServer.url(path));
    expect(err).toMatchObject({
      status: 502,
      code: 'locations_invalid_structure',
      detail: `the app returned an invalid locations structure: ${detail}`,
    });
  });

  it('groups nested 6 deep: the app nested location groups more than 5 levels deep', async () => {
    const err = await failure(toolServer.url('/six-deep'));
    expect(err).toMatchObject({ status: 502, code: 'locations_too_deep', detail: 'the app nested location groups more than 5 levels deep' });
  });

  it.each([['/empty-label'], ['/missing-label']])('a group label empty or markup only (%s): empty label', async (path) => {
    const err = await failure(toolServer.url(path));
    expect(err).toMatchObject({
      status: 502,
      code: 'locations_empty_group_label',
      detail: 'the app returned a location group with an empty label',
    });
  });

  it('no locations URL: App does not have a locations_url configured (409), and nothing is sent', async () => {
    const before = toolServer.requests.length;
    const err = await failure(null);
    expect(err).toMatchObject({ status: 409, code: 'no_locations_url', detail: 'App does not have a locations_url configured' });
    expect(toolServer.requests).toHaveLength(before);
  });

  it('five levels are allowed; any 2xx body is read as JSON whatever its Content-Type (GAP-27)', async () => {
    await setUrls(server, tool.app.id, { locationsUrl: toolServer.url('/five-deep') });
    const deep = await openPicker(server.services, { appId: tool.app.id, contextId: course.id });
    let level = deep.groups[0];
    for (let i = 1; i < 5; i += 1) level = level?.groups[0];
    expect(level?.locations.map((l) => l.extid)).toEqual(['deep']);
    await setUrls(server, tool.app.id, { locationsUrl: toolServer.url('/json-as-text') });
    const text = await openPicker(server.services, { appId: tool.app.id, contextId: course.id });
    expect(text.message).toBe('Sent as text/plain');
  });
});

describe('the locations request the tool receives', () => {
  it('a form POST of a LocationsClaims token that verifies against the JWKS', async () => {
    await setUrls(server, tool.app.id, { locationsUrl: toolServer.url('/locations') });
    const before = toolServer.to('/locations').length;
    const picker = await openPicker(server.services, { appId: tool.app.id, contextId: course.id, memberId: instructorId });
    expect(picker.message).toBe('Pick one');
    const sent = toolServer.to('/locations').slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect([...sent[0]!.form.keys()]).toEqual(['launch_data']);
    const claims = await verifyToken(server, sent[0]!.form.get('launch_data')!, tool.app.id);
    expect(claimErrors('LocationsClaims', claims)).toEqual([]);
    expect(claims).toMatchObject({ app: tool.app.id, context: course.id, api: { token: null } });
    expect((claims['user'] as { member: string }).member).toBe(instructorId);
    expect((claims['user'] as { email: string | null }).email).not.toBeNull();
  });
});

describe('who is asked (GAP-25)', () => {
  let other: ToolServer;
  beforeAll(async () => {
    other = await startToolServer();
    other.route('/locations', answer.json({ locations: {} }));
  });
  afterAll(async () => other?.close());

  it('a draft tool is asked in its Sandbox, never in a real course', async () => {
    const draft = await createTool(server, { status: 'draft' });
    await setUrls(server, draft.app.id, { locationsUrl: other.url('/locations') });
    const sandbox = await sandboxCourse(server, draft.app.id);
    await expect(openPicker(server.services, { appId: draft.app.id, contextId: sandbox.id })).resolves.toMatchObject({ locations: [] });
    const asked = other.requests.length;
    const real = await realCourse(server);
    const err = await openPicker(server.services, { appId: draft.app.id, contextId: real.id }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlacementError);
    expect(err).toMatchObject({ status: 409, code: 'app_not_active' });
    expect(other.requests).toHaveLength(asked);
  });

  it('a suspended tool is asked nowhere, not even in its Sandbox', async () => {
    const suspended = await createTool(server, { status: 'suspended' });
    await setUrls(server, suspended.app.id, { locationsUrl: other.url('/locations') });
    const sandbox = await sandboxCourse(server, suspended.app.id);
    const asked = other.requests.length;
    await expect(openPicker(server.services, { appId: suspended.app.id, contextId: sandbox.id })).rejects.toMatchObject({
      status: 409,
      code: 'app_suspended',
    });
    expect(other.requests).toHaveLength(asked);
  });

  it('an active tool is asked in a real course; another tool\'s Sandbox is no course of it', async () => {
    const active = await createTool(server);
    await setUrls(server, active.app.id, { locationsUrl: other.url('/locations') });
    const real = await realCourse(server);
    await expect(openPicker(server.services, { appId: active.app.id, contextId: real.id })).resolves.toMatchObject({ context_id: real.id });
    await expect(openPicker(server.services, { appId: active.app.id, contextId: course.id })).rejects.toMatchObject({ status: 404 });
  });
});

describe('what opening the picker records', () => {
  let own: Tool;
  let ownCourse: ContextRecord;
  let body = '';

  beforeAll(async () => {
    own = await createTool(server);
    ownCourse = await sandboxCourse(server, own.app.id);
    toolServer.route(`/served/${own.app.id}`, (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
    });
    await setUrls(server, own.app.id, { locationsUrl: toolServer.url(`/served/${own.app.id}`) });
  });

  const open = (): Promise<Picker> => openPicker(server.services, { appId: own.app.id, contextId: ownCourse.id });

  beforeEach(() => {
    body = '';
  });

  it('keeps the order of keys as sent, digit-only extids included, into the stored answer', async () => {
    body =
      '{"locations":{"zeta":{"type":"content","label":"Zeta"},"10":{"type":"content","label":"Ten"},' +
      '"2":{"type":"practice","label":"Two"},"alpha":{"type":"assessment","label":"Alpha","points":5}},' +
      '"grouped_locations":[{"label":"Unit","locations":{"b":{"type":"content","label":"B"},"3":{"type":"content","label":"Three"},' +
      '"1":{"type":"content","label":"One"}}}]}';
    const picker = await open();
    const order = ['zeta', '10', '2', 'alpha'];
    expect(picker.locations.map((l) => l.extid)).toEqual(order);
    expect(picker.groups[0]?.locations.map((l) => l.extid)).toEqual(['b', '3', '1']);
    const stored = await lastPickerAnswer(server.services, own.app.id, ownCourse.id);
    expect(stored?.locations.map((l) => l.extid)).toEqual(order);
    expect(stored?.groups[0]?.locations.map((l) => l.extid)).toEqual(['b', '3', '1']);
    expect(stored).toEqual(picker);
    expect(picker.locations[3]).toMatchObject({ type: 'assessment', points: 5, description: null });
    expect(picker.locations[0]?.points).toBeNull();
  });

  it('binds an extid to one location for good, counts a location shown twice once, hides dropped extids', async () => {
    body = JSON.stringify({
      locations: { keep: { type: 'content', label: 'Keep' }, drop: { type: 'content', label: 'Drop' } },
      grouped_locations: [
        { label: 'Unit 1', locations: { twice: { type: 'practice', label: 'Twice' } }, grouped_locations: [{ label: 'Extra', locations: { twice: { type: 'practice', label: 'Twice' } } }] },
      ],
    });
    const first = await open();
    const ids = new Map(first.locations.map((l) => [l.extid, l.id]));
    expect(first.groups[0]?.count).toBe(1);
    expect(first.groups[0]?.locations[0]?.id).toBe(first.groups[0]?.groups[0]?.locations[0]?.id);

    body = JSON.stringify({ locations: { keep: { type: 'content', label: 'Keep' } } });
    const second = await open();
    expect(second.locations[0]?.id).toBe(ids.get('keep'));
    const dropped = await server.services.store.locations.get(ids.get('drop')!);
    expect(dropped).toMatchObject({ extid: 'drop', hidden: true });
    const kept = await server.services.store.locations.get(ids.get('keep')!);
    expect(kept?.hidden).toBe(false);

    body = JSON.stringify({ locations: { drop: { type: 'content', label: 'Back again' } } });
    const third = await open();
    expect(third.locations[0]?.id).toBe(ids.get('drop'));
    expect(await server.services.store.locations.get(ids.get('drop')!)).toMatchObject({ hidden: false, label: 'Back again' });
  });

  it('a reused extid retargets its placements: the location changes, the placement keeps its copy', async () => {
    body = JSON.stringify({ locations: { 'week-1': { type: 'assessment', label: 'Week 1 quiz', points: 20 } } });
    await open();
    const placed = await placeFromSandboxPicker(server, { appId: own.app.id, contextId: ownCourse.id, extid: 'week-1' });
    expect(placed.placement.entry).toMatchObject({ extid: 'week-1', type: 'assessment', label: 'Week 1 quiz', points: 20 });

    body = JSON.stringify({ locations: { 'week-1': { type: 'content', label: 'Week 1 reading', points: 20 } } });
    const again = await open();
    expect(again.locations[0]).toMatchObject({ id: placed.location.id, type: 'content', label: 'Week 1 reading', points: null });
    const record = await server.services.store.locations.get(placed.location.id);
    expect(record).toMatchObject({ type: 'content', label: 'Week 1 reading', points: null });
    const stored = await server.services.store.placements.get(placed.placement.id);
    expect(stored?.locationId).toBe(placed.location.id);
    expect(stored?.entry).toMatchObject({ type: 'assessment', label: 'Week 1 quiz', points: 20 });
    expect(stored?.lineItemId).not.toBeNull();
  });

  it('a placement of an extid the tool no longer serves keeps launching, with its copy', async () => {
    toolServer.route('/launch', answer.text('ok', 200, 'text/html'));
    await setUrls(server, own.app.id, { callbackUrl: toolServer.url('/launch') });
    body = JSON.stringify({ locations: { 'old-quiz': { type: 'assessment', label: 'Old quiz' } } });
    await open();
    const placed = await placeFromPicker(server.services, { appId: own.app.id, contextId: ownCourse.id, extid: 'old-quiz' });
    body = JSON.stringify({ locations: {} });
    const now = await open();
    expect(now.locations).toEqual([]);
    expect(await server.services.store.locations.get(placed.location.id)).toMatchObject({ hidden: true });
    const { member } = await memberOf(server, ownCourse, ['student']);
    const ticket = await issueLaunchTicket(server.services, { placementId: placed.placement.id, memberId: member.id });
    const page = await fetch(ticket.launchUrl);
    expect(page.status).toBe(200);
    const launchData = /name="launch_data" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    const claims = await verifyToken(server, launchData, own.app.id);
    expect(claims['location']).toEqual({ id: placed.location.id, extid: 'old-quiz', type: 'assessment', label: 'Old quiz' });
  });

  it('a failed request leaves nothing to place from: the last answer is forgotten', async () => {
    body = JSON.stringify({ locations: { kept: { type: 'content', label: 'Kept' } } });
    const good = await open();
    expect(await lastPickerAnswer(server.services, own.app.id, ownCourse.id)).toEqual(good);
    body = 'not json';
    await expect(open()).rejects.toMatchObject({ code: 'locations_invalid_json' });
    expect(await lastPickerAnswer(server.services, own.app.id, ownCourse.id)).toBeNull();
    await expect(placeFromPicker(server.services, { appId: own.app.id, contextId: ownCourse.id, extid: 'kept' })).rejects.toMatchObject({
      status: 409,
      code: 'picker_not_opened',
    });
  });
});
