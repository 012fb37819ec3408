/**
 * Provision requests (NS-06, GAP-16 to GAP-19) against a real tool on loopback: sent when a placement is
 * confirmed, course level then location level; the tool's 204 and later PUT open the level; a failure
 * leaves it unprovisioned and is asked again (at once after a failure, after 60 s for a request the tool
 * accepted but never completed, on an injected clock); a blank provision_url needs no request; a copied
 * course carries `parent_*`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PlacementOutcome } from '../../../server/placements/index.js';
import { ensureProvisioned, openPicker, placeFromPicker, placementJson, provisionLevel } from '../../../server/placements/index.js';
import type { AppRecord, ContextRecord } from '../../../server/store/index.js';
import { claimErrors } from '../core/claims-schema.js';
import type { TestServer, Tool } from '../harness.js';
import { createTool, startServer } from '../harness.js';
import type { RecordedRequest, Route, ToolServer } from './fixtures.js';
import { answer, placeFromSandboxPicker, sandboxCourse, setUrls, startToolServer, TestClock, verifyToken } from './fixtures.js';

const clock = new TestClock();
let server: TestServer;
let toolServer: ToolServer;
let provisionRoute: Route = answer.status(204);

const LOCATIONS = {
  locations: {
    'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 20 },
    'reading-1': { type: 'content', label: 'Week 1 reading' },
  },
};

beforeAll(async () => {
  server = await startServer({ clock, config: { allowLoopbackTools: true, provisionTimeoutMs: 400 } });
  toolServer = await startToolServer();
  toolServer.route('/locations', answer.json(LOCATIONS));
  toolServer.route('/provision', (req, res, recorded) => provisionRoute(req, res, recorded));
  toolServer.route('/elsewhere', answer.status(204));
});
afterAll(async () => {
  await toolServer?.close();
  await server?.stop();
});
beforeEach(() => {
  provisionRoute = answer.status(204);
});

async function newTool(provisionUrl: string | null = toolServer.url('/provision')): Promise<{ tool: Tool; course: ContextRecord }> {
  const tool = await createTool(server, { status: 'draft' });
  await setUrls(server, tool.app.id, { locationsUrl: toolServer.url('/locations'), provisionUrl });
  const app = await server.services.store.apps.get(tool.app.id);
  return { tool: { ...tool, app: app! }, course: await sandboxCourse(server, tool.app.id) };
}

async function place(tool: Tool, course: ContextRecord, extid = 'quiz-1'): Promise<PlacementOutcome> {
  await openPicker(server.services, { appId: tool.app.id, contextId: course.id });
  return placeFromSandboxPicker(server, { appId: tool.app.id, contextId: course.id, extid });
}

function provisionRequests(since: number): RecordedRequest[] {
  return toolServer.requests.slice(since).filter((r) => r.path === '/provision');
}

async function claimsOf(request: RecordedRequest | undefined, app: AppRecord): Promise<Record<string, unknown>> {
  if (!request) throw new Error('no provision request');
  return verifyToken(server, request.form.get('launch_data') ?? '', app.id);
}

describe('a placement provisions at once', () => {
  it('course level, then location level; 204; the tool PUTs and the levels open', async () => {
    const { tool, course } = await newTool();
    const since = toolServer.requests.length;
    const placed = await place(tool, course);
    expect(placed.provisioning).toMatchObject({
      context: { state: 'pending', sent: true, error: null },
      location: { state: 'pending', sent: true, error: null },
      error: null,
    });
    expect(placementJson(placed)).toMatchObject({
      context_id: course.id,
      location: { extid: 'quiz-1', type: 'assessment', label: 'Week 1 quiz', points: 20 },
      provisioning: { context: 'pending', location: 'pending', error: null },
    });
    // An assessment's line item is its column in the Sandbox's LMS (LTI-45).
    expect(placed.placement.lineItemId).toMatch(new RegExp(`^${server.services.sandboxLms.issuer()}/.+/lineitems/`));

    const sent = provisionRequests(since);
    expect(sent).toHaveLength(2);
    for (const request of sent) {
      expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect([...request.form.keys()]).toEqual(['launch_data']);
    }
    const courseLevel = await claimsOf(sent[0], tool.app);
    const locationLevel = await claimsOf(sent[1], tool.app);
    expect(claimErrors('ProvisionClaims', courseLevel)).toEqual([]);
    expect(claimErrors('ProvisionClaims', locationLevel)).toEqual([]);
    expect(courseLevel).toMatchObject({ context: course.id, location: null, provision: { location: null }, storage: { location: null } });
    expect(courseLevel['storage']).not.toHaveProperty('parent_context');
    expect(locationLevel).toMatchObject({
      context: course.id,
      location: { id: placed.location.id, extid: 'quiz-1', type: 'assessment', label: 'Week 1 quiz' },
    });

    // Until the tool PUTs, the context row says the level is not provisioned.
    const apiToken = (courseLevel['api'] as { token: string }).token;
    const storage = courseLevel['storage'] as { context: string };
    const before = await fetch(storage.context, { headers: { Authorization: `Bearer ${apiToken}` } });
    expect(before.status).toBe(422);

    const provision = courseLevel['provision'] as { context: string };
    const put = await fetch(provision.context, { method: 'PUT', headers: { Authorization: `Bearer ${apiToken}` } });
    expect(put.status).toBe(204);
    const locationToken = (locationLevel['api'] as { token: string }).token;
    const putLocation = await fetch((locationLevel['provision'] as { location: string }).location, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${locationToken}` },
    });
    expect(putLocation.status).toBe(204);
    const after = await fetch(storage.context, { headers: { Authorization: `Bearer ${apiToken}` } });
    expect(after.status).toBe(200);

    const levels = await ensureProvisioned(server.services, { app: tool.app, context: course, locationId: placed.location.id });
    expect(levels).toMatchObject({ context: { state: 'provisioned', sent: false }, location: { state: 'provisioned', sent: false } });
  });

  it('no new request for a level already provisioned (GAP-19); a new location asks only its own level', async () => {
    const { tool, course } = await newTool();
    const first = await place(tool, course);
    await server.services.store.provisioning.markProvisioned({ appId: tool.app.id, contextId: course.id });
    await server.services.store.provisioning.markProvisioned({ appId: tool.app.id, contextId: course.id, locationId: first.location.id });
    const since = toolServer.requests.length;
    const again = await place(tool, course);
    expect(again.placement.id).not.toBe(first.placement.id);
    expect(again.placement.lineItemId).not.toBe(first.placement.lineItemId);
    expect(again.provisioning).toMatchObject({ context: { state: 'provisioned', sent: false }, location: { state: 'provisioned', sent: false } });
    expect(provisionRequests(since)).toHaveLength(0);

    const reading = await place(tool, course, 'reading-1');
    expect(reading.placement.lineItemId).toBeNull();
    const sent = provisionRequests(since);
    expect(sent).toHaveLength(1);
    expect(await claimsOf(sent[0], tool.app)).toMatchObject({ location: { extid: 'reading-1', type: 'content' } });
  });

  it('a blank provision_url provisions on first need, with no request (GAP-17)', async () => {
    const { tool, course } = await newTool(null);
    const since = toolServer.requests.length;
    const placed = await place(tool, course);
    expect(placed.provisioning).toMatchObject({ context: { state: 'provisioned', sent: false }, location: { state: 'provisioned', sent: false } });
    expect(provisionRequests(since)).toHaveLength(0);
  });
});

describe('failures and retries (GAP-16)', () => {
  it('a failure is kept with its reason; the placement stands; the next need asks again at once', async () => {
    const { tool, course } = await newTool();
    provisionRoute = answer.text('down', 500);
    const since = toolServer.requests.length;
    const placed = await place(tool, course);
    expect(placed.placement.id).toMatch(/^plc_/);
    expect(placed.provisioning).toMatchObject({
      context: { state: 'failed', sent: true, error: 'app failed to accept the provision request (HTTP 500)' },
      location: { state: 'failed', sent: true },
      error: 'app failed to accept the provision request (HTTP 500)',
    });
    expect(placementJson(placed).provisioning).toEqual({
      context: 'failed',
      location: 'failed',
      error: 'app failed to accept the provision request (HTTP 500)',
    });
    expect(provisionRequests(since)).toHaveLength(2);

    provisionRoute = answer.status(204);
    const retried = await ensureProvisioned(server.services, { app: tool.app, context: course, locationId: placed.location.id });
    expect(retried).toMatchObject({ context: { state: 'pending', sent: true }, location: { state: 'pending', sent: true }, error: null });
    expect(provisionRequests(since)).toHaveLength(4);
  });

  it('an accepted request the tool never completes is asked again only after 60 s (injected clock)', async () => {
    const { tool, course } = await newTool();
    const level = { app: tool.app, context: course };
    const since = toolServer.requests.length;
    expect(await provisionLevel(server.services, level)).toMatchObject({ state: 'pending', sent: true });
    clock.advance(30_000);
    expect(await provisionLevel(server.services, level)).toMatchObject({ state: 'pending', sent: false });
    expect(provisionRequests(since)).toHaveLength(1);
    clock.advance(31_000);
    expect(await provisionLevel(server.services, level)).toMatchObject({ state: 'pending', sent: true });
    expect(provisionRequests(since)).toHaveLength(2);
  });

  it('failure, then a retry 60 s later succeeds', async () => {
    const { tool, course } = await newTool();
    provisionRoute = answer.hang();
    const since = toolServer.requests.length;
    expect(await provisionLevel(server.services, { app: tool.app, context: course })).toMatchObject({
      state: 'failed',
      error: 'app connection timeout',
    });
    clock.advance(61_000);
    provisionRoute = answer.status(204);
    expect(await provisionLevel(server.services, { app: tool.app, context: course })).toMatchObject({ state: 'pending', sent: true });
    expect(provisionRequests(since)).toHaveLength(2);
  });

  it.each([
    ['a redirect, not followed', answer.redirect('/elsewhere'), 'the app redirected the provision request; provision_url must name the endpoint itself'],
    ['no answer within 10 s (here 400 ms)', answer.hang(), 'app connection timeout'],
  ])('%s fails the level', async (_label, route, error) => {
    const { tool, course } = await newTool();
    provisionRoute = route;
    const followed = toolServer.to('/elsewhere').length;
    expect(await provisionLevel(server.services, { app: tool.app, context: course })).toMatchObject({ state: 'failed', sent: true, error });
    expect(toolServer.to('/elsewhere')).toHaveLength(followed);
  });

  it('a provision_url failing the URL rules at call time fails the level, naming the rule', async () => {
    const { tool, course } = await newTool('https://10.0.0.1/provision');
    expect(await provisionLevel(server.services, { app: tool.app, context: course })).toMatchObject({
      state: 'failed',
      sent: true,
      error: 'app connection failure: provision_url must resolve only to publicly routable addresses (10.0.0.1 is private)',
    });
  });

  it('a suspended tool gets no provision request at all (GAP-25)', async () => {
    const { tool, course } = await newTool();
    const suspended = (await server.services.store.apps.setStatus(tool.app.id, 'suspended'))!.app;
    const since = toolServer.requests.length;
    await expect(provisionLevel(server.services, { app: suspended, context: course })).rejects.toMatchObject({ code: 'app_suspended' });
    expect(provisionRequests(since)).toHaveLength(0);
  });
});

describe('a copied course', () => {
  it('carries parent_context, and parent_location at location level; nothing is copied', async () => {
    const { tool, course } = await newTool();
    const copy = await sandboxCourse(server, tool.app.id, { parent: course, name: 'Sandbox course (copy)' });
    const since = toolServer.requests.length;
    const placed = await place(tool, copy);
    const [courseLevel, locationLevel] = await Promise.all(provisionRequests(since).map((r) => claimsOf(r, tool.app)));
    expect(claimErrors('ProvisionClaims', courseLevel)).toEqual([]);
    expect(claimErrors('ProvisionClaims', locationLevel)).toEqual([]);
    const urls = server.services.launches.urls;
    expect(courseLevel?.['storage']).toEqual({
      context: urls.contextRow(copy.id, tool.app.id),
      location: null,
      parent_context: urls.contextRow(course.id, tool.app.id),
    });
    expect(locationLevel?.['storage']).toEqual({
      context: urls.contextRow(copy.id, tool.app.id),
      location: urls.locationRow(copy.id, tool.app.id, placed.location.id),
      parent_context: urls.contextRow(course.id, tool.app.id),
      parent_location: urls.locationRow(course.id, tool.app.id, placed.location.id),
    });
  });
});
