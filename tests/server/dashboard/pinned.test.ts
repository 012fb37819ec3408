/**
 * The Sandbox of tools pinned to archived contracts, over real HTTP against a real tool on loopback
 * (decisions S-16, S-40, S-41, GAP-17, GAP-45, GAP-46): a 2026-08-19 tool is offered its stored locations
 * and provisioned with no request, and its launches carry that contract's claims with the stored
 * location's `params`; a 2026-08-25 tool gets that contract's locations and provision requests from its
 * own URLs (a hosted one its stored locations); and a pin changed in the dashboard shapes the very next
 * request. No path answers 500.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { claimErrors } from '../core/claims-schema.js';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import type { RecordedRequest, Route, ToolServer } from '../outbound/fixtures.js';
import { answer, startToolServer, verifyToken } from '../outbound/fixtures.js';
import { call, schemaErrors } from '../archived/helpers.js';
import { requestLocations } from '../../../server/placements/index.js';
import { PlacementError } from '../../../server/placements/index.js';
import type { Builder, Caller } from './helpers.js';
import { caller, createBuilder, expectProblem, platformToken, register } from './helpers.js';
import { launchPageOf } from '../sandbox/launch-chain.js';

const LOCATIONS = {
  message: 'Pick <b>what</b> to add',
  locations: {
    'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 20 },
    'reading-1': { type: 'content', label: 'Week 1 reading' },
  },
  grouped_locations: [{ label: 'Extras', locations: { 'quiz-2': { type: 'assessment', label: 'Bonus quiz' } } }],
};

type Json = Record<string, unknown>;
type Version = '2026-09-21' | '2026-08-25' | '2026-08-19';

interface Picker {
  context_id: string;
  message: string | null;
  locations: Array<{ id: string; extid: string; type: string; label: string; description: string | null; points: number | null }>;
  groups: unknown[];
}

interface Placement {
  id: string;
  context_id: string;
  line_item_id: string | null;
  location: Json;
  provisioning: { context: string; location: string; error: string | null };
}

let server: TestServer;
let tool: ToolServer;
let platform: Caller;
let builder: Builder;
let locationsRoute: Route = answer.json(LOCATIONS);

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, locationsTimeoutMs: 2000, provisionTimeoutMs: 2000 } });
  tool = await startToolServer();
  platform = caller(server, platformToken(server));
  builder = await createBuilder(server, platform, 'Pinned Builder');
  tool.route('/locations', (req, res, recorded) => locationsRoute(req, res, recorded));
  tool.route('/launch', answer.text('<!DOCTYPE html><title>Quiz</title>', 200, 'text/html'));
  tool.route('/provision', answer.provisioning());
});
afterAll(async () => {
  await tool?.close();
  await server?.stop();
});
beforeEach(() => {
  locationsRoute = answer.json(LOCATIONS);
});

async function claimsOf(request: RecordedRequest, appId: string): Promise<Json> {
  return verifyToken(server, request.form.get('launch_data') ?? '', appId);
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 100; i += 1) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  throw new Error('condition not reached');
}

/** A self-hosted tool registered in the dashboard with this pin and every endpoint URL set. */
async function pinned(version: Version): Promise<{ appId: string; apiKey: string }> {
  const { appId, apiKey } = await register(builder, { name: `Pinned ${version}`, hosting: 'self_hosted', contract_version: version });
  const set = await builder.call('PATCH', `/apps/${appId}`, {
    callback_url: tool.url('/launch'),
    provision_url: tool.url('/provision'),
    locations_url: tool.url('/locations'),
  });
  expect(set.status).toBe(200);
  // S-41: kept whatever the pin, even while 2026-08-19 leaves them unused.
  expect(set.body).toMatchObject({ contract_version: version, provision_url: tool.url('/provision'), locations_url: tool.url('/locations') });
  return { appId, apiKey: apiKey as string };
}

async function openPicker(appId: string): Promise<Picker> {
  const opened = await builder.call<Picker>('POST', `/apps/${appId}/sandbox/picker`);
  expect(opened.status).toBe(200);
  return opened.body;
}

