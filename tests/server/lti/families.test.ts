/**
 * The four LMS families launch the same tool and take its grades (issue 13; decisions LTI-06, LTI-10,
 * LTI-16, LTI-61): Canvas and Moodle as in launch.test.ts, Blackboard Learn with its one global client ID
 * entered by hand (each institution a deployment, so a second institution is a second school of the same
 * registration) and D2L Brightspace with its token audience, all registered through the dashboard API.
 * Each family's launch reaches the tool's callback with the school of its id_token, and a score sent to
 * `grade.submit` reaches that LMS's gradebook through AGS with a client assertion of the family's shape.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer, Tool } from '../harness.js';
import { createTool, placeLocation, startServer } from '../harness.js';
import type { ToolServer } from '../outbound/fixtures.js';
import { setUrls, startToolServer, verifyToken } from '../outbound/fixtures.js';
import type { LmsFamily, LmsFixture } from './lms-fixture.js';
import { BRIGHTSPACE_TOKEN_AUDIENCE, ROLES, startLms } from './lms-fixture.js';
import { login, postIdToken } from './support.js';

const FAMILIES: readonly LmsFamily[] = ['canvas', 'moodle', 'blackboard', 'brightspace'];

let server: TestServer;
let platformToken: string;
let tool: Tool;
let toolServer: ToolServer;
const lmses = new Map<LmsFamily, LmsFixture>();

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, lmsAutoActivate: false } });
  platformToken = readFileSync(join(server.dataDir, 'platform-token'), 'utf8').trim();
  toolServer = await startToolServer();
  toolServer.route('/launch', (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>tool</p>');
  });
  tool = await createTool(server, { name: 'Statistics Lab' });
  await setUrls(server, tool.app.id, { callbackUrl: toolServer.url('/launch') });
  for (const family of FAMILIES) {
    const lms = await startLms(family);
    lms.connect(server.url);
    lmses.set(family, lms);
    const added = await dashboard('POST', '/dashboard/v1/lms', {
      issuer: lms.issuer,
      client_id: lms.clientId,
      deployments: [lms.deploymentId],
      auth_url: lms.urls.auth,
      token_url: lms.urls.token,
      jwks_url: lms.urls.jwks,
      title: `Northwind ${family}`,
      ...(family === 'brightspace' ? { token_audience: BRIGHTSPACE_TOKEN_AUDIENCE } : {}),
    });
    expect(added.status).toBe(201);
    expect(added.body['status']).toBe('pending');
    const activated = await dashboard('POST', `/dashboard/v1/lms/${String(added.body['id'])}/activate`);
    expect(activated.body['status']).toBe('active');
  }
}, 60_000);

afterAll(async () => {
  await toolServer?.close();
  for (const lms of lmses.values()) await lms.close();
  await server?.stop();
});

async function dashboard(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${platformToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

function lmsOf(family: LmsFamily): LmsFixture {
  const lms = lmses.get(family);
  if (!lms) throw new Error(`no ${family} LMS`);
  return lms;
}

interface Launched {
  claims: Record<string, unknown>;
  token: string;
}

/** One resource-link launch of the tool's placement, through login and id_token, to the tool's callback. */
async function launchPlacement(lms: LmsFixture, input: { contextId: string; sub: string; deploymentId?: string; lineItem: number }): Promise<Launched> {
  const deploymentId = input.deploymentId ?? lms.deploymentId;
  const placed = await placeLocation(server, {
    app: tool.app.id,
    organization: { issuer: lms.issuer, client: lms.clientId, deployment: deploymentId, title: 'x' },
    course: { externalId: input.contextId },
    type: 'assessment',
    points: 10,
  });
  const started = await login(server, lms, { lti_deployment_id: deploymentId });
  expect(started.status).toBe(302);
  const idToken = await lms.idToken(
    lms.resourceLinkClaims({
      nonce: started.nonce,
      sub: input.sub,
      roles: [ROLES.learner],
      contextId: input.contextId,
      deploymentId,
      custom: { tis_placement: placed.placement.resourceLink },
      lineItem: lms.urls.lineItem(input.lineItem),
    }),
  );
  const res = await postIdToken(server, idToken, started.state, started.cookie);
  expect(res.status).toBe(303);
  const page = await fetch(res.headers.get('location') ?? '');
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain(`action="${toolServer.url('/launch')}"`);
  const token = /name="launch_data" value="([^"]+)"/.exec(html)?.[1] ?? '';
  const before = toolServer.requests.length;
  const delivered = await fetch(toolServer.url('/launch'), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ launch_data: token }).toString(),
  });
  expect(delivered.status).toBe(200);
  expect(toolServer.requests.length).toBe(before + 1);
  return { claims: await verifyToken(server, token, tool.app.id), token };
}

