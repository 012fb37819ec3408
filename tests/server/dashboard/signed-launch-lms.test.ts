/**
 * The signed launch goes through the Sandbox LMS (decision LTI-90): the service opens the trial user's LMS
 * launch URL itself and follows the chain over HTTP to its own OIDC login, the LMS's authorization endpoint
 * and its id_token validation, as a browser does. Shown here by what only that path does: the id_token the
 * LMS signs (nonce and state of the service's login) is what the service validated, its chain cannot be
 * replayed, the launch lands on the same person a browser's launch does, and a person the LMS does not
 * enrol, or an LMS registration found inactive, stops the launch with no tool request; the dashboard lists the
 * Sandbox's own registration apart and refuses to deactivate it (decision LTI-100).
 * The fetch spy only watches: every request still goes over real HTTP.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { decodeJwt } from 'jose';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import type { ToolServer } from '../outbound/fixtures.js';
import { answer, startToolServer, verifyToken } from '../outbound/fixtures.js';
import { launchPageOf } from '../sandbox/launch-chain.js';
import type { Builder, Caller } from './helpers.js';
import { caller, createBuilder, expectProblem, platformToken, register } from './helpers.js';

type Json = Record<string, unknown>;

interface Signed {
  url: string;
  fields: { launch_data: string };
  expires: string;
}

let server: TestServer;
let tool: ToolServer;
let builder: Builder;
let platform: Caller;
let appId: string;
let placementId: string;

async function signedLaunch(as: string): Promise<{ status: number; body: Signed & Json; headers: Headers }> {
  // Provisioning answers asynchronously; the call answers 409 launch_provisioning until it is done.
  for (let i = 0; i < 100; i += 1) {
    const answered = await builder.call<Signed & Json>('POST', `/apps/${appId}/sandbox/placements/${placementId}/signed-launches`, { as });
    if (answered.body['code'] !== 'launch_provisioning') return answered;
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  throw new Error('provisioning never finished');
}

/** The requests this process sent to its own origin while `work` ran, in order. */
async function watched<T>(work: () => Promise<T>): Promise<{ result: T; sent: { url: URL; method: string; body: string | null; cookie: string | null }[] }> {
  const spy = vi.spyOn(globalThis, 'fetch');
  try {
    const result = await work();
    const sent = spy.mock.calls.map(([input, init]) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const headers = new Headers(init?.headers);
      return { url, method: init?.method ?? 'GET', body: typeof init?.body === 'string' ? init.body : null, cookie: headers.get('cookie') };
    });
    return { result, sent: sent.filter((s) => s.url.origin === server.url) };
  } finally {
    spy.mockRestore();
  }
}