async function place(appId: string, extid: string): Promise<Placement> {
  const placed = await builder.call<Placement>('POST', `/apps/${appId}/sandbox/placements`, { extid });
  expect(placed.status).toBe(201);
  return placed.body;
}

async function provisioned(appId: string): Promise<Placement[]> {
  const read = async (): Promise<Placement[]> => (await builder.call<{ placements: Placement[] }>('GET', `/apps/${appId}/sandbox/placements`)).body.placements;
  return until(read, (list) => list.every((p) => p.provisioning.context === 'provisioned' && p.provisioning.location === 'provisioned'));
}

/** Opens the ticket's launch page as a browser would and posts its form to the tool; the launch's claims. */
async function launchAs(appId: string, placementId: string, as: string): Promise<Json> {
  const ticket = await builder.call<{ launch_url: string }>('POST', `/apps/${appId}/sandbox/placements/${placementId}/launches`, { as });
  expect(ticket.status).toBe(201);
  const launchPage = await launchPageOf(ticket.body.launch_url);
  const page = await until(
    async () => {
      const res = await fetch(launchPage);
      return { status: res.status, html: await res.text() };
    },
    (p) => p.status !== 202,
  );
  expect(page.status).toBe(200);
  const action = /<form id="launch" method="post" action="([^"]+)"/.exec(page.html)?.[1];
  const launchData = /name="launch_data" value="([^"]+)"/.exec(page.html)?.[1];
  if (!action || !launchData) throw new Error(`no launch form in:\n${page.html}`);
  const before = tool.to('/launch').length;
  const posted = await fetch(action.replace(/&amp;/g, '&'), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ launch_data: launchData }).toString(),
  });
  expect(posted.status).toBe(200);
  return claimsOf(tool.to('/launch')[before] as RecordedRequest, appId);
}

/** A stored location made through the archived management API, as the tool itself makes them. */
async function storedLocation(apiKey: string, body: Json): Promise<Json> {
  const made = await call('POST', `${server.url}/v1/apps/me/locations`, { auth: `Bearer ${apiKey}`, body });
  expect(made.status).toBe(201);
  return made.body;
}

