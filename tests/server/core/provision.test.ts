/**
 * The provision PUTs (L-04, NS-09, GAP-02): 204 and idempotent; only a provision token that named the
 * level; 404 for a level that does not exist for the tool; and what provisioning opens up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlacedLocation, TestServer, Tool } from '../harness.js';
import { createTool, launch, placeLocation, problemOf, startServer } from '../harness.js';

let server: TestServer;
let tool: Tool;
let placed: PlacedLocation;

beforeAll(async () => {
  server = await startServer();
  tool = await createTool(server);
  placed = await placeLocation(server, { app: tool.app.id, provisionContext: false, provisionLocation: false });
});
afterAll(async () => server?.stop());

const put = (url: string, token: string, body?: string, contentType = 'application/json') =>
  fetch(url, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': contentType } : {}) },
    ...(body !== undefined ? { body } : {}),
  });

async function request(locationId: string | null = null) {
  return server.services.launches.provisionRequest({ appId: tool.app.id, contextId: placed.context.id, locationId });
}

describe('provisionContext', () => {
  it('204 with no body, with {}, and again (idempotent); the context row opens', async () => {
    const r = await request();
    const contextRow = r.claims.storage.context;
    expect((await fetch(contextRow, { headers: { Authorization: `Bearer ${r.apiToken}` } })).status).toBe(422);
    expect((await put(r.claims.provision.context, r.apiToken)).status).toBe(204);
    expect((await put(r.claims.provision.context, r.apiToken, '{}')).status).toBe(204);
    expect((await put(r.claims.provision.context, r.apiToken, '{"note":"ignored"}')).status).toBe(204);
    expect(await server.services.store.provisioning.isProvisioned({ appId: tool.app.id, contextId: placed.context.id })).toBe(true);
    // The provision token may then use the context row it names.
    expect((await put(contextRow, r.apiToken, '{"setup":true}')).status).toBe(204);
    expect(await (await fetch(contextRow, { headers: { Authorization: `Bearer ${r.apiToken}` } })).json()).toEqual({ setup: true });
  });

  it('422 for a body that is not a JSON object; 415 for another media type; 422 for broken JSON (no 400 in its spec, H-02)', async () => {
    const r = await request();
    const p = await problemOf(await put(r.claims.provision.context, r.apiToken, '[1]'));
    expect(p).toMatchObject({ status: 422, detail: 'provision body must be empty or a JSON object' });
    expect((await put(r.claims.provision.context, r.apiToken, '"x"')).status).toBe(422);
    expect((await put(r.claims.provision.context, r.apiToken, 'x=1', 'application/x-www-form-urlencoded')).status).toBe(415);
    expect((await put(r.claims.provision.context, r.apiToken, '{')).status).toBe(422);
  });

  it('403 for a launch token, which provisions nothing', async () => {
    const student = await launch(server, { placed, groups: ['instructor'] });
    const p = await problemOf(await put(student.claims.provision.context, student.apiToken));
    expect(p).toMatchObject({ status: 403, detail: `this token may not provision context ${placed.context.id}` });
  });

  it('404 for a course the tool is not in, and for another tool\'s token', async () => {
    const r = await request();
    const stranger = await placeLocation(server, { app: (await createTool(server)).app.id });
    const elsewhere = r.claims.provision.context.replace(placed.context.id, stranger.context.id);
    expect(await problemOf(await put(elsewhere, r.apiToken))).toMatchObject({
      status: 404,
      detail: `context ${stranger.context.id} has no app ${tool.app.id}`,
    });
    const other = await createTool(server);
    const otherApp = r.claims.provision.context.replace(tool.app.id, other.app.id);
    expect((await put(otherApp, r.apiToken)).status).toBe(404);
    const nowhere = r.claims.provision.context.replace(placed.context.id, 'ctx_doesnotexist');
    expect((await put(nowhere, r.apiToken)).status).toBe(404);
  });
});

describe('provisionLocation', () => {
  it('a location-level token provisions its location (and the course it names)', async () => {
    const r = await request(placed.location.id);
    expect(r.claims.provision.location).not.toBeNull();
    expect((await put(r.claims.provision.location!, r.apiToken)).status).toBe(204);
    expect((await put(r.claims.provision.location!, r.apiToken)).status).toBe(204);
    expect((await put(r.claims.provision.context, r.apiToken)).status).toBe(204);
    expect(
      await server.services.store.provisioning.isProvisioned({ appId: tool.app.id, contextId: placed.context.id, locationId: placed.location.id }),
    ).toBe(true);
  });

  it('a course-level token may not provision a location', async () => {
    const r = await request();
    const url = server.services.launches.urls.provisionLocation(placed.context.id, tool.app.id, placed.location.id);
    expect(await problemOf(await put(url, r.apiToken))).toMatchObject({
      status: 403,
      detail: `this token may not provision location ${placed.location.id}`,
    });
  });

  it('a token of one location may not provision another', async () => {
    const second = await placeLocation(server, { app: tool.app.id, course: { contextId: placed.context.id } });
    const r = await request(placed.location.id);
    const url = server.services.launches.urls.provisionLocation(placed.context.id, tool.app.id, second.location.id);
    expect((await put(url, r.apiToken)).status).toBe(403);
  });

  it('404 for a location that is not the tool\'s or not in the course', async () => {
    const r = await request(placed.location.id);
    const foreign = await placeLocation(server, { app: (await createTool(server)).app.id });
    const url = server.services.launches.urls.provisionLocation(placed.context.id, tool.app.id, foreign.location.id);
    expect(await problemOf(await put(url, r.apiToken))).toMatchObject({
      status: 404,
      detail: `context ${placed.context.id} has no location ${foreign.location.id} of app ${tool.app.id}`,
    });
  });
});
