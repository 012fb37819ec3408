/**
 * What a Sandbox reset touches and what it leaves (decisions GAP-39, S-11, S-35), beyond the whole flow in
 * sandbox.test.ts: unused tickets go by the placement they open (a column since migration 0006), so another
 * tool's tickets and a used one stay; the scores go and the columns stay; copies are released, not
 * deleted. Tools pinned to 2026-08-19 are used because their picker needs no tool server (S-41).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import type { Builder } from './helpers.js';
import { caller, createBuilder, platformToken, register } from './helpers.js';
import { launchPageOf } from '../sandbox/launch-chain.js';

let server: TestServer;
let builder: Builder;

beforeAll(async () => {
  server = await startServer();
  builder = await createBuilder(server, caller(server, platformToken(server)), 'Reset Builder');
});
afterAll(async () => {
  await server?.stop();
});

/** A tool with its Home location placed in its trial course; the placement's ID and the course's. */
async function placedTool(): Promise<{ appId: string; placementId: string; trial: string }> {
  const { appId } = await register(builder, { name: 'Reset tool', hosting: 'self_hosted', contract_version: '2026-08-19' });
  expect((await builder.call('POST', `/apps/${appId}/sandbox/picker`)).status).toBe(200);
  const placed = await builder.call<{ id: string; context_id: string }>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'home' });
  expect(placed.status).toBe(201);
  return { appId, placementId: placed.body.id, trial: placed.body.context_id };
}

/** The ticket a launch link leads to: the LMS's launch runs until the launch page (LTI-45). */
async function issue(appId: string, placementId: string): Promise<string> {
  const issued = await builder.call<{ launch_url: string }>('POST', `/apps/${appId}/sandbox/placements/${placementId}/launches`, { as: 'instructor' });
  expect(issued.status).toBe(201);
  const page = await launchPageOf(issued.body.launch_url);
  return page.slice(page.lastIndexOf('/') + 1);
}

describe('a Sandbox reset', () => {
  it('deletes the unused tickets of its own placements only, and releases its copies', async () => {
    const a = await placedTool();
    const b = await placedTool();
    const { launches } = server.services.store;
    const unusedA = await issue(a.appId, a.placementId);
    const usedA = await issue(a.appId, a.placementId);
    expect((await launches.consumeTicket(usedA)).status).toBe('ok');
    const unusedB = await issue(b.appId, b.placementId);
    const copy = await builder.call<{ context: string }>('POST', `/apps/${a.appId}/sandbox/copies`);
    expect(copy.status).toBe(201);

    expect((await builder.call('POST', `/apps/${a.appId}/sandbox/reset`)).status).toBe(204);

    expect((await launches.peekTicket(unusedA)).status).toBe('unknown');
    expect((await launches.peekTicket(usedA)).status).toBe('used');
    expect((await launches.peekTicket(unusedB)).status).toBe('ok');
    const released = await server.services.store.contexts.get(copy.body.context);
    expect(released).toMatchObject({ id: copy.body.context, sandboxAppId: null, parentContextId: a.trial });
    const trial = await server.services.store.contexts.get(a.trial);
    expect(trial?.sandboxAppId).toBe(a.appId);
    expect(trial?.updatedAt).toBeGreaterThan(trial?.createdAt ?? Infinity);
  });

  it('keeps a ticket issued after it', async () => {
    const a = await placedTool();
    expect((await builder.call('POST', `/apps/${a.appId}/sandbox/reset`)).status).toBe(204);
    const fresh = await issue(a.appId, a.placementId);
    expect((await server.services.store.launches.peekTicket(fresh)).status).toBe('ok');
  });
});