describe('a tool pinned to 2026-08-19', () => {
  it('is offered its stored locations, provisioned with no request, and launched with their params', async () => {
    const { appId, apiKey } = await pinned('2026-08-19');
    const quiz = await storedLocation(apiKey, { type: 'assessment', label: 'Unit <b>3</b> quiz', params: { unit: '3', mode: 'exam' }, order: 7 });
    const reading = await storedLocation(apiKey, { type: 'content', label: 'Reading', params: { page: '12' }, order: 2 });
    const untitled = await storedLocation(apiKey, { type: 'practice', label: '  ', order: 2 });
    const locationsBefore = tool.to('/locations').length;
    const provisionBefore = tool.to('/provision').length;

    // The picker: the stored locations in `order` (ties in creation order, S-14), and no request sent.
    const picker = await openPicker(appId);
    expect(picker.message).toBeNull();
    expect(picker.groups).toEqual([]);
    expect(picker.locations).toEqual([
      expect.objectContaining({ extid: 'home', type: 'content', label: 'Home', points: null }),
      { id: reading['id'], extid: reading['id'], type: 'content', label: 'Reading', description: null, points: null },
      { id: untitled['id'], extid: untitled['id'], type: 'practice', label: untitled['id'], description: null, points: null },
      { id: quiz['id'], extid: quiz['id'], type: 'assessment', label: 'Unit 3 quiz', description: null, points: 100 },
    ]);
    expect(tool.to('/locations')).toHaveLength(locationsBefore);

    // The placement copies the entry; both levels are provisioned at once, with no request (S-40, S-41).
    const placement = await place(appId, quiz['id'] as string);
    expect(placement.location).toMatchObject({ id: quiz['id'], extid: quiz['id'], type: 'assessment', label: 'Unit 3 quiz', points: 100 });
    // Its column is the Sandbox LMS's, by its AGS URL (LTI-45).
    expect(placement.line_item_id).toMatch(new RegExp(`^${server.url}/lms/`));
    expect(placement.provisioning).toEqual({ context: 'provisioned', location: 'provisioned', error: null });
    const listed = (await builder.call<{ placements: Placement[] }>('GET', `/apps/${appId}/sandbox/placements`)).body.placements;
    expect(listed.map((p) => p.provisioning)).toEqual([{ context: 'provisioned', location: 'provisioned', error: null }]);

    // The launch: 2026-08-19's claims, the stored location's params, grade passback for the column.
    const student = await launchAs(appId, placement.id, 'student_1');
    expect(schemaErrors('2026-08-19', 'LaunchClaims', student)).toEqual([]);
    expect(student['location']).toEqual({ id: quiz['id'], type: 'assessment', label: 'Unit <b>3</b> quiz', params: { unit: '3', mode: 'exam' } });
    expect(student['grade_passback']).toBe(true);
    expect(student['user']).toMatchObject({ role: 'student', given_name: null });
    expect(student).not.toHaveProperty('provision');
    expect(student).not.toHaveProperty('context');
    expect(student['resource_link_id']).toBe((await server.services.store.placements.get(placement.id))?.resourceLink);

    // Its changes apply at once (S-16): the next launch carries the new params.
    const patched = await call('PATCH', `${server.url}/v1/apps/me/locations/${quiz['id'] as string}`, {
      auth: `Bearer ${apiKey}`,
      body: { params: { unit: '4' } },
    });
    expect(patched.status).toBe(200);
    const instructor = await launchAs(appId, placement.id, 'instructor');
    expect(schemaErrors('2026-08-19', 'LaunchClaims', instructor)).toEqual([]);
    expect(instructor['location']).toMatchObject({ params: { unit: '4' } });
    expect(instructor['user']).toMatchObject({ role: 'instructor', given_name: 'Irene' });

    // Nothing was ever sent but launches, whatever URLs are stored.
    expect(tool.to('/locations')).toHaveLength(locationsBefore);
    expect(tool.to('/provision')).toHaveLength(provisionBefore);
  });

  it('refuses an extid its picker did not show or a location deleted since; a locations request is a refusal, not a throw', async () => {
    const { appId, apiKey } = await pinned('2026-08-19');
    const gone = await storedLocation(apiKey, { type: 'content', label: 'Soon gone' });
    await openPicker(appId);
    const refused = await builder.call('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' });
    expectProblem(refused, 422, 'extid_not_offered');
    const deleted = await call('DELETE', `${server.url}/v1/apps/me/locations/${gone['id'] as string}`, { auth: `Bearer ${apiKey}` });
    expect(deleted.status).toBe(200);
    const stale = await builder.call<{ detail: string }>('POST', `/apps/${appId}/sandbox/placements`, { extid: gone['id'] });
    expectProblem(stale, 409, 'picker_not_opened');
    expect((await openPicker(appId)).locations.map((l) => l.extid)).toEqual(['home']);

    const sandbox = await builder.call<{ context: string }>('GET', `/apps/${appId}/sandbox`);
    const asked = requestLocations(server.services, { appId, contextId: sandbox.body.context });
    await expect(asked).rejects.toBeInstanceOf(PlacementError);
    await expect(asked).rejects.toMatchObject({ status: 409, code: 'contract_not_served', detail: 'contract 2026-08-19 has no locations requests' });
  });
});

describe('a tool pinned to 2026-08-19 deleting a placed location', () => {
  it('breaks its placements: the launch page says the activity is gone and the tool is not called (H-10)', async () => {
    const { appId, apiKey } = await pinned('2026-08-19');
    const quiz = await storedLocation(apiKey, { type: 'assessment', label: 'Soon deleted', params: { unit: '1' } });
    await openPicker(appId);
    const placement = await place(appId, quiz['id'] as string);
    expect((await launchAs(appId, placement.id, 'student_1'))['location']).toMatchObject({ id: quiz['id'] });

    const deleted = await call('DELETE', `${server.url}/v1/apps/me/locations/${quiz['id'] as string}`, { auth: `Bearer ${apiKey}` });
    expect(deleted.status).toBe(200);
    const launchesBefore = tool.to('/launch').length;
    const ticket = await builder.call<{ launch_url: string }>('POST', `/apps/${appId}/sandbox/placements/${placement.id}/launches`, { as: 'student_1' });
    expect(ticket.status).toBe(201);
    const page = await fetch(await launchPageOf(ticket.body.launch_url));
    expect(page.status).toBe(410);
    const html = await page.text();
    expect(html).toContain('This activity is no longer available');
    expect(html).not.toContain('launch_data');
    expect(tool.to('/launch')).toHaveLength(launchesBefore);

    // Any other way into a launch of that placement is refused the same way.
    const record = await server.services.store.placements.get(placement.id);
    await expect(
      server.services.launches.launch({
        organization: { issuer: 'https://lms.example.edu', client: 'c', deployment: 'd', title: 'School' },
        course: { contextId: placement.context_id },
        user: { externalId: 'someone', groups: ['student'] },
        placement: { appId, locationId: quiz['id'] as string, resourceLink: record?.resourceLink ?? '' },
      }),
    ).rejects.toMatchObject({ reason: 'location_deleted' });
  });
});