describe('one tool, four LMS families', () => {
  for (const family of FAMILIES) {
    it(`${family}: the launch reaches the tool with its school, and grade.submit reaches its gradebook`, async () => {
      const lms = lmsOf(family);
      const sub = family === 'brightspace' ? 'd2l-northwind-tenant_1001' : `${family}-student-1`;
      const { claims } = await launchPlacement(lms, { contextId: `${family}-course-1`, sub, lineItem: 3 });
      expect(claims['organization']).toMatchObject({ issuer: lms.issuer, client: lms.clientId, deployment: lms.deploymentId });
      expect((claims['user'] as { groups: string[] }).groups).toEqual(['student']);
      const submit = (claims['grade'] as { submit: string }).submit;
      const apiToken = (claims['api'] as { token: string }).token;
      expect(submit).toMatch(/\/scores$/);

      const res = await fetch(submit, { method: 'POST', headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ score: 0.8 }) });
      expect(res.status).toBe(200);
      const attempt = (await res.json()) as { status: string; submitted: string };
      expect(attempt.status).toBe('success');
      const sent = lms.scores.at(-1);
      expect(`${lms.origin}${sent?.lineItem ?? ''}`).toBe(lms.urls.lineItem(3));
      expect(sent?.score).toMatchObject({ userId: sub, scoreGiven: 8, scoreMaximum: 10, timestamp: attempt.submitted, activityProgress: expect.any(String), gradingProgress: expect.any(String) });
      const assertion = lms.assertions.at(-1);
      expect(assertion?.['iss']).toBe(lms.clientId);
      // Brightspace's assertion audience is its own fixed string, not the token URL (LTI-03).
      expect(assertion?.['aud']).toBe(family === 'brightspace' ? BRIGHTSPACE_TOKEN_AUDIENCE : lms.urls.token);
    });
  }

  it('blackboard: one global client, a second institution (deployment) is a second school with its own people', async () => {
    const lms = lmsOf('blackboard');
    const secondInstitution = '5b4f3c2a-1d0e-4f9a-8b7c-6d5e4f3a2b1c';
    const first = await launchPlacement(lms, { contextId: 'bb-shared-course', sub: 'bb-same-sub', lineItem: 4 });
    const second = await launchPlacement(lms, { contextId: 'bb-shared-course', sub: 'bb-same-sub', deploymentId: secondInstitution, lineItem: 5 });
    expect(second.claims['organization']).toMatchObject({ issuer: 'https://blackboard.com', client: lms.clientId, deployment: secondInstitution });
    const schools = await Promise.all([lms.deploymentId, secondInstitution].map((d) => server.services.store.organizations.find(lms.issuer, lms.clientId, d)));
    expect(schools[0]?.id).toBeDefined();
    expect(schools[1]?.id).toBeDefined();
    expect(schools[1]?.id).not.toBe(schools[0]?.id);
    // The same sub at another institution is another person (user.id is stable per school).
    expect((first.claims['user'] as { id: string }).id).toEqual(expect.any(String));
    expect((second.claims['user'] as { id: string }).id).not.toBe((first.claims['user'] as { id: string }).id);
    const listed = await dashboard('GET', '/dashboard/v1/lms');
    const registrations = listed.body['registrations'] as Array<{ client_id: string; deployments: string[]; method: string }>;
    const blackboard = registrations.filter((r) => r.client_id === lms.clientId);
    expect(blackboard).toHaveLength(1);
    expect(blackboard[0]).toMatchObject({ method: 'manual', deployments: [lms.deploymentId, secondInstitution] });
  });

  for (const family of ['canvas', 'moodle'] as const) {
    it(`${family}: a link added by hand (AGS lineitems only) gets one line item however many launches race, and its grades land there`, async () => {
      const lms = lmsOf(family);
      const contextId = `${family}-course-by-hand`;
      const placed = await placeLocation(server, {
        app: tool.app.id,
        organization: { issuer: lms.issuer, client: lms.clientId, deployment: lms.deploymentId, title: 'x' },
        course: { externalId: contextId },
        type: 'assessment',
        points: 10,
      });
      lms.containerDelayMs = 300;
      try {
        // Six students open the new link at once, each through its own login; none of the launches names a line item.
        const launched = await Promise.all(
          Array.from({ length: 6 }, async (_, i) => {
            const started = await login(server, lms);
            const idToken = await lms.idToken(
              lms.resourceLinkClaims({ nonce: started.nonce, sub: `${family}-racer-${i}`, roles: [ROLES.learner], contextId, resourceLinkId: `${family}-hand-link`, custom: { tis_placement: placed.placement.resourceLink }, containerOnly: true }),
            );
            const res = await postIdToken(server, idToken, started.state, started.cookie);
            expect(res.status).toBe(303);
            const html = await (await fetch(res.headers.get('location') ?? '')).text();
            return verifyToken(server, /name="launch_data" value="([^"]+)"/.exec(html)?.[1] ?? '', tool.app.id);
          }),
        );
        const made = lms.created.filter((c) => c.body['resourceLinkId'] === `${family}-hand-link`);
        expect(made).toHaveLength(1);
        expect(made[0]?.body).toMatchObject({ label: placed.placement.entry.label, scoreMaximum: 10, tag: expect.any(String), resourceId: placed.placement.id });
        const submits = launched.map((c) => (c['grade'] as { submit: string | null }).submit);
        expect(submits.every((u) => typeof u === 'string' && u.endsWith('/scores'))).toBe(true);
        const res = await fetch(submits[0] as string, {
          method: 'POST',
          headers: { authorization: `Bearer ${(launched[0]?.['api'] as { token: string }).token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ score: 0.5 }),
        });
        expect(((await res.json()) as { status: string }).status).toBe('success');
        expect(`${lms.origin}${lms.scores.at(-1)?.lineItem ?? ''}`).toBe(made[0]?.url);
      } finally {
        lms.containerDelayMs = 0;
      }
    });
  }
});