function toolRequests(): { launch: number; provision: number } {
  return { launch: tool.to('/launch').length, provision: tool.to('/provision').length };
}

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, locationsTimeoutMs: 2000, provisionTimeoutMs: 2000 } });
  tool = await startToolServer();
  platform = caller(server, platformToken(server));
  builder = await createBuilder(server, platform, 'LMS Launch Tester');
  tool.route('/locations', answer.json({ locations: { 'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 10 } } }));
  tool.route('/launch', answer.text('ok', 200, 'text/plain'));
  tool.route('/provision', answer.provisioning(() => true));
  ({ appId } = await register(builder));
  expect((await builder.call('PATCH', `/apps/${appId}`, { callback_url: tool.url('/launch'), provision_url: tool.url('/provision'), locations_url: tool.url('/locations') })).status).toBe(200);
  expect((await builder.call('POST', `/apps/${appId}/sandbox/picker`, {})).status).toBe(200);
  const placement = await builder.call<{ id: string }>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' });
  expect(placement.status).toBe(201);
  placementId = placement.body.id;
  // Provisioned once, so each test below makes exactly one launch.
  expect((await signedLaunch('student_1')).status).toBe(201);
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  await tool?.close();
  await server?.stop();
});

describe('the signed launch through the Sandbox LMS', () => {
  it('takes the LMS launch, OIDC login, id_token and launch page path; the chain cannot be replayed', async () => {
    const { result: signed, sent } = await watched(() => builder.call<Signed & Json>('POST', `/apps/${appId}/sandbox/placements/${placementId}/signed-launches`, { as: 'student_1' }));
    expect(signed.status).toBe(201);
    const chain = sent.filter((s) => !s.url.pathname.startsWith('/dashboard/') && !s.url.pathname.startsWith('/lms/controls/'));
    expect(chain.map((s) => `${s.method} ${s.url.pathname.replace(/^\/lms\/launch\/.+$/, '/lms/launch/{hint}')}`)).toEqual([
      'GET /lms/launch/{hint}',
      'GET /lti/login',
      'GET /lms/auth',
      'POST /lti/launch',
    ]);
    const [lmsLaunch, login, auth, posted] = chain as [(typeof chain)[0], (typeof chain)[0], (typeof chain)[0], (typeof chain)[0]];
    expect(login.url.searchParams.get('login_hint')).toBe('sandbox-student_1');

    // The id_token is the LMS's, for the trial user, carrying the nonce and state of the service's login,
    // and it came back with the login's state cookie.
    const form = new URLSearchParams(posted.body ?? '');
    const state = auth.url.searchParams.get('state');
    expect(form.get('state')).toBe(state);
    expect(posted.cookie).toContain(`lti_state_${state}=`);
    const idToken = decodeJwt(form.get('id_token') ?? '');
    expect(idToken).toMatchObject({
      iss: `${server.url}/lms`,
      sub: 'sandbox-student_1',
      nonce: auth.url.searchParams.get('nonce'),
      'https://purl.imsglobal.org/spec/lti/claim/deployment_id': `sandbox-${appId}`,
      'https://purl.imsglobal.org/spec/lti/claim/message_type': 'LtiResourceLinkRequest',
    });
    expect(server.logs.some((l) => l['msg'] === 'lti launch verified')).toBe(true);

    // The chain is single use: the LMS's launch URL and the id_token's post are refused a second time.
    const before = toolRequests();
    const again = await fetch(lmsLaunch.url, { redirect: 'manual' });
    expect(again.status).toBe(404);
    const replayed = await fetch(`${server.url}/lti/launch`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: posted.cookie ?? '' },
      body: posted.body ?? '',
    });
    expect(replayed.status).toBe(400);
    expect(replayed.headers.get('location')).toBeNull();
    // Under a login of its own (a fresh state and cookie), the id_token is refused for its nonce.
    const relogin = await fetch(login.url, { redirect: 'manual' });
    expect(relogin.status).toBe(302);
    const freshState = new URL(relogin.headers.get('location') ?? '').searchParams.get('state') ?? '';
    const cookie = (relogin.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    expect(cookie).toContain(`lti_state_${freshState}=`);
    const underNewLogin = await fetch(`${server.url}/lti/launch`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
      body: new URLSearchParams({ id_token: form.get('id_token') ?? '', state: freshState }).toString(),
    });
    expect(underNewLogin.status).toBe(401);
    expect(underNewLogin.headers.get('location')).toBeNull();
    expect(server.logs.some((l) => l['msg'] === 'lti request refused' && l['reason'] === "id_token nonce is not the login's")).toBe(true);
    expect(toolRequests()).toEqual(before);

    // The launch is the trial user's: verified as a tool verifies it, in the Sandbox school of the LMS.
    const claims = await verifyToken(server, signed.body.fields.launch_data, appId);
    expect(claims['organization']).toMatchObject({ issuer: `${server.url}/lms`, deployment: `sandbox-${appId}` });
  });

  it('lands on the same person as a browser launch of the same trial user', async () => {
    const signed = await signedLaunch('student_1');
    expect(signed.status).toBe(201);
    const signedClaims = await verifyToken(server, signed.body.fields.launch_data, appId);

    const link = await builder.call<{ launch_url: string }>('POST', `/apps/${appId}/sandbox/placements/${placementId}/launches`, { as: 'student_1' });
    expect(link.status).toBe(201);
    const page = await fetch(await launchPageOf(link.body.launch_url));
    const html = await page.text();
    expect(page.status).toBe(200);
    const launchData = /name="launch_data" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const browserClaims = await verifyToken(server, launchData, appId);

    expect((signedClaims['user'] as Json)['id']).toBe((browserClaims['user'] as Json)['id']);
    expect(signedClaims['organization']).toEqual(browserClaims['organization']);
    expect(signedClaims['context']).toBe(browserClaims['context']);
    // Two launches, each with its own api.token.
    expect((signedClaims['api'] as Json)['token']).not.toBe((browserClaims['api'] as Json)['token']);
  });

  it('answers 409 with no tool request when the LMS does not enrol the person', async () => {
    const course = `sandbox-${appId}-trial`;
    const unenrolled = await builder.call('DELETE', `/apps/${appId}/sandbox/lms/courses/${course}/enrolments/sandbox-student_2`);
    expect(unenrolled.status).toBeLessThan(300);
    const before = toolRequests();
    expectProblem(
      await builder.call('POST', `/apps/${appId}/sandbox/placements/${placementId}/signed-launches`, { as: 'student_2' }),
      409,
      'launch_lms_refused',
      `the Sandbox LMS refused: not_enrolled: user sandbox-student_2 is not enrolled in course ${course}`,
    );
    expect(toolRequests()).toEqual(before);

    // Enrolled again, the same call launches.
    expect((await builder.call('PUT', `/apps/${appId}/sandbox/lms/courses/${course}/enrolments/sandbox-student_2`, { roles: ['student'] })).status).toBe(200);
    const signed = await signedLaunch('student_2');
    expect(signed.status).toBe(201);
    expect(((await verifyToken(server, signed.body.fields.launch_data, appId))['user'] as Json)['groups']).toEqual(['student']);
  });

  it("lists the Sandbox's own registration apart, under a name no standalone LMS uses, and refuses to deactivate it (LTI-100)", async () => {
    type Registration = { id: string; issuer: string; status: string; title: string; sandbox: boolean; product_family_code: string | null };
    const list = await platform<{ registrations: Registration[]; sandbox: Registration | null }>('GET', '/lms');
    expect(list.status).toBe(200);
    expect(list.body.registrations.filter((r) => r.issuer === `${server.url}/lms`)).toEqual([]);
    const own = list.body.sandbox;
    expect(own).toMatchObject({ issuer: `${server.url}/lms`, status: 'active', sandbox: true, title: 'Sandbox LMS (built into this service)' });
    // The name `npm run lms` registers with is its product family code; the Sandbox's is never that.
    expect(own?.title).not.toBe(own?.product_family_code);
    const id = own?.id ?? '';
    expect((await platform<Registration>('GET', `/lms/${id}`)).body).toMatchObject({ sandbox: true, title: own?.title });
    expectProblem(
      await platform('POST', `/lms/${id}/deactivate`),
      409,
      'sandbox_lms_registration',
      "this is the Sandbox's own LMS registration; deactivating it would stop every Sandbox launch and score, so it stays active (suspend a tool to close its Sandbox)",
    );
    expect((await server.services.store.lti.getRegistration(id))?.status).toBe('active');
    expect((await signedLaunch('student_1')).status).toBe(201);
  });

  it("answers 409 in the login page's words, with no tool request, while the LMS's registration is inactive in the store", async () => {
    // Not through the dashboard, which refuses (above): a store where it was deactivated before LTI-100.
    const list = await platform<{ sandbox: { id: string } | null }>('GET', '/lms');
    const id = list.body.sandbox?.id ?? '';
    expect(await server.services.store.lti.setStatus(id, 'inactive')).not.toBeNull();
    try {
      const before = toolRequests();
      expectProblem(
        await builder.call('POST', `/apps/${appId}/sandbox/placements/${placementId}/signed-launches`, { as: 'student_1' }),
        409,
        'launch_lti_refused',
        "This learning platform is not connected yet. Your school's connection to this service has not been activated by the platform team. Send the report ID to your school's support team.",
      );
      expect(toolRequests()).toEqual(before);
      expect(server.logs.some((l) => l['msg'] === 'signed launch refused on the LTI path' && l['step'] === '/lti/login' && l['status'] === 403)).toBe(true);
    } finally {
      expect(await server.services.store.lti.setStatus(id, 'active')).not.toBeNull();
    }
    expect((await signedLaunch('student_1')).status).toBe(201);
  });
});