describe('a tool pinned to 2026-08-25', () => {
  it('gets that contract\'s locations and provision requests from its own URLs, and its launches', async () => {
    const { appId, apiKey } = await pinned('2026-08-25');
    // Stored locations do not drive a self-hosted tool's picker (S-16).
    await storedLocation(apiKey, { extid: 'stored-1', type: 'content', label: 'Stored only' });
    const locationsBefore = tool.to('/locations').length;
    const picker = await openPicker(appId);
    const request = tool.to('/locations')[locationsBefore] as RecordedRequest;
    const locationsClaims = await claimsOf(request, appId);
    expect(schemaErrors('2026-08-25', 'LocationsClaims', locationsClaims)).toEqual([]);
    // GAP-46: `message` and `grouped_locations` are not part of 2026-08-25's answer.
    expect(picker.message).toBeNull();
    expect(picker.groups).toEqual([]);
    expect(picker.locations.map((l) => l.extid)).toEqual(['quiz-1', 'reading-1']);

    const provisionBefore = tool.to('/provision').length;
    const placement = await place(appId, 'quiz-1');
    const sent = tool.to('/provision').slice(provisionBefore);
    expect(sent.length).toBeGreaterThanOrEqual(1);
    for (const one of sent) {
      const claims = await claimsOf(one, appId);
      expect(schemaErrors('2026-08-25', 'ProvisionClaims', claims)).toEqual([]);
      expect(claims).not.toHaveProperty('files');
    }
    await provisioned(appId);

    const student = await launchAs(appId, placement.id, 'student_1');
    expect(schemaErrors('2026-08-25', 'LaunchClaims', student)).toEqual([]);
    expect(student['location']).toMatchObject({ id: placement.location['id'], extid: 'quiz-1', label: 'Week 1 quiz' });
    expect(student['grade_passback']).toBe(true);
    expect(student).not.toHaveProperty('files');
    expect(student).not.toHaveProperty('grade');
  });

  it('a hosted tool is offered its stored locations (S-16) and provisioned on first need', async () => {
    const { appId } = await register(builder, { name: 'Hosted 0825', hosting: 'hosted', contract_version: '2026-08-25' });
    const stored = await server.services.store.locations.createStored(appId, { extid: 'essay', type: 'assessment', label: 'Essay', points: 40 });
    const locationsBefore = tool.to('/locations').length;
    const picker = await openPicker(appId);
    // 2026-08-25 lists the Home location first, then creation order (S-14).
    expect(picker.locations.map((l) => [l.extid, l.points])).toEqual([
      ['home', null],
      ['essay', 40],
    ]);
    expect(tool.to('/locations')).toHaveLength(locationsBefore);
    const placement = await place(appId, 'essay');
    expect(placement.location).toMatchObject({ id: stored.id, extid: 'essay', points: 40 });
    expect(placement.provisioning).toEqual({ context: 'provisioned', location: 'provisioned', error: null });
  });
});

