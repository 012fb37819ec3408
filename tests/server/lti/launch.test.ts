/**
 * The service as an LTI 1.3 tool toward a Canvas-shaped and a Moodle-shaped LMS on loopback (issue 13;
 * decisions LTI-05 to LTI-13): Dynamic Registration and its refusals, the OIDC login, id_token
 * validation with every refusal ending on a 4xx page and no tool request, and a resource-link launch that
 * reaches a real loopback tool's callback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer, Tool } from '../harness.js';
import { createTool, placeLocation, startServer } from '../harness.js';
import type { ToolServer } from '../outbound/fixtures.js';
import { setUrls, startToolServer, verifyToken } from '../outbound/fixtures.js';
import type { LmsFixture } from './lms-fixture.js';
import { ROLES, startLms } from './lms-fixture.js';
import { expectRefusalPage, lastRefusal, login, postIdToken } from './support.js';

let server: TestServer;
let canvas: LmsFixture;
let moodle: LmsFixture;
let tool: Tool;
let toolServer: ToolServer;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, lmsAutoActivate: false } });
  canvas = await startLms('canvas');
  moodle = await startLms('moodle');
  for (const lms of [canvas, moodle]) lms.connect(server.url);
  toolServer = await startToolServer();
  toolServer.route('/launch', (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<p>tool</p>');
  });
  tool = await createTool(server, { name: 'Statistics Lab' });
  await setUrls(server, tool.app.id, { callbackUrl: toolServer.url('/launch') });
}, 60_000);

afterAll(async () => {
  await toolServer?.close();
  await canvas?.close();
  await moodle?.close();
  await server?.stop();
});

async function registerCanvasByHand(): Promise<string> {
  const { registerManually } = await import('../../../server/lti/registration.js');
  const saved = await registerManually(
    { store: server.services.store, config: server.services.config, lms: server.services.lti.lms },
    {
      issuer: canvas.issuer,
      clientId: canvas.clientId,
      deployments: [canvas.deploymentId],
      authUrl: canvas.urls.auth,
      tokenUrl: canvas.urls.token,
      jwksUrl: canvas.urls.jwks,
      title: 'Northwind Canvas',
    },
  );
  if (!saved.ok) throw new Error(saved.message);
  return saved.registration.id;
}

describe('Dynamic Registration (Moodle-shaped)', () => {
  it('refuses an OpenID configuration whose issuer does not prefix its URL, storing nothing', async () => {
    moodle.registration.issuerOverride = 'https://moodle.elsewhere.example';
    try {
      const res = await fetch(`${server.url}/lti/register?${new URLSearchParams({ openid_configuration: moodle.urls.openidConfiguration, registration_token: 'reg-token-1' })}`);
      await expectRefusalPage(res, 400);
      expect(moodle.to('/mod/lti/openid-registration.php')).toHaveLength(0);
      expect(await server.services.store.lti.listRegistrations()).toHaveLength(0);
      expect(String(lastRefusal(server)?.['reason'])).toMatch(/does not prefix/);
      expect(toolServer.requests).toHaveLength(0);
    } finally {
      moodle.registration.issuerOverride = null;
    }
  });

  it('refuses when the LMS refuses the registration token, storing nothing', async () => {
    const res = await fetch(`${server.url}/lti/register?${new URLSearchParams({ openid_configuration: moodle.urls.openidConfiguration, registration_token: 'stale' })}`);
    await expectRefusalPage(res, 502);
    expect(await server.services.store.lti.listRegistrations()).toHaveLength(0);
    expect(String(lastRefusal(server)?.['reason'])).toMatch(/HTTP 401/);
    expect(toolServer.requests).toHaveLength(0);
  });

  it('posts the client registration, stores client and deployment pending, and closes the window', async () => {
    const res = await fetch(`${server.url}/lti/register?${new URLSearchParams({ openid_configuration: moodle.urls.openidConfiguration, registration_token: 'reg-token-1' })}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain("subject: 'org.imsglobal.lti.close'");
    const posted = moodle.to('/mod/lti/openid-registration.php').at(-1);
    expect(posted?.headers.authorization).toBe('Bearer reg-token-1');
    const body = JSON.parse(posted?.body ?? '{}') as Record<string, unknown>;
    expect(body).toMatchObject({
      application_type: 'web',
      response_types: ['id_token'],
      grant_types: ['implicit', 'client_credentials'],
      initiate_login_uri: `${server.url}/lti/login`,
      redirect_uris: [`${server.url}/lti/launch`],
      jwks_uri: `${server.url}/.well-known/jwks.json`,
      token_endpoint_auth_method: 'private_key_jwt',
    });
    expect(String(body['scope'])).toContain('https://purl.imsglobal.org/spec/lti-ags/scope/score');
    const config = body['https://purl.imsglobal.org/spec/lti-tool-configuration'] as Record<string, unknown>;
    expect(config['target_link_uri']).toBe(`${server.url}/lti/launch`);
    expect((config['messages'] as Array<{ type: string }>).map((m) => m.type)).toEqual(['LtiResourceLinkRequest', 'LtiDeepLinkingRequest']);
    const stored = await server.services.store.lti.findRegistration(moodle.issuer, moodle.clientId);
    expect(stored).toMatchObject({ status: 'pending', method: 'dynamic', deployments: [moodle.deploymentId], tokenUrl: moodle.urls.token });
  });

  it('refuses a login for a pending registration with 403, then logs in once it is active', async () => {
    const pending = await login(server, moodle);
    expect(pending.status).toBe(403);
    const stored = await server.services.store.lti.findRegistration(moodle.issuer, moodle.clientId);
    await server.services.store.lti.setStatus(stored?.id ?? '', 'active');
    const ok = await login(server, moodle, {}, 'POST');
    expect(ok.status).toBe(302);
    expect(ok.auth.origin + ok.auth.pathname).toBe(moodle.urls.auth);
    expect(Object.fromEntries(ok.auth.searchParams)).toMatchObject({
      scope: 'openid',
      response_type: 'id_token',
      response_mode: 'form_post',
      prompt: 'none',
      client_id: moodle.clientId,
      redirect_uri: `${server.url}/lti/launch`,
      login_hint: 'hint-1',
      lti_message_hint: 'message-hint-1',
    });
    expect(ok.state).not.toBe('');
    expect(ok.nonce).not.toBe('');
    expect(ok.cookie).toBe(`lti_state_${ok.state}=1`);
    // Bound to this browser across the LMS's frame: a third-party cookie must be SameSite=None and Secure.
    expect(ok.setCookie.split(';').map((a) => a.trim())).toEqual(expect.arrayContaining(['SameSite=None', 'Secure', 'HttpOnly', 'Path=/lti/']));
  });
});

describe('resource link launch', () => {
  beforeAll(async () => {
    await registerCanvasByHand();
    const reg = await server.services.store.lti.findRegistration(canvas.issuer, canvas.clientId);
    await server.services.store.lti.setStatus(reg?.id ?? '', 'active');
  });

  for (const family of ['canvas', 'moodle'] as const) {
    it(`${family}: a placement's launch reaches the tool's callback, with the school, course and person of the id_token`, async () => {
      const lms = family === 'canvas' ? canvas : moodle;
      const contextId = `${family}-course-${Date.now()}`;
      const placed = await placeLocation(server, {
        app: tool.app.id,
        organization: { issuer: lms.issuer, client: lms.clientId, deployment: lms.deploymentId, title: 'x' },
        course: { externalId: contextId },
        type: 'assessment',
      });
      const started = await login(server, lms);
      expect(started.status).toBe(302);
      const idToken = await lms.idToken(
        lms.resourceLinkClaims({
          nonce: started.nonce,
          sub: `${family}-user-1`,
          roles: [ROLES.learner],
          contextId,
          contextTitle: 'Statistics (renamed)',
          contextLabel: 'STAT 101 F26',
          custom: { tis_placement: placed.placement.resourceLink },
          lineItem: lms.urls.lineItem(7),
        }),
      );
      const res = await postIdToken(server, idToken, started.state, started.cookie);
      expect(res.status).toBe(303);
      const launchUrl = res.headers.get('location') ?? '';
      expect(launchUrl).toMatch(new RegExp(`^${server.url}/launch/`));
      const page = await fetch(launchUrl);
      expect(page.status).toBe(200);
      const html = await page.text();
      const token = /name="launch_data" value="([^"]+)"/.exec(html)?.[1] ?? '';
      expect(html).toContain(`action="${toolServer.url('/launch')}"`);
      // The browser's form POST to the tool.
      const delivered = await fetch(toolServer.url('/launch'), {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ launch_data: token }).toString(),
      });
      expect(delivered.status).toBe(200);
      const claims = await verifyToken(server, token, tool.app.id);
      expect(claims['organization']).toMatchObject({ issuer: lms.issuer, client: lms.clientId, deployment: lms.deploymentId });
      expect(claims['course']).toMatchObject({ name: 'Statistics (renamed)', label: 'STAT 101 F26' });
      expect((claims['user'] as { groups: string[] }).groups).toEqual(['student']);
      const placement = await server.services.store.placements.get(placed.placement.id);
      expect(placement?.lineItemId).toBe(lms.urls.lineItem(7));
    });
  }

  it('the same sub in the same school is the same user.id; in another deployment another user', async () => {
    const contextId = `course-stable-${Date.now()}`;
    const placed = await placeLocation(server, {
      app: tool.app.id,
      organization: { issuer: canvas.issuer, client: canvas.clientId, deployment: canvas.deploymentId, title: 'x' },
      course: { externalId: contextId },
    });
    const userIds: string[] = [];
    for (const deploymentId of [canvas.deploymentId, canvas.deploymentId, '999:otherschool']) {
      // An unseen deployment at login is not refused: it is a new school (LTI-10).
      const started = await login(server, canvas, { lti_deployment_id: deploymentId });
      const idToken = await canvas.idToken(
        canvas.resourceLinkClaims({
          nonce: started.nonce,
          sub: 'same-person',
          roles: [ROLES.instructor],
          contextId,
          deploymentId,
          resourceLinkId: `rl-${deploymentId}`,
          custom: { tis_placement: placed.placement.resourceLink },
        }),
      );
      const res = await postIdToken(server, idToken, started.state, started.cookie);
      await res.text();
      const org = await server.services.store.organizations.find(canvas.issuer, canvas.clientId, deploymentId);
      const user = org ? await server.services.store.users.findByExternal(org.id, 'same-person') : null;
      userIds.push(user?.id ?? 'none');
    }
    expect(userIds[0]).toBe(userIds[1]);
    expect(userIds[2]).not.toBe(userIds[0]);
    expect(userIds[2]).not.toBe('none');
    const reg = await server.services.store.lti.findRegistration(canvas.issuer, canvas.clientId);
    expect(reg?.deployments).toContain('999:otherschool');
  });

  it('an unknown resource link: a student gets "not set up yet" (404), an instructor the tool choice', async () => {
    const contextId = `course-unknown-${Date.now()}`;
    for (const [roles, status, text] of [
      [[ROLES.learner], 404, 'This activity is not set up yet'],
      [[ROLES.instructor], 200, 'Statistics Lab'],
    ] as const) {
      const started = await login(server, canvas);
      const idToken = await canvas.idToken(canvas.resourceLinkClaims({ nonce: started.nonce, sub: `u-${status}`, roles: [...roles], contextId, resourceLinkId: 'rl-unknown' }));
      const res = await postIdToken(server, idToken, started.state, started.cookie);
      expect(res.status).toBe(status);
      expect(await res.text()).toContain(text);
    }
    expect(toolServer.requests).toHaveLength(2);
  });
});

describe('an instructor sets up an unknown link, and platform storage', () => {
  it('the instructor\'s choice binds the LMS link to the placed location and launches it; the next launch of the link opens it', async () => {
    const picker = await startToolServer();
    picker.route('/locations', (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ locations: { 'lab-1': { type: 'content', label: 'Lab 1' } } }));
    });
    await setUrls(server, tool.app.id, { locationsUrl: picker.url('/locations') });
    try {
      const contextId = `course-setup-${Date.now()}`;
      const started = await login(server, canvas);
      const idToken = await canvas.idToken(canvas.resourceLinkClaims({ nonce: started.nonce, sub: 'teacher-7', roles: [ROLES.instructor], contextId, resourceLinkId: 'rl-setup' }));
      const toolsHtml = await (await postIdToken(server, idToken, started.state, started.cookie)).text();
      const key = /name="key" value="([^"]+)"/.exec(toolsHtml)?.[1] ?? '';
      const post = (fields: Array<[string, string]>): Promise<Response> =>
        fetch(`${server.url}/lti/deep-linking`, { method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
      const locationsHtml = await (await post([['key', key], ['app', tool.app.id]])).text();
      expect(locationsHtml).toContain('Lab 1');
      // One activity per link: radio buttons; no Cancel, since no LMS dialog waits for an answer (LTI-111, LTI-113).
      expect(locationsHtml).toContain('<input type="radio" name="extid" value="lab-1"');
      expect(`${toolsHtml}${locationsHtml}`).not.toContain('name="cancel"');
      const chosen = await post([['key', key], ['app', tool.app.id], ['confirm', '1'], ['extid', 'lab-1']]);
      expect(chosen.status).toBe(303);
      expect(chosen.headers.get('location')).toMatch(new RegExp(`^${server.url}/launch/`));
      // A student's launch of the same LMS link now opens the placement.
      const again = await login(server, canvas);
      const studentToken = await canvas.idToken(canvas.resourceLinkClaims({ nonce: again.nonce, sub: 'student-7', roles: [ROLES.learner], contextId, resourceLinkId: 'rl-setup' }));
      const res = await postIdToken(server, studentToken, again.state, again.cookie);
      expect(res.status).toBe(303);
    } finally {
      await setUrls(server, tool.app.id, { locationsUrl: null });
      await picker.close();
    }
  });

  it('with lti_storage_target: the login stores the state in the platform frame, and a launch without the cookie asks it back', async () => {
    const contextId = 'course-storage';
    const placed = await placeLocation(server, {
      app: tool.app.id,
      organization: { issuer: canvas.issuer, client: canvas.clientId, deployment: canvas.deploymentId, title: 'x' },
      course: { externalId: contextId },
    });
    const params = new URLSearchParams({ iss: canvas.issuer, client_id: canvas.clientId, login_hint: 'h', target_link_uri: `${server.url}/lti/launch`, lti_storage_target: 'post_message_forwarding' });
    const page = await fetch(`${server.url}/lti/login?${params.toString()}`, { redirect: 'manual' });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("subject: 'lti.put_data'");
    const auth = new URL(JSON.parse(/var auth = ("[^"]+")/.exec(html)?.[1] ?? '""') as string);
    const state = auth.searchParams.get('state') ?? '';
    const nonce = auth.searchParams.get('nonce') ?? '';
    const idToken = await canvas.idToken(canvas.resourceLinkClaims({ nonce, sub: 'storage-user', roles: [ROLES.learner], contextId, custom: { tis_placement: placed.placement.resourceLink } }));
    // No cookie (a browser that blocks third-party cookies): the page asks the platform frame.
    const ask = await postIdToken(server, idToken, state, null);
    expect(ask.status).toBe(200);
    expect(await ask.text()).toContain("subject: 'lti.get_data'");
    // The page posts again with what the frame answered.
    const wrong = await fetch(`${server.url}/lti/launch`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ id_token: idToken, state, lti_storage_value: 'not-the-state' }).toString(),
    });
    await expectRefusalPage(wrong, 400, idToken);
  });
});

describe('refusals: a 4xx page, a log line, and no tool request', () => {
  let placedLink: string;
  const contextId = 'course-negative';

  beforeAll(async () => {
    const placed = await placeLocation(server, {
      app: tool.app.id,
      organization: { issuer: canvas.issuer, client: canvas.clientId, deployment: canvas.deploymentId, title: 'x' },
      course: { externalId: contextId },
    });
    placedLink = placed.placement.resourceLink;
  });

  async function attempt(
    mutate: (claims: Record<string, unknown>) => void,
    options: { kid?: string; foreignKey?: boolean; cookie?: boolean; tamper?: boolean } = {},
  ): Promise<{ res: Response; idToken: string }> {
    const before = toolServer.requests.length;
    const started = await login(server, canvas);
    const claims = canvas.resourceLinkClaims({ nonce: started.nonce, sub: 'neg-user', roles: [ROLES.learner], contextId, custom: { tis_placement: placedLink } });
    mutate(claims);
    let idToken = await canvas.idToken(claims, { ...(options.kid ? { kid: options.kid } : {}), ...(options.foreignKey ? { foreignKey: true } : {}) });
    if (options.tamper) {
      const [h, p, s] = idToken.split('.');
      const payload = JSON.parse(Buffer.from(p ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
      payload['sub'] = 'someone-else';
      idToken = `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}`;
    }
    const res = await postIdToken(server, idToken, started.state, options.cookie === false ? null : started.cookie);
    expect(toolServer.requests.length).toBe(before);
    return { res, idToken };
  }

  it('wrong aud', async () => {
    const { res, idToken } = await attempt((c) => {
      c['aud'] = 'another-client';
    });
    await expectRefusalPage(res, 401, idToken);
    expect(lastRefusal(server)?.['code']).toBe('bad_aud');
  });

  it('expired token', async () => {
    const { res, idToken } = await attempt((c) => {
      c['exp'] = Math.floor(Date.now() / 1000) - 30;
      c['iat'] = Math.floor(Date.now() / 1000) - 90;
    });
    await expectRefusalPage(res, 401, idToken);
    expect(lastRefusal(server)?.['code']).toBe('expired');
  });

  it('replayed id_token and nonce', async () => {
    const started = await login(server, canvas);
    const idToken = await canvas.idToken(canvas.resourceLinkClaims({ nonce: started.nonce, sub: 'neg-user', roles: [ROLES.learner], contextId, custom: { tis_placement: placedLink } }));
    const first = await postIdToken(server, idToken, started.state, started.cookie);
    expect(first.status).toBe(303);
    await first.text();
    const before = toolServer.requests.length;
    await expectRefusalPage(await postIdToken(server, idToken, started.state, started.cookie), 400, idToken);
    expect(lastRefusal(server)?.['code']).toBe('unknown_state');
    const again = await login(server, canvas);
    await expectRefusalPage(await postIdToken(server, idToken, again.state, again.cookie), 401, idToken);
    expect(lastRefusal(server)?.['code']).toBe('nonce_mismatch');
    expect(toolServer.requests.length).toBe(before);
  });

  it('unknown kid after one refetch of the JWKS', async () => {
    const fetchesBefore = canvas.to('/api/lti/security/jwks').length;
    const { res, idToken } = await attempt(() => undefined, { kid: 'rotated-away' });
    await expectRefusalPage(res, 401, idToken);
    expect(lastRefusal(server)?.['code']).toBe('unknown_kid');
    expect(canvas.to('/api/lti/security/jwks').length - fetchesBefore).toBeLessThanOrEqual(1);
  });

  it('unknown kids in a row: the JWKS is refetched once, not once per launch', async () => {
    const fetchesBefore = canvas.to('/api/lti/security/jwks').length;
    for (const kid of ['rotated-away-2', 'rotated-away-3']) {
      const { res, idToken } = await attempt(() => undefined, { kid });
      await expectRefusalPage(res, 401, idToken);
      expect(lastRefusal(server)?.['code']).toBe('unknown_kid');
    }
    expect(canvas.to('/api/lti/security/jwks').length - fetchesBefore).toBeLessThanOrEqual(1);
  });

  it('an iss other than the registration\'s', async () => {
    const { res, idToken } = await attempt((c) => {
      c['iss'] = 'https://canvas.beta.instructure.com';
    });
    await expectRefusalPage(res, 401, idToken);
    expect(lastRefusal(server)?.['code']).toBe('bad_iss');
  });

  it('several audiences with an azp that is not the client', async () => {
    const { res, idToken } = await attempt((c) => {
      c['aud'] = [canvas.clientId, 'another-tool'];
      c['azp'] = 'another-tool';
    });
    await expectRefusalPage(res, 401, idToken);
    expect(lastRefusal(server)?.['code']).toBe('bad_azp');
  });

  it('iat more than the allowed skew in the future', async () => {
    const { res, idToken } = await attempt((c) => {
      c['iat'] = Math.floor(Date.now() / 1000) + 60;
      c['exp'] = Math.floor(Date.now() / 1000) + 120;
    });
    await expectRefusalPage(res, 401, idToken);
    expect(lastRefusal(server)?.['code']).toMatch(/^(iat_in_future|bad_iat)$/);
  });

  it('tampered signature', async () => {
    const { res, idToken } = await attempt(() => undefined, { tamper: true });
    await expectRefusalPage(res, 401, idToken);
    expect(lastRefusal(server)?.['code']).toBe('bad_signature');
  });

  it('signed by another key under the known kid', async () => {
    const { res, idToken } = await attempt(() => undefined, { foreignKey: true });
    await expectRefusalPage(res, 401, idToken);
    expect(lastRefusal(server)?.['code']).toBe('bad_signature');
  });

  it('wrong message type', async () => {
    const { res } = await attempt((c) => {
      c['https://purl.imsglobal.org/spec/lti/claim/message_type'] = 'LtiSubmissionReviewRequest';
    });
    await expectRefusalPage(res, 400);
    expect(lastRefusal(server)?.['code']).toBe('bad_message_type');
  });

  it('missing deployment_id', async () => {
    const { res } = await attempt((c) => {
      delete c['https://purl.imsglobal.org/spec/lti/claim/deployment_id'];
    });
    await expectRefusalPage(res, 400);
    expect(lastRefusal(server)?.['code']).toBe('no_deployment');
  });

  it('wrong version', async () => {
    const { res } = await attempt((c) => {
      c['https://purl.imsglobal.org/spec/lti/claim/version'] = '1.1';
    });
    await expectRefusalPage(res, 400);
    expect(lastRefusal(server)?.['code']).toBe('bad_version');
  });

  it('target_link_uri claim pointing at another origin, or missing', async () => {
    for (const target of ['https://evil.example/lti/launch', undefined]) {
      const { res, idToken } = await attempt((c) => {
        if (target === undefined) delete c['https://purl.imsglobal.org/spec/lti/claim/target_link_uri'];
        else c['https://purl.imsglobal.org/spec/lti/claim/target_link_uri'] = target;
      });
      await expectRefusalPage(res, 400, idToken);
      expect(lastRefusal(server)).toMatchObject({ code: 'foreign_target', reason: expect.stringMatching(/target_link_uri/) });
    }
  });

  it('a deployment_id other than the one the login named', async () => {
    const { res, idToken } = await attempt((c) => {
      c['https://purl.imsglobal.org/spec/lti/claim/deployment_id'] = '77:another-school';
    });
    await expectRefusalPage(res, 400, idToken);
    expect(lastRefusal(server)?.['code']).toBe('deployment_mismatch');
    expect(await server.services.store.organizations.find(canvas.issuer, canvas.clientId, '77:another-school')).toBeNull();
  });

  it('missing state cookie', async () => {
    const { res } = await attempt(() => undefined, { cookie: false });
    await expectRefusalPage(res, 400);
    expect(lastRefusal(server)?.['code']).toBe('state_not_bound');
  });

  it('unknown issuer, and an unknown client with an unknown deployment, at login', async () => {
    const before = toolServer.requests.length;
    const unknownIssuer = await login(server, canvas, { iss: 'https://unknown-lms.example' });
    expect(unknownIssuer.status).toBe(400);
    expect(lastRefusal(server)?.['code']).toBe('unknown_registration');
    const unknownClient = await login(server, canvas, { client_id: '999999', lti_deployment_id: '1:nowhere' });
    expect(unknownClient.status).toBe(400);
    expect(lastRefusal(server)?.['code']).toBe('unknown_registration');
    // Missing deployment on an unknown client: the login helper's deployment is dropped.
    const params = new URLSearchParams({ iss: canvas.issuer, login_hint: 'h', target_link_uri: `${server.url}/lti/launch`, client_id: '999998' });
    const noDeployment = await fetch(`${server.url}/lti/login?${params.toString()}`, { redirect: 'manual' });
    await expectRefusalPage(noDeployment, 400);
    expect(noDeployment.headers.get('location')).toBeNull();
    expect(lastRefusal(server)?.['code']).toBe('unknown_registration');
    const foreignTarget = await login(server, canvas, { target_link_uri: 'https://evil.example/lti/launch' });
    expect(foreignTarget.status).toBe(400);
    expect(lastRefusal(server)?.['code']).toBe('foreign_target');
    const emptyDeployment = await login(server, canvas, { lti_deployment_id: '' });
    expect(emptyDeployment.status).toBe(400);
    expect(lastRefusal(server)?.['code']).toBe('bad_deployment');
    for (const refused of [unknownIssuer, unknownClient, foreignTarget, emptyDeployment]) expect(refused.location).toBe('');
    expect(toolServer.requests.length).toBe(before);
  });

  it('a draft tool\'s placement: the launch page refuses with the report ID and the tool gets nothing', async () => {
    const draft = await createTool(server, { name: 'Draft Tool', status: 'draft' });
    await setUrls(server, draft.app.id, { callbackUrl: toolServer.url('/launch') });
    const placed = await placeLocation(server, {
      app: draft.app.id,
      organization: { issuer: canvas.issuer, client: canvas.clientId, deployment: canvas.deploymentId, title: 'x' },
      course: { externalId: 'course-draft' },
    });
    const before = toolServer.requests.length;
    const started = await login(server, canvas);
    const idToken = await canvas.idToken(
      canvas.resourceLinkClaims({ nonce: started.nonce, sub: 'neg-user', roles: [ROLES.learner], contextId: 'course-draft', custom: { tis_placement: placed.placement.resourceLink } }),
    );
    const res = await postIdToken(server, idToken, started.state, started.cookie);
    expect(res.status).toBe(303);
    const page = await fetch(res.headers.get('location') ?? '');
    expect(page.status).toBe(403);
    expect(await page.text()).toContain('Report ID');
    expect(toolServer.requests.length).toBe(before);
  });
});

describe('configuration documents', () => {
  it('serves the Canvas developer-key JSON', async () => {
    const res = await fetch(`${server.url}/lti/canvas.json`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      oidc_initiation_url: `${server.url}/lti/login`,
      target_link_uri: `${server.url}/lti/launch`,
      public_jwk_url: `${server.url}/.well-known/jwks.json`,
    });
  });

  it('answers 405 with Allow for another method', async () => {
    const res = await fetch(`${server.url}/lti/launch`);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });
});
