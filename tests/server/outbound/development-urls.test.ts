/**
 * URLs registered under the development switch (decision H-12): a tool given loopback URLs while
 * `ALLOW_LOOPBACK_TOOLS` was on is flagged at the next start with the switch off (a log line), shown in
 * the dashboard API (`development_only_urls`), and never called: the picker and the launch page refuse
 * without a request reaching the tool.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropTestStore, startServer, type TestServer } from '../harness.js';
import { caller, createBuilder, platformToken, register, type Builder } from '../dashboard/helpers.js';
import { launchPageOf } from '../sandbox/launch-chain.js';
import { answer, startToolServer, type ToolServer } from './fixtures.js';

const dataDir = mkdtempSync(join(tmpdir(), 'tis-dev-urls-'));
let tool: ToolServer;
let appId: string;
let placementId: string;
let launchUrl: string;
let builderToken: string;
let server: TestServer;
let builder: Builder;

beforeAll(async () => {
  tool = await startToolServer();
  tool.route('/locations', answer.json({ locations: { 'quiz-1': { type: 'assessment', label: 'Quiz' } } }));
  tool.route('/launch', answer.text('<!DOCTYPE html><title>Quiz</title>', 200, 'text/html'));
  tool.route('/provision', answer.provisioning());
  const dev = await startServer({ dataDir, config: { allowLoopbackTools: true, locationsTimeoutMs: 2000, provisionTimeoutMs: 2000 } });
  try {
    const devBuilder = await createBuilder(dev, caller(dev, platformToken(dev)), 'Dev Builder');
    builderToken = devBuilder.token;
    ({ appId } = await register(devBuilder));
    const set = await devBuilder.call('PATCH', `/apps/${appId}`, {
      callback_url: tool.url('/launch'),
      provision_url: tool.url('/provision'),
      locations_url: tool.url('/locations'),
    });
    expect(set.status).toBe(200);
    expect(set.body['development_only_urls']).toEqual(['callback_url', 'provision_url', 'locations_url']);
    expect((await devBuilder.call('POST', `/apps/${appId}/sandbox/picker`)).status).toBe(200);
    const placed = await devBuilder.call<{ id: string }>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' });
    expect(placed.status).toBe(201);
    placementId = placed.body.id;
    // A launch link issued now and opened after the restart (links live 120 s, S-10).
    const ticket = await devBuilder.call<{ launch_url: string }>('POST', `/apps/${appId}/sandbox/placements/${placementId}/launches`, { as: 'student_1' });
    expect(ticket.status).toBe(201);
    // Followed to the launch page now (the LMS's launch and OIDC login run on this start, LTI-45); its
    // ticket is opened after the restart.
    launchUrl = await launchPageOf(ticket.body.launch_url);
  } finally {
    await dev.stop();
  }
  server = await startServer({ dataDir, config: { allowLoopbackTools: false } });
  builder = { id: '', email: '', token: builderToken, call: caller(server, builderToken) };
});
afterAll(async () => {
  await server?.stop();
  await tool?.close();
  await dropTestStore(dataDir);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('loopback URLs kept from a start with ALLOW_LOOPBACK_TOOLS on (H-12)', () => {
  it('are flagged at start-up when the switch is off', () => {
    const lines = server.logs.filter((l) => Object.values(l).includes('tool endpoint URLs registered under ALLOW_LOOPBACK_TOOLS are not called while it is off'));
    expect(lines).toEqual([expect.objectContaining({ app: appId, fields: ['callback_url', 'provision_url', 'locations_url'] })]);
  });

  it('are shown in the dashboard API', async () => {
    const read = await builder.call('GET', `/apps/${appId}`);
    expect(read.status).toBe(200);
    expect(read.body['development_only_urls']).toEqual(['callback_url', 'provision_url', 'locations_url']);
    const other = await register(await createBuilder(server, caller(server, platformToken(server)), 'Other'));
    expect(other.appId).toMatch(/^app_/);
  });

  it('are never called: the picker and the launch page refuse without a request to the tool', async () => {
    const before = { locations: tool.to('/locations').length, launch: tool.to('/launch').length, provision: tool.to('/provision').length };
    const picker = await builder.call('POST', `/apps/${appId}/sandbox/picker`);
    expect(picker.status).toBe(502);
    expect(String(picker.body['detail'])).toMatch(/^app connection failure: locations_url must be an absolute https:\/\/ URL/);
    const page = await fetch(launchUrl.replace(/^http:\/\/127\.0\.0\.1:\d+/, server.url));
    expect(page.status).toBe(409);
    expect(await page.text()).not.toContain('launch_data');
    expect({ locations: tool.to('/locations').length, launch: tool.to('/launch').length, provision: tool.to('/provision').length }).toEqual(before);
  });
});