describe('a tool pinned to 2026-08-25 that cleared its locations_url', () => {
  it('is offered only its stored locations (no 409 in the picker), and places one (H-09)', async () => {
    const { appId, apiKey } = await pinned('2026-08-25');
    await storedLocation(apiKey, { extid: 'stored-1', type: 'assessment', label: 'Stored quiz' });
    const cleared = await call('PATCH', `${server.url}/v1/apps/me`, { auth: `Bearer ${apiKey}`, body: { locations_url: '' } });
    expect(cleared.status).toBe(200);
    expect(cleared.body['locations_url']).toBeFalsy();
    const locationsBefore = tool.to('/locations').length;
    const picker = await openPicker(appId);
    expect(tool.to('/locations')).toHaveLength(locationsBefore);
    expect(picker.message).toBeNull();
    expect(picker.locations.map((l) => l.extid)).toEqual(['home', 'stored-1']);
    const placement = await place(appId, 'stored-1');
    expect(placement.location).toMatchObject({ extid: 'stored-1', type: 'assessment', label: 'Stored quiz' });
  });
});

describe('the pin changed in the dashboard', () => {
  it('shapes the next locations, provision and launch requests', async () => {
    const { appId } = await pinned('2026-09-21');
    const repin = async (version: Version): Promise<void> => {
      const set = await builder.call('PATCH', `/apps/${appId}`, { contract_version: version });
      expect(set.status).toBe(200);
      expect(set.body['contract_version']).toBe(version);
    };

    // 2026-09-21: the current locations request, and the message shown.
    let before = tool.to('/locations').length;
    let picker = await openPicker(appId);
    expect(claimErrors('LocationsClaims', await claimsOf(tool.to('/locations')[before] as RecordedRequest, appId))).toEqual([]);
    expect(picker.message).toBe('Pick what to add');
    expect(picker.groups).toHaveLength(1);

    // 2026-08-25: the next picker follows that contract (its answer has no message or groups) ...
    await repin('2026-08-25');
    before = tool.to('/locations').length;
    picker = await openPicker(appId);
    expect(tool.to('/locations')).toHaveLength(before + 1);
    expect(schemaErrors('2026-08-25', 'LocationsClaims', await claimsOf(tool.to('/locations')[before] as RecordedRequest, appId))).toEqual([]);
    expect(picker.message).toBeNull();
    expect(picker.groups).toEqual([]);
    // ... and so do the placement's provision requests.
    const provisionBefore = tool.to('/provision').length;
    const placement = await place(appId, 'quiz-1');
    const sent = tool.to('/provision').slice(provisionBefore);
    expect(sent.length).toBeGreaterThanOrEqual(1);
    for (const one of sent) expect(await claimsOf(one, appId)).not.toHaveProperty('files');
    await provisioned(appId);
    const launched0825 = await launchAs(appId, placement.id, 'student_1');
    expect(schemaErrors('2026-08-25', 'LaunchClaims', launched0825)).toEqual([]);

    // 2026-08-19: no locations request any more (the stored Home location is offered), and the placement
    // made earlier launches with that contract's claims; its served location has no params.
    await repin('2026-08-19');
    before = tool.to('/locations').length;
    picker = await openPicker(appId);
    expect(tool.to('/locations')).toHaveLength(before);
    expect(picker.locations.map((l) => l.extid)).toEqual(['home']);
    const launched0819 = await launchAs(appId, placement.id, 'student_1');
    expect(schemaErrors('2026-08-19', 'LaunchClaims', launched0819)).toEqual([]);
    expect(launched0819['location']).toEqual({ id: placement.location['id'], type: 'assessment', label: 'Week 1 quiz', params: {} });
    const home = await place(appId, 'home');
    expect(home.provisioning).toEqual({ context: 'provisioned', location: 'provisioned', error: null });

    // Back to 2026-09-21: the URLs kept all along are used again, in the current shape.
    await repin('2026-09-21');
    before = tool.to('/locations').length;
    picker = await openPicker(appId);
    expect(tool.to('/locations')).toHaveLength(before + 1);
    expect(claimErrors('LocationsClaims', await claimsOf(tool.to('/locations')[before] as RecordedRequest, appId))).toEqual([]);
    expect(picker.message).toBe('Pick what to add');
    const current = await launchAs(appId, placement.id, 'student_1');
    expect(claimErrors('LaunchClaims', current)).toEqual([]);
    expect(current).toHaveProperty('files');
  });
});
