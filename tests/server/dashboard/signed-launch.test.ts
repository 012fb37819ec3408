/**
 * The scriptable signed launch (decision OPS-01): the dashboard answers the form the launch page would POST,
 * the token verifies as the tool would verify it, and posting it reaches the tool as a browser's would.
 * What would stop the page answers 409 in the page's words.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import type { ToolServer } from '../outbound/fixtures.js';
import { answer, startToolServer, verifyToken } from '../outbound/fixtures.js';
import type { Builder } from './helpers.js';
import { caller, createBuilder, expectProblem, platformToken, register } from './helpers.js';

let server: TestServer;
let tool: ToolServer;
let builder: Builder;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, locationsTimeoutMs: 2000, provisionTimeoutMs: 2000 } });
  tool = await startToolServer();
  builder = await createBuilder(server, caller(server, platformToken(server)), 'Launch Tester');
  tool.route('/locations', answer.json({ locations: { 'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 10 } } }));
  tool.route('/launch', answer.text('ok', 200, 'text/plain'));
  tool.route('/provision', answer.provisioning(() => true));
});
afterAll(async () => {
  await tool?.close();
  await server?.stop();
});

interface Signed {
  url: string;
  fields: { launch_data: string };
  expires: string;
}

async function placed(appId: string): Promise<string> {
  expect((await builder.call('POST', `/apps/${appId}/sandbox/picker`, {})).status).toBe(200);
  const placement = await builder.call<{ id: string }>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' });
  expect(placement.status).toBe(201);
  return placement.body.id;
}

async function signedLaunch(appId: string, placementId: string, as: string): Promise<{ status: number; body: Signed & Record<string, unknown>; headers: Headers }> {
  // Provisioning answers asynchronously; the call answers 409 launch_provisioning until it is done.
  for (let i = 0; i < 100; i += 1) {
    const answered = await builder.call<Signed & Record<string, unknown>>('POST', `/apps/${appId}/sandbox/placements/${placementId}/signed-launches`, { as });
    if (answered.body['code'] !== 'launch_provisioning') return answered;
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  throw new Error('provisioning never finished');
}

describe('signed launch', () => {
  it('answers the signed launch a placement sends, which verifies and reaches the tool when posted', async () => {
    const { appId } = await register(builder);
    expect((await builder.call('PATCH', `/apps/${appId}`, { callback_url: tool.url('/launch'), provision_url: tool.url('/provision'), locations_url: tool.url('/locations') })).status).toBe(200);
    const placementId = await placed(appId);
    const signed = await signedLaunch(appId, placementId, 'student_2');
    expect(signed.status).toBe(201);
    expect(signed.headers.get('cache-control')).toBe('no-store');
    expect(signed.body.url).toBe(tool.url('/launch'));
    const claims = await verifyToken(server, signed.body.fields.launch_data, appId);
    expect(claims['exp']).toBe(Date.parse(signed.body.expires) / 1000);
    const before = tool.to('/launch').length;
    const posted = await fetch(signed.body.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(signed.body.fields).toString(),
    });
    expect(posted.status).toBe(200);
    expect(tool.to('/launch')[before]?.form.get('launch_data')).toBe(signed.body.fields.launch_data);
  });

  it('answers 409 in the launch page words when the page would stop, and 404 / 422 like a launch link', async () => {
    const { appId } = await register(builder);
    expect((await builder.call('PATCH', `/apps/${appId}`, { locations_url: tool.url('/locations') })).status).toBe(200);
    const placementId = await placed(appId);
    expectProblem(
      await builder.call('POST', `/apps/${appId}/sandbox/placements/${placementId}/signed-launches`, { as: 'student_1' }),
      409,
      'launch_callback_unset',
      'Quiz Tool could not be reached. The tool has no launch address set yet.',
    );
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements/plc_nope/signed-launches`, { as: 'student_1' }), 404, 'placement_not_found');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements/${placementId}/signed-launches`, { as: 'dean' }), 422, 'invalid_enum');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements/${placementId}/signed-launches`, {}), 422, 'field_required', 'as is required');
  });
});
