/**
 * The Sandbox after a restart on the same data directory (same SQLite file): the harness restarts on a new
 * free port, so `PUBLIC_URL` (and with it the Sandbox LMS's issuer and school) changes, as it does for a
 * service whose `PUBLIC_URL` defaults to `http://HOST:PORT`. The course of the earlier school moves into
 * the new one at the first need (LTI-53): it stays the trial course with the same members, and a placement
 * made before the restart gets the LMS's launch link, which launches under the new origin (LTI-97). (Before the S-12 fix the launch answered 500 "Sandbox
 * course … lost its student_1": the trial users were looked up in the school of the new issuer.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { dropTestStore, startServer } from '../harness.js';
import type { ToolServer } from '../outbound/fixtures.js';
import { answer, startToolServer } from '../outbound/fixtures.js';
import { launchPageOf } from '../sandbox/launch-chain.js';
import { caller, createBuilder, platformToken, register } from './helpers.js';

const LOCATIONS = { locations: { 'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 20 } } };

let tool: ToolServer;
let dataDir: string;
const servers: TestServer[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tis-sandbox-restart-'));
  tool = await startToolServer();
  tool.route('/locations', answer.json(LOCATIONS));
  tool.route('/launch', answer.text('<!DOCTYPE html><title>Quiz</title>', 200, 'text/html'));
});
afterAll(async () => {
  for (const server of servers) await server.stop();
  await tool?.close();
  await dropTestStore(dataDir);
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<TestServer> {
  const server = await startServer({ dataDir, config: { allowLoopbackTools: true, locationsTimeoutMs: 2000 } });
  servers.push(server);
  return server;
}

it('moves the course of the earlier origin into the new school, and links a placement made before the restart through the LMS', async () => {
  const first = await start();
  const builder = await createBuilder(first, caller(first, platformToken(first)), 'Restart Builder');
  const { appId } = await register(builder);
  expect((await builder.call('PATCH', `/apps/${appId}`, { callback_url: tool.url('/launch'), locations_url: tool.url('/locations') })).status).toBe(200);
  expect((await builder.call('POST', `/apps/${appId}/sandbox/picker`)).status).toBe(200);
  const placed = await builder.call<{ id: string; context_id: string }>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' });
  expect(placed.status).toBe(201);
  const before = await builder.call<{ users: Record<string, { member_id: string }> }>('GET', `/apps/${appId}/sandbox`);
  expect(before.status).toBe(200);
  await first.stop();

  const second = await start();
  const again = caller(second, builder.token);
  const link = await again<{ launch_url: string }>('POST', `/apps/${appId}/sandbox/placements/${placed.body.id}/launches`, { as: 'student_1' });
  expect(link.status).toBe(201);
  // The LMS's launch URL, followed through the OIDC login and the id_token's validation under this origin:
  // the school moved to the registration made under it (LTI-97), so nothing leads to the earlier origin.
  expect(link.body.launch_url).toMatch(new RegExp(`^${second.url}/lms/launch/`));
  const page = await launchPageOf(link.body.launch_url);
  expect(page).toMatch(new RegExp(`^${second.url}/launch/[A-Za-z0-9_-]{43}$`));
  expect((await fetch(page)).status).toBeLessThan(400);

  const sandbox = await again<{ context: string; organization: { issuer: string }; placements: Array<{ id: string }>; copies: unknown[]; users: Record<string, { member_id: string }> }>(
    'GET',
    `/apps/${appId}/sandbox`,
  );
  expect(sandbox.status).toBe(200);
  expect(sandbox.body.context).toBe(placed.body.context_id);
  expect(sandbox.body.organization.issuer).toBe(`${second.url}/lms`);
  expect(sandbox.body.copies).toEqual([]);
  expect(sandbox.body.placements.map((p) => p.id)).toEqual([placed.body.id]);
  expect(sandbox.body.users['student_1']?.member_id).toBe(before.body.users['student_1']?.member_id);
});
