/**
 * The reference LMS as an LTI 1.3 platform, over real HTTP on loopback, with a test playing the tool
 * (tests/lms/tool.ts): Dynamic Registration, the OIDC launch and its id_token, the token endpoint, AGS,
 * Deep Linking, and each control a test or a person needs.
 */
import { randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReferenceLms } from '../../lms/app.ts';
import type { RunningLms } from '../../lms/app.ts';
import { lmsStoreFor, LMS_DIALECTS } from './stores.ts';
import { AGS_CLAIM, ALL_SCOPES, DL, LmsWorld, LTI, registerThroughDynamicRegistration, SCOPES, TestTool } from './tool.ts';

const SCORE_TYPE = 'application/vnd.ims.lis.v1.score+json';

function score(userId: string, timestamp: string, given = 7): Record<string, unknown> {
  return { userId, scoreGiven: given, scoreMaximum: 10, activityProgress: 'Completed', gradingProgress: 'FullyGraded', timestamp };
}

/** The scores URL of a line item: `/scores` inserted into the path, its query kept (AGS §3.4). */
function scoresUrl(lineItemUrl: string): string {
  const url = new URL(lineItemUrl);
  url.pathname = `${url.pathname}/scores`;
  return url.toString();
}

async function postScore(bearer: string, lineItemUrl: string, body: unknown): Promise<Response> {
  return fetch(scoresUrl(lineItemUrl), { method: 'POST', headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': SCORE_TYPE }, body: JSON.stringify(body) });
}

// Every suite on each dialect of the LMS's store; on PostgreSQL the LMSes of one profile share a schema.
describe.each(LMS_DIALECTS)('on %s', (dialect) => {
  const store = lmsStoreFor(dialect);
  beforeAll(() => store.open());
  afterAll(() => store.drop());

  describe('reference LMS: discovery and Dynamic Registration', () => {
    let lms: RunningLms;
    let tool: TestTool;
    beforeAll(async () => {
      lms = await startReferenceLms({ store: store.location() });
      tool = await TestTool.start();
    });
    afterAll(async () => {
      await lms.stop();
      await tool.stop();
    });

    it('publishes its OpenID configuration and a JWKS with kid, RS256 keys of its own', async () => {
      const config = (await (await fetch(`${lms.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
      expect(config['issuer']).toBe(lms.issuer);
      expect(config['registration_endpoint']).toBe(`${lms.issuer}/register`);
      expect(config['scopes_supported']).toEqual(expect.arrayContaining(['openid', ...ALL_SCOPES]));
      const platformConfig = config['https://purl.imsglobal.org/spec/lti-platform-configuration'] as Record<string, unknown>;
      expect(platformConfig['product_family_code']).toBe('tis-reference-lms');
      expect(platformConfig['variables']).toContain('Context.id.history');
      const jwks = (await (await fetch(config['jwks_uri'] as string)).json()) as { keys: Record<string, unknown>[] };
      expect(jwks.keys).toHaveLength(1);
      expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.any(String) });
      expect(jwks.keys[0]).not.toHaveProperty('d');
    });

    it('initiates a registration with openid_configuration and a registration_token, and answers client_id and deployment', async () => {
      const res = await fetch(`${lms.url}/controls/registrations/initiate`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${lms.controlToken}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ tool_url: `${tool.url}/lti/register` }),
      });
      expect(res.status).toBe(201);
      const initiated = (await res.json()) as { url: string; registration_token: string; page_url: string };
      const opened = new URL(initiated.url);
      expect(opened.origin + opened.pathname).toBe(`${tool.url}/lti/register`);
      expect(opened.searchParams.get('openid_configuration')).toBe(`${lms.issuer}/.well-known/openid-configuration`);
      expect(opened.searchParams.get('registration_token')).toBe(initiated.registration_token);
      const page = await fetch(initiated.page_url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('org.imsglobal.lti.close');

      const post = (token: string | null, body: unknown): Promise<Response> =>
        fetch(`${lms.issuer}/register`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
          body: JSON.stringify(body),
        });
      expect((await post(null, tool.registration())).status).toBe(401);
      expect((await post('not-a-token', tool.registration())).status).toBe(401);
      const bad = await post(initiated.registration_token, { ...tool.registration(), grant_types: ['implicit'] });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ error: 'invalid_client_metadata' });

      const ok = await post(initiated.registration_token, tool.registration());
      expect(ok.status).toBe(200);
      const answer = (await ok.json()) as Record<string, unknown>;
      expect(answer['client_id']).toEqual(expect.any(String));
      const toolConfig = answer['https://purl.imsglobal.org/spec/lti-tool-configuration'] as Record<string, unknown>;
      expect(toolConfig['deployment_id']).toEqual(expect.any(String));
      expect(answer['scope']).toBe(ALL_SCOPES.join(' '));
      // A registration token registers once.
      const again = await post(initiated.registration_token, tool.registration());
      expect(again.status).toBe(401);
      expect(await again.json()).toMatchObject({ error: 'invalid_token' });
    });

    it('refuses every control without its control token', async () => {
      expect((await fetch(`${lms.url}/controls/registrations`)).status).toBe(401);
      expect((await fetch(`${lms.url}/controls/registrations`, { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401);
    });
  });

  describe('reference LMS: launches', () => {
    let w: LmsWorld;
    beforeAll(async () => {
      w = await LmsWorld.start('reference', undefined, store.location());
    });
    afterAll(() => w.stop());

    it('sends the browser to the tool login, then form_posts a signed id_token with the LTI claims', async () => {
      const c = await w.course({ roles: ['instructor'] });
      const url = await w.launchUrl(c.linkId, c.sub);
      const trip = await w.loginRoundTrip(url);
      expect(trip.login.origin + trip.login.pathname).toBe(`${w.tool.url}/lti/login`);
      expect(trip.login.searchParams.get('iss')).toBe(w.lms.issuer);
      expect(trip.login.searchParams.get('login_hint')).toBe(c.sub);
      expect(trip.login.searchParams.get('client_id')).toBe(w.reg.clientId);
      expect(trip.login.searchParams.get('lti_deployment_id')).toBe(w.reg.deploymentId);
      expect(trip.login.searchParams.get('target_link_uri')).toBe(`${w.tool.url}/lti/launch`);
      expect(trip.status).toBe(200);
      expect(trip.form.action).toBe(`${w.tool.url}/lti/launch`);
      expect(trip.form.fields['state']).toBe(trip.state);

      const claims = await w.launchClaims(await w.launchUrl(c.linkId, c.sub));
      expect(claims).toMatchObject({
        iss: w.lms.issuer,
        aud: w.reg.clientId,
        azp: w.reg.clientId,
        sub: c.sub,
        given_name: 'Ada',
        [`${LTI}message_type`]: 'LtiResourceLinkRequest',
        [`${LTI}version`]: '1.3.0',
        [`${LTI}deployment_id`]: w.reg.deploymentId,
        [`${LTI}target_link_uri`]: `${w.tool.url}/lti/launch`,
        [`${LTI}resource_link`]: { id: c.linkId, title: 'Week 1 quiz' },
        [`${LTI}context`]: { id: c.courseId, title: 'Biology 101', label: 'BIO-101-2026F' },
        [`${LTI}roles`]: ['http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor'],
        [`${LTI}custom`]: { quiz: 'week-1', context_history: '' },
      });
      expect(decodeJwt(trip.form.fields['id_token'] ?? '')).toBeTruthy();
      expect(claims[AGS_CLAIM]).toEqual({ scope: ALL_SCOPES, lineitems: expect.stringContaining(`/ags/courses/`), lineitem: c.lineItemUrl });
      expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(300);
    });

    it('makes a launch once: a replayed authentication request is answered with an OIDC error, not a token', async () => {
      const c = await w.course();
      const url = await w.launchUrl(c.linkId, c.sub);
      const first = await w.loginRoundTrip(url);
      expect(first.form.fields['id_token']).toBeTruthy();
      const start = await fetch(url, { redirect: 'manual' });
      expect(start.status).toBe(404);
    });

    it('answers OIDC errors to the redirect URI, and an error page for an unregistered client or redirect URI', async () => {
      const c = await w.course();
      const wrongHint = await w.loginRoundTrip(await w.launchUrl(c.linkId, c.sub), (auth) => auth.searchParams.set('login_hint', 'someone-else'));
      expect(wrongHint.form.fields).toMatchObject({ error: 'login_required', state: wrongHint.state });
      expect(wrongHint.form.fields['id_token']).toBeUndefined();
      const noNonce = await w.loginRoundTrip(await w.launchUrl(c.linkId, c.sub), (auth) => auth.searchParams.delete('nonce'));
      expect(noNonce.form.fields).toMatchObject({ error: 'invalid_request' });
      const implicitMode = await w.loginRoundTrip(await w.launchUrl(c.linkId, c.sub), (auth) => auth.searchParams.set('response_mode', 'fragment'));
      expect(implicitMode.form.fields).toMatchObject({ error: 'invalid_request' });
      const badRedirect = await w.loginRoundTrip(await w.launchUrl(c.linkId, c.sub), (auth) => auth.searchParams.set('redirect_uri', 'https://evil.example/launch'));
      expect(badRedirect.status).toBe(400);
      expect(badRedirect.form.fields['id_token']).toBeUndefined();
      const badClient = await w.loginRoundTrip(await w.launchUrl(c.linkId, c.sub), (auth) => auth.searchParams.set('client_id', 'nobody'));
      expect(badClient.status).toBe(400);
    });

    it('issues launches only for enrolled people, so a user enrolled in one course only cannot launch another', async () => {
      const one = await w.course();
      const other = await w.course();
      const res = await w.control('POST', '/launches', { resource_link_id: other.linkId, sub: one.sub });
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ error: 'not_enrolled' });
    });

    it('carries a rename and a re-term in the next launch', async () => {
      const c = await w.course();
      await w.controlJson('PATCH', `/courses/${c.courseId}`, { title: 'Biology 101 (renamed)', label: 'BIO-101-2027S' });
      const claims = await w.launchClaims(await w.launchUrl(c.linkId, c.sub));
      expect(claims[`${LTI}context`]).toMatchObject({ title: 'Biology 101 (renamed)', label: 'BIO-101-2027S' });
    });

    it('keeps a course without a label (LTI makes it optional): its launches carry no context label', async () => {
      const c = await w.course();
      await w.controlJson('PATCH', `/courses/${c.courseId}`, { label: '' });
      const claims = await w.launchClaims(await w.launchUrl(c.linkId, c.sub));
      expect(claims[`${LTI}context`]).not.toHaveProperty('label');
      expect(claims[`${LTI}context`]).toHaveProperty('title');
    });

    it('copies a course with its links and columns, and its launches carry Context.id.history', async () => {
      const c = await w.course();
      const copy = await w.controlJson<{ id: string; history: string[]; resource_links: { id: string; line_items: { id: string }[] }[] }>('POST', `/courses/${c.courseId}/copies`, { label: 'BIO-101-2027S', with_enrolments: true });
      expect(copy.history).toEqual([c.courseId]);
      const copyOfCopy = await w.controlJson<{ id: string; history: string[]; resource_links: { id: string }[] }>('POST', `/courses/${copy.id}/copies`, { with_enrolments: true });
      expect(copyOfCopy.history).toEqual([copy.id, c.courseId]);
      const link = copyOfCopy.resource_links[0];
      expect(link?.id).not.toBe(c.linkId);
      const claims = await w.launchClaims(await w.launchUrl(link?.id ?? '', c.sub));
      expect(claims[`${LTI}custom`]).toMatchObject({ context_history: `${copy.id},${c.courseId}`, canvas_previous_context_ids: '$Canvas.course.previousContextIds' });
      expect((claims[AGS_CLAIM] as { lineitem: string }).lineitem).not.toBe(c.lineItemUrl);
    });

    it('puts the same person in a second school: another deployment of the registration, the same sub', async () => {
      const c = await w.course();
      const second = await w.controlJson<{ deployment_id: string }>('POST', '/deployments', { client_id: w.reg.clientId, title: 'Second school' });
      expect(second.deployment_id).not.toBe(w.reg.deploymentId);
      const course = await w.controlJson<{ id: string }>('POST', '/courses', { deployment_id: second.deployment_id, title: 'Chemistry', label: 'CHEM-1' });
      await w.controlJson('PUT', `/courses/${course.id}/enrolments/${c.sub}`, { roles: ['student'] }, [204]);
      const link = await w.controlJson<{ id: string }>('POST', `/courses/${course.id}/links`, { title: 'Lab', line_item: null });
      const claims = await w.launchClaims(await w.launchUrl(link.id, c.sub));
      expect(claims.sub).toBe(c.sub);
      expect(claims[`${LTI}deployment_id`]).toBe(second.deployment_id);
    });

    it('takes IDs an administrator chooses for deployments and courses, refuses one taken, and clears a course’s scores', async () => {
      const d = await w.controlJson<{ deployment_id: string }>('POST', '/deployments', { client_id: w.reg.clientId, title: 'Imported', deployment_id: 'sis-school-7' });
      expect(d.deployment_id).toBe('sis-school-7');
      expect((await w.control('POST', '/deployments', { client_id: w.reg.clientId, deployment_id: 'sis-school-7' })).status).toBe(409);
      const course = await w.controlJson<{ id: string }>('POST', '/courses', { id: 'sis-course-1', deployment_id: 'sis-school-7', title: 'Imported', label: 'IMP' });
      expect(course.id).toBe('sis-course-1');
      expect((await w.control('POST', '/courses', { id: 'sis-course-1', deployment_id: 'sis-school-7', title: 'Again', label: 'IMP' })).status).toBe(409);
      const copy = await w.controlJson<{ id: string; history: string[] }>('POST', '/courses/sis-course-1/copies', { id: 'sis-course-1-copy' });
      expect(copy).toMatchObject({ id: 'sis-course-1-copy', history: ['sis-course-1'] });

      const c = await w.course();
      const bearer = await w.bearer();
      expect((await postScore(bearer, c.lineItemUrl ?? '', score(c.sub, new Date().toISOString()))).status).toBe(204);
      expect((await w.control('DELETE', `/courses/${c.courseId}/scores`)).status).toBe(204);
      const book = await w.controlJson<{ columns: { scores: unknown[] }[] }>('GET', `/courses/${c.courseId}/gradebook`);
      expect(book.columns).toHaveLength(1);
      expect(book.columns[0]?.scores).toEqual([]);
    });

    it('launches an assessment placement with no gradebook column without a lineitem in its AGS claim', async () => {
      const c = await w.course({ lineItem: false });
      const claims = await w.launchClaims(await w.launchUrl(c.linkId, c.sub));
      expect(claims[AGS_CLAIM]).toEqual({ scope: ALL_SCOPES, lineitems: expect.any(String) });
    });

    it('shortens id_token lifetimes on request', async () => {
      await w.controlJson('PATCH', '/settings', { id_token_ttl_seconds: 5 });
      try {
        const c = await w.course();
        const claims = await w.launchClaims(await w.launchUrl(c.linkId, c.sub));
        expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(5);
      } finally {
        await w.controlJson('DELETE', '/settings');
      }
    });
  });

  describe('reference LMS: token endpoint and AGS', () => {
    let w: LmsWorld;
    beforeAll(async () => {
      w = await LmsWorld.start('reference', undefined, store.location());
    });
    afterAll(() => w.stop());

    it('grants client_credentials against the tool JWKS, refuses a reused jti, a wrong aud and an unknown key', async () => {
      const ok = await w.accessToken([SCOPES.score, SCOPES.lineItem]);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: `${SCOPES.score} ${SCOPES.lineItem}` });
      const tokenUrl = `${w.lms.issuer}/token`;
      const form = (assertion: string): RequestInit => ({
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion, scope: SCOPES.score }),
      });
      const assertion = await w.tool.assertion(w.reg.clientId, tokenUrl);
      expect((await fetch(tokenUrl, form(assertion))).status).toBe(200);
      const replay = await fetch(tokenUrl, form(assertion));
      expect(replay.status).toBe(401);
      expect(await replay.json()).toMatchObject({ error: 'invalid_client', error_description: 'client assertion jti was used before' });
      const wrongAud = await fetch(tokenUrl, form(await w.tool.assertion(w.reg.clientId, `${tokenUrl}/`)));
      expect(await wrongAud.json()).toMatchObject({ error: 'invalid_client', error_description: `client assertion aud must be ${tokenUrl}` });
      const unknownKid = await fetch(tokenUrl, form(await w.tool.sign({ iss: w.reg.clientId, sub: w.reg.clientId, aud: tokenUrl, iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 60, jti: randomBytes(6).toString('hex') }, 'other-kid')));
      expect(unknownKid.status).toBe(401);
      const unknownClient = await fetch(tokenUrl, form(await w.tool.assertion('nobody', tokenUrl)));
      expect(await unknownClient.json()).toMatchObject({ error: 'invalid_client' });
    });

    it('withholds the line-item scopes from a developer key without them, and keeps the score scope', async () => {
      await w.controlJson('PATCH', `/registrations/${w.reg.clientId}`, { grants_line_item_scope: false });
      try {
        const refused = await w.accessToken([SCOPES.lineItem]);
        expect(refused.status).toBe(400);
        expect(await refused.json()).toMatchObject({ error: 'invalid_scope' });
        expect((await w.accessToken([SCOPES.score])).status).toBe(200);
        const c = await w.course();
        const claims = await w.launchClaims(await w.launchUrl(c.linkId, c.sub));
        expect((claims[AGS_CLAIM] as { scope: string[] }).scope).toEqual([SCOPES.score]);
      } finally {
        await w.controlJson('PATCH', `/registrations/${w.reg.clientId}`, { grants_line_item_scope: true });
      }
    });

    it('applies a score, refuses an older or equal one with 409, and keeps the newest', async () => {
      const c = await w.course();
      const bearer = await w.bearer();
      const lineItem = c.lineItemUrl ?? '';
      expect((await postScore(bearer, lineItem, score(c.sub, '2026-11-25T10:00:00.000002Z', 8))).status).toBe(204);
      expect((await postScore(bearer, lineItem, score(c.sub, '2026-11-25T10:00:00.000001Z', 3))).status).toBe(409);
      expect((await postScore(bearer, lineItem, score(c.sub, '2026-11-25T10:00:00.000002Z', 3))).status).toBe(409);
      const book = await w.controlJson<{ columns: { scores: { userId: string; scoreGiven: number }[] }[] }>('GET', `/courses/${c.courseId}/gradebook`);
      expect(book.columns[0]?.scores).toEqual([expect.objectContaining({ userId: c.sub, scoreGiven: 8 })]);
      const results = await fetch(`${lineItem}/results`, { headers: { Authorization: `Bearer ${bearer}` } });
      expect(await results.json()).toEqual([expect.objectContaining({ userId: c.sub, resultScore: 8, resultMaximum: 10 })]);
    });

    it('is a gradebook that refuses a score when told to, with the status it was given', async () => {
      const c = await w.course();
      const book = await w.controlJson<{ columns: { line_item_id: string }[] }>('GET', `/courses/${c.courseId}/gradebook`);
      await w.controlJson('PATCH', `/line-items/${book.columns[0]?.line_item_id ?? ''}`, { refuses_scores_with: 503 });
      const bearer = await w.bearer();
      const refused = await postScore(bearer, c.lineItemUrl ?? '', score(c.sub, new Date().toISOString()));
      expect(refused.status).toBe(503);
      expect(await refused.json()).toMatchObject({ error: 'score_refused' });
      await w.controlJson('PATCH', `/line-items/${book.columns[0]?.line_item_id ?? ''}`, { refuses_scores_with: null });
      expect((await postScore(bearer, c.lineItemUrl ?? '', score(c.sub, new Date().toISOString()))).status).toBe(204);
    });

    it('refuses a score for someone not enrolled, a token without the score scope, an expired token, and another client’s course', async () => {
      const c = await w.course();
      const bearer = await w.bearer();
      expect((await postScore(bearer, c.lineItemUrl ?? '', score('stranger', new Date().toISOString()))).status).toBe(422);
      const readOnly = await w.bearer([SCOPES.lineItemReadonly]);
      expect((await postScore(readOnly, c.lineItemUrl ?? '', score(c.sub, new Date().toISOString()))).status).toBe(403);
      expect((await postScore('nonsense', c.lineItemUrl ?? '', score(c.sub, new Date().toISOString()))).status).toBe(401);

      await w.controlJson('PATCH', '/settings', { access_token_ttl_seconds: 1 });
      try {
        const res = await w.accessToken([SCOPES.score]);
        const short = (await res.json()) as { access_token: string; expires_in: number };
        expect(short.expires_in).toBe(1);
        await new Promise((resolve) => setTimeout(resolve, 1100));
        const expired = await postScore(short.access_token, c.lineItemUrl ?? '', score(c.sub, new Date().toISOString()));
        expect(expired.status).toBe(401);
        expect(expired.headers.get('www-authenticate')).toContain('invalid_token');
      } finally {
        await w.controlJson('DELETE', '/settings');
      }

      // The same LMS, another tool: it may not grade this course.
      const otherTool = await TestTool.start();
      try {
        const reg = await registerThroughDynamicRegistration(w.lms, otherTool, ALL_SCOPES.join(' '));
        const tokenUrl = `${w.lms.issuer}/token`;
        const res = await fetch(tokenUrl, {
          method: 'POST',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await otherTool.assertion(reg.clientId, tokenUrl), scope: SCOPES.score }),
        });
        const other = (await res.json()) as { access_token: string };
        expect((await postScore(other.access_token, c.lineItemUrl ?? '', score(c.sub, new Date().toISOString()))).status).toBe(404);
      } finally {
        await otherTool.stop();
      }
    });

    it('lists, creates, reads, replaces and deletes line items with the line-item scope', async () => {
      const c = await w.course();
      const bearer = await w.bearer();
      const claims = await w.launchClaims(await w.launchUrl(c.linkId, c.sub));
      const container = (claims[AGS_CLAIM] as { lineitems: string }).lineitems;
      const headers = { Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/vnd.ims.lis.v2.lineitem+json' };
      const made = await fetch(container, { method: 'POST', headers, body: JSON.stringify({ label: 'Essay', scoreMaximum: 20, tag: 'essay', resourceLinkId: c.linkId }) });
      expect(made.status).toBe(201);
      const item = (await made.json()) as { id: string };
      const listed = (await (await fetch(`${container}?tag=essay`, { headers })).json()) as { id: string }[];
      expect(listed.map((i) => i.id)).toEqual([item.id]);
      const put = await fetch(item.id, { method: 'PUT', headers, body: JSON.stringify({ label: 'Essay (long)', scoreMaximum: 30 }) });
      expect(await put.json()).toMatchObject({ label: 'Essay (long)', scoreMaximum: 30, resourceLinkId: c.linkId });
      expect((await fetch(item.id, { method: 'DELETE', headers })).status).toBe(204);
      expect((await fetch(item.id, { headers })).status).toBe(404);
      const bad = await fetch(container, { method: 'POST', headers, body: JSON.stringify({ label: 'x', scoreMaximum: -1 }) });
      expect(bad.status).toBe(422);
      // U+0000 is refused alike on both stores (PostgreSQL's text cannot hold it), in bodies and in URLs.
      const nul = await fetch(container, { method: 'POST', headers, body: JSON.stringify({ label: 'Essay\u0000', scoreMaximum: 20 }) });
      expect(nul.status).toBe(400);
      expect(await nul.json()).toMatchObject({ error: 'invalid_request', error_description: 'text may not contain the character U+0000' });
      expect((await fetch(`${container}?tag=%00`, { headers })).status).toBe(400);
      expect((await fetch(`${container}/%00`, { headers })).status).toBe(400);
    });
  });

  describe("reference LMS: a school's own token lifetimes and line-item scope (LTI-71, LTI-72)", () => {
    let w: LmsWorld;
    let offsetMs = 0;
    const clock = { nowMs: () => Date.now() + offsetMs };
    beforeAll(async () => {
      w = await LmsWorld.start('reference', undefined, store.location(), clock);
    });
    afterAll(() => w.stop());

    it('keeps each setting per deployment: its own value, or null for the LMS-wide one', async () => {
      const school = await w.controlJson<{ deployment_id: string }>('POST', '/deployments', { client_id: w.reg.clientId, title: 'Own settings' });
      const path = `/deployments/${school.deployment_id}/settings`;
      expect(await w.controlJson('GET', path)).toEqual({
        deployment_id: school.deployment_id,
        client_id: w.reg.clientId,
        own: { access_token_ttl_seconds: null, id_token_ttl_seconds: null, launch_ttl_seconds: null, grants_line_item_scope: null },
        effective: { access_token_ttl_seconds: 3600, id_token_ttl_seconds: 300, launch_ttl_seconds: 300, grants_line_item_scope: true },
      });
      const set = await w.controlJson<{ own: Record<string, unknown>; effective: Record<string, unknown> }>('PATCH', path, { id_token_ttl_seconds: 7, grants_line_item_scope: false });
      expect(set.own).toMatchObject({ id_token_ttl_seconds: 7, grants_line_item_scope: false, launch_ttl_seconds: null });
      // Two fields changed at once by two administrators: neither is lost.
      await Promise.all([w.controlJson('PATCH', path, { launch_ttl_seconds: 60 }), w.controlJson('PATCH', path, { access_token_ttl_seconds: 90 })]);
      const both = await w.controlJson<{ own: Record<string, unknown> }>('GET', path);
      expect(both.own).toEqual({ access_token_ttl_seconds: 90, id_token_ttl_seconds: 7, launch_ttl_seconds: 60, grants_line_item_scope: false });
      const back = await w.controlJson<{ own: Record<string, unknown>; effective: Record<string, unknown> }>('PATCH', path, { id_token_ttl_seconds: null });
      expect(back.effective).toMatchObject({ id_token_ttl_seconds: 300, launch_ttl_seconds: 60 });
      for (const bad of [{ id_token_ttl_seconds: 0 }, { launch_ttl_seconds: 'soon' }, { grants_line_item_scope: 'no' }, { color: 'red' }]) {
        const refused = await w.control('PATCH', path, bad);
        expect(refused.status).toBe(400);
        expect(await refused.json()).toMatchObject({ error: 'invalid_request' });
      }
      expect((await w.control('GET', '/deployments/nowhere/settings')).status).toBe(404);
      const reset = await w.controlJson<{ own: Record<string, unknown> }>('DELETE', path);
      expect(Object.values(reset.own)).toEqual([null, null, null, null]);
    });

    it("launches in a school live that school's lifetimes and offer its scopes; another school keeps the LMS-wide ones", async () => {
      const school = await w.controlJson<{ deployment_id: string }>('POST', '/deployments', { client_id: w.reg.clientId, title: 'Short school' });
      await w.controlJson('PATCH', `/deployments/${school.deployment_id}/settings`, { id_token_ttl_seconds: 5, launch_ttl_seconds: 30, grants_line_item_scope: false });
      const there = await w.course({ deploymentId: school.deployment_id });
      const home = await w.course();
      const issued = await w.controlJson<{ url: string; expires: string }>('POST', '/launches', { resource_link_id: there.linkId, sub: there.sub });
      expect(Date.parse(issued.expires) - clock.nowMs()).toBeLessThanOrEqual(30_000);
      const claims = await w.launchClaims(issued.url);
      expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(5);
      expect((claims[AGS_CLAIM] as { scope: string[] }).scope).toEqual([SCOPES.score]);
      const homeClaims = await w.launchClaims(await w.launchUrl(home.linkId, home.sub));
      expect((homeClaims.exp ?? 0) - (homeClaims.iat ?? 0)).toBe(300);
      expect((homeClaims[AGS_CLAIM] as { scope: string[] }).scope).toEqual(ALL_SCOPES);
    });

    it("applies a school's access-token lifetime and line-item scope where the client's token is used", async () => {
      const school = await w.controlJson<{ deployment_id: string }>('POST', '/deployments', { client_id: w.reg.clientId, title: 'Strict school' });
      const there = await w.course({ deploymentId: school.deployment_id });
      const home = await w.course();
      await w.controlJson('PATCH', `/deployments/${school.deployment_id}/settings`, { access_token_ttl_seconds: 5, grants_line_item_scope: false });
      // The token request names no deployment: the client's token, with the LMS-wide lifetime.
      const answer = (await (await w.accessToken(ALL_SCOPES)).json()) as { access_token: string; expires_in: number; scope: string };
      expect(answer).toMatchObject({ expires_in: 3600, scope: ALL_SCOPES.join(' ') });
      const headers = { Authorization: `Bearer ${answer.access_token}`, Accept: 'application/vnd.ims.lis.v2.lineitem+json' };
      // The line-item scope does not count in the strict school, and does at home.
      const read = await fetch(there.lineItemUrl ?? '', { headers });
      expect(read.status).toBe(403);
      expect(await read.json()).toMatchObject({ error: 'insufficient_scope' });
      expect((await fetch(home.lineItemUrl ?? '', { headers })).status).toBe(200);
      expect((await postScore(answer.access_token, there.lineItemUrl ?? '', score(there.sub, new Date(clock.nowMs()).toISOString()))).status).toBe(204);
      offsetMs = 10_000;
      try {
        // Ten seconds on: expired in the school whose tokens live five, valid at home.
        const expired = await postScore(answer.access_token, there.lineItemUrl ?? '', score(there.sub, new Date(clock.nowMs()).toISOString()));
        expect(expired.status).toBe(401);
        expect(expired.headers.get('www-authenticate')).toContain('invalid_token');
        expect((await postScore(answer.access_token, home.lineItemUrl ?? '', score(home.sub, new Date(clock.nowMs()).toISOString()))).status).toBe(204);
      } finally {
        offsetMs = 0;
      }
    });

    it('lists courses and people a page at a time, narrowed to prefixes or IDs (LTI-74)', async () => {
      const tag = `list${randomBytes(3).toString('hex')}`;
      const made: string[] = [];
      for (let i = 0; i < 3; i += 1) made.push((await w.controlJson<{ id: string }>('POST', '/courses', { id: `${tag}-c${i}`, deployment_id: w.reg.deploymentId, title: `Course ${i}`, label: `C-${i}` })).id);
      const person = await w.controlJson<{ sub: string }>('POST', '/users', { sub: `${tag}-p`, given_name: 'Lis', family_name: 'Ter', email: 'lis@school.example' });
      await w.controlJson('PUT', `/courses/${made[1] ?? ''}/enrolments/${person.sub}`, { roles: ['student'] }, [204]);
      const first = await w.controlJson<{ courses: { id: string; title: string; deployment_id: string }[]; next: string | null }>('GET', `/courses?prefix=${tag}&limit=2`);
      expect(first.courses.map((c) => c.id)).toEqual(made.slice(0, 2));
      expect(first.courses[0]).toMatchObject({ title: 'Course 0', deployment_id: w.reg.deploymentId });
      const second = await w.controlJson<{ courses: { id: string }[]; next: string | null }>('GET', `/courses?prefix=${tag}&limit=2&after=${first.next ?? ''}`);
      expect(second).toEqual({ courses: [expect.objectContaining({ id: made[2] })], next: null });
      const exact = await w.controlJson<{ courses: { id: string }[] }>('GET', `/courses?id=${made[2] ?? ''}&prefix=${tag}-c0`);
      expect(exact.courses.map((c) => c.id)).toEqual([made[0], made[2]]);
      const people = await w.controlJson<{ users: { sub: string; enrolments: { course_id: string; roles: string[] }[] }[]; next: string | null }>('GET', `/users?prefix=${tag}`);
      expect(people).toEqual({ users: [expect.objectContaining({ sub: person.sub, given_name: 'Lis', enrolments: [{ course_id: made[1], roles: [expect.stringContaining('Learner')] }] })], next: null });
      // `_` is not a wildcard here.
      expect((await w.controlJson<{ users: unknown[] }>('GET', `/users?prefix=${tag.slice(0, 3)}_`)).users).toEqual([]);
      for (const bad of ['limit=0', 'limit=101', 'limit=x', 'after=nonsense']) {
        const refused = await w.control('GET', `/courses?${bad}`);
        expect(refused.status).toBe(400);
      }
    });

    it("grants a line-item scope a school grants of its own when the developer key withholds it, and counts it only there", async () => {
      await w.controlJson('PATCH', `/registrations/${w.reg.clientId}`, { grants_line_item_scope: false });
      const school = await w.controlJson<{ deployment_id: string }>('POST', '/deployments', { client_id: w.reg.clientId, title: 'Generous school' });
      try {
        expect((await w.accessToken([SCOPES.lineItem])).status).toBe(400);
        await w.controlJson('PATCH', `/deployments/${school.deployment_id}/settings`, { grants_line_item_scope: true });
        const there = await w.course({ deploymentId: school.deployment_id });
        const home = await w.course();
        const bearer = await w.bearer([SCOPES.lineItem]);
        const headers = { Authorization: `Bearer ${bearer}`, Accept: 'application/vnd.ims.lis.v2.lineitem+json' };
        expect((await fetch(there.lineItemUrl ?? '', { headers })).status).toBe(200);
        expect((await fetch(home.lineItemUrl ?? '', { headers })).status).toBe(403);
      } finally {
        await w.controlJson('DELETE', `/deployments/${school.deployment_id}/settings`);
        await w.controlJson('PATCH', `/registrations/${w.reg.clientId}`, { grants_line_item_scope: true });
      }
    });
  });

  describe('reference LMS: Deep Linking', () => {
    let w: LmsWorld;
    beforeAll(async () => {
      w = await LmsWorld.start('reference', undefined, store.location());
    });
    afterAll(() => w.stop());

    async function deepLinkingRequest(): Promise<{ claims: Record<string, unknown>; courseId: string; sub: string }> {
      const c = await w.course({ roles: ['instructor'] });
      const { url } = await w.controlJson<{ url: string }>('POST', '/deep-links', { course_id: c.courseId, sub: c.sub });
      return { claims: await w.launchClaims(url), courseId: c.courseId, sub: c.sub };
    }

    async function respond(claims: Record<string, unknown>, overrides: Record<string, unknown> = {}): Promise<Response> {
      const settings = claims[`${DL}deep_linking_settings`] as { deep_link_return_url: string; data: string };
      const now = Math.floor(Date.now() / 1000);
      const jwt = await w.tool.sign({
        iss: w.reg.clientId,
        aud: w.lms.issuer,
        iat: now,
        exp: now + 300,
        nonce: randomBytes(8).toString('hex'),
        [`${LTI}message_type`]: 'LtiDeepLinkingResponse',
        [`${LTI}version`]: '1.3.0',
        [`${LTI}deployment_id`]: claims[`${LTI}deployment_id`],
        [`${DL}data`]: settings.data,
        [`${DL}content_items`]: [
          { type: 'ltiResourceLink', title: 'Quiz 1', url: `${w.tool.url}/lti/launch`, custom: { tis_placement: 'rl_1' }, lineItem: { scoreMaximum: 5, label: 'Quiz 1', resourceId: 'plc_1', tag: 'quiz-1' } },
          { type: 'ltiResourceLink', title: 'Reading', url: `${w.tool.url}/lti/launch`, custom: { tis_placement: 'rl_2' } },
        ],
        ...overrides,
      });
      return fetch(settings.deep_link_return_url, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' }, body: new URLSearchParams({ JWT: jwt }) });
    }

    it('sends deep_linking_settings and makes resource links and line items from the signed response', async () => {
      const { claims, courseId, sub } = await deepLinkingRequest();
      expect(claims[`${LTI}message_type`]).toBe('LtiDeepLinkingRequest');
      expect(claims[`${LTI}resource_link`]).toBeUndefined();
      expect(claims[`${DL}deep_linking_settings`]).toMatchObject({ deep_link_return_url: `${w.lms.issuer}/deep-linking/return`, accept_types: ['ltiResourceLink'], accept_multiple: true, data: expect.any(String) });
      const res = await respond(claims);
      expect(res.status).toBe(200);
      const made = (await res.json()) as { resource_links: { resource_link_id: string; line_item?: { scoreMaximum: number; resourceId: string; tag: string } }[] };
      expect(made.resource_links).toHaveLength(2);
      expect(made.resource_links[0]?.line_item).toMatchObject({ scoreMaximum: 5, resourceId: 'plc_1', tag: 'quiz-1' });
      expect(made.resource_links[1]?.line_item).toBeUndefined();
      // The new link launches with the custom parameters the tool put in it.
      const launch = await w.launchClaims(await w.launchUrl(made.resource_links[0]?.resource_link_id ?? '', sub));
      expect(launch[`${LTI}custom`]).toMatchObject({ tis_placement: 'rl_1' });
      expect(launch[`${LTI}context`]).toMatchObject({ id: courseId });
      // A request answers once.
      expect((await respond(claims)).status).toBe(400);
    });

    it('refuses a response with the wrong aud, message type, deployment or data, or signed by an unknown key', async () => {
      const { claims } = await deepLinkingRequest();
      for (const overrides of [
        { aud: 'https://someone-else.example' },
        { [`${LTI}message_type`]: 'LtiResourceLinkRequest' },
        { [`${LTI}deployment_id`]: 'other' },
        { [`${DL}data`]: 'forged' },
      ]) {
        const res = await respond(claims, overrides);
        expect(res.status, JSON.stringify(overrides)).toBe(400);
      }
      // Still answerable after the refusals: nothing was half-made.
      expect((await respond(claims)).status).toBe(200);
    });
  });

  describe('reference LMS: Canvas- and Moodle-shaped profiles', () => {
    it('Canvas: numeric client ID, N:hash deployments, /api/lti line items, no lti_deployment_id at login', async () => {
      const w = await LmsWorld.start('canvas', undefined, store.location('canvas'));
      try {
        expect(w.reg.clientId).toMatch(/^1\d{13}$/);
        expect(w.reg.deploymentId).toMatch(/^\d+:[0-9a-f]{40}$/);
        const c = await w.course();
        expect(c.lineItemUrl).toMatch(/\/api\/lti\/courses\/[0-9a-f]+\/line_items\/\d+$/);
        const trip = await w.loginRoundTrip(await w.launchUrl(c.linkId, c.sub));
        expect(trip.login.searchParams.has('lti_deployment_id')).toBe(false);
        const copy = await w.controlJson<{ resource_links: { id: string }[] }>('POST', `/courses/${c.courseId}/copies`, { with_enrolments: true });
        const claims = await w.launchClaims(await w.launchUrl(copy.resource_links[0]?.id ?? '', c.sub));
        expect(claims[`${LTI}custom`]).toMatchObject({ canvas_previous_context_ids: c.courseId, context_history: c.courseId });
        expect(claims[`${LTI}tool_platform`]).toMatchObject({ product_family_code: 'canvas' });
        expect(claims[`${LTI}roles`]).toEqual([
          'http://purl.imsglobal.org/vocab/lis/v2/membership#Learner',
          'http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student',
          'http://purl.imsglobal.org/vocab/lis/v2/system/person#User',
        ]);
        expect(claims).toHaveProperty(['https://www.instructure.com/placement'], null);
        const bearer = await w.bearer();
        expect((await postScore(bearer, c.lineItemUrl ?? '', score(c.sub, new Date().toISOString()))).status).toBe(204);
      } finally {
        await w.stop();
      }
    });

    it('Moodle: small integer deployments, services.php line items with ?type_id=, grade sync only without the line-item scope', async () => {
      const w = await LmsWorld.start('moodle', SCOPES.score, store.location('moodle'));
      try {
        expect(w.reg.deploymentId).toMatch(/^\d+$/);
        const c = await w.course();
        expect(c.lineItemUrl).toMatch(/\/mod\/lti\/services\.php\/\d+\/lineitems\/\d+\/lineitem\?type_id=1$/);
        const claims = await w.launchClaims(await w.launchUrl(c.linkId, c.sub));
        expect(claims[AGS_CLAIM]).toMatchObject({ scope: [SCOPES.score], lineitem: c.lineItemUrl });
        expect(claims[`${LTI}tool_platform`]).toMatchObject({ product_family_code: 'moodle' });
        expect(claims[`${LTI}ext`]).toMatchObject({ lms: 'moodle-2' });
        expect(claims[`${LTI}lis`]).toMatchObject({ course_offering_sourcedid: c.courseId });
        expect((await w.accessToken([SCOPES.lineItem])).status).toBe(400);
        const bearer = await w.bearer([SCOPES.score]);
        // The scores URL keeps the query: `/scores` goes into the path.
        expect((await postScore(bearer, c.lineItemUrl ?? '', score(c.sub, new Date().toISOString()))).status).toBe(204);
        const naive = await fetch(`${c.lineItemUrl ?? ''}/scores`, { method: 'POST', headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': SCORE_TYPE }, body: JSON.stringify(score(c.sub, new Date().toISOString())) });
        // Appended to the string, `/scores` lands in the query: the URL names the line item, which takes no POST.
        expect(naive.status).toBe(405);
      } finally {
        await w.stop();
      }
    });
  });

  describe('reference LMS: no request makes it answer 500', () => {
    it('answers 4xx to malformed requests on every endpoint', async () => {
      const w = await LmsWorld.start('reference', undefined, store.location());
      try {
        const base = w.lms.issuer;
        const cases: [string, string, RequestInit][] = [
          ['POST', '/token', { headers: { 'Content-Type': 'application/json' }, body: '{}' }],
          ['POST', '/token', { headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer&client_assertion=a.b.c&scope=x' }],
          ['POST', '/register', { headers: { 'Content-Type': 'application/json', Authorization: 'Bearer x' }, body: 'not json' }],
          ['POST', '/deep-linking/return', { headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'JWT=garbage' }],
          ['GET', '/auth?client_id=%E0%A4%A', {}],
          ['GET', '/launch/%E0%A4%A', {}],
          ['GET', '/ags/courses/%E0%A4%A/lineitems', { headers: { Authorization: 'Bearer x' } }],
          ['POST', '/controls/courses', { headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${w.lms.controlToken}` }, body: '[1]' }],
          ['PUT', '/controls/courses/x/enrolments/y', { headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${w.lms.controlToken}` }, body: '{"roles":["nonsense"]}' }],
          ['PATCH', '/controls/settings', { headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${w.lms.controlToken}` }, body: '{"access_token_ttl_seconds":0}' }],
          ['PATCH', '/controls/deployments/nowhere', { headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${w.lms.controlToken}` }, body: JSON.stringify({ client_id: w.reg.clientId }) }],
          ['PATCH', '/controls/deployments/x', { headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${w.lms.controlToken}` }, body: '{"client_id":"not-registered"}' }],
          ['GET', '/nowhere', {}],
        ];
        for (const [method, path, init] of cases) {
          const res = await fetch(`${base}${path}`, { method, ...init });
          expect(res.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
          expect(res.status, `${method} ${path}`).toBeLessThan(500);
        }
      } finally {
        await w.stop();
      }
    });
  });
});
