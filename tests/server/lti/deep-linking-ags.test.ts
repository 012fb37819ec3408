/**
 * Deep Linking and grades toward a real (Moodle-shaped, loopback) LMS (issue 13; decisions LTI-13 to
 * LTI-16): the picker over LTI, the signed LtiDeepLinkingResponse, a launch of the placed link reaching
 * the tool with the AGS line item, grade.submit publishing to the LMS with one token for many scores, a
 * burst of concurrent regrades reaching the gradebook in `submitted` order, no line item, and a course
 * copy found through the copied link.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../../bin/tis.js';
import { registerManually } from '../../../server/lti/registration.js';
import type { TestServer, Tool } from '../harness.js';
import { createTool, startServer, TEST_STORE } from '../harness.js';
import type { ToolServer } from '../outbound/fixtures.js';
import { answer, setUrls, startToolServer } from '../outbound/fixtures.js';
import type { LmsFixture } from './lms-fixture.js';
import { ROLES, startLms } from './lms-fixture.js';
import { login, postIdToken } from './support.js';

let server: TestServer;
let lms: LmsFixture;
let tool: Tool;
let toolServer: ToolServer;
const CONTEXT = 'moodle-course-42';

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true } });
  lms = await startLms('moodle');
  lms.connect(server.url);
  toolServer = await startToolServer();
  toolServer.route('/launch', answer.text('<p>tool</p>', 200, 'text/html'));
  toolServer.route(
    '/locations',
    answer.json({
      message: 'Pick the week',
      locations: { 'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 20 } },
      grouped_locations: [{ label: 'Readings', locations: { 'reading-1': { type: 'content', label: 'Chapter 1' } } }],
    }),
  );
  tool = await createTool(server, { name: 'Statistics Lab' });
  await createTool(server, { name: 'Draft Only', status: 'draft' });
  await setUrls(server, tool.app.id, { callbackUrl: toolServer.url('/launch'), locationsUrl: toolServer.url('/locations') });
  const saved = await registerManually(
    { store: server.services.store, config: server.services.config, lms: server.services.lti.lms },
    { issuer: lms.issuer, clientId: lms.clientId, deployments: [lms.deploymentId], authUrl: lms.urls.auth, tokenUrl: lms.urls.token, jwksUrl: lms.urls.jwks },
  );
  if (!saved.ok) throw new Error(saved.message);
  await server.services.store.lti.setStatus(saved.registration.id, 'active');
}, 60_000);

afterAll(async () => {
  await toolServer?.close();
  await lms?.close();
  await server?.stop();
});

function postJson(url: string, token: string, body: unknown): Promise<unknown> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: false, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
    });
    req.on('error', reject);
    req.end(data);
  });
}

function hidden(html: string, name: string): string {
  return new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';
}

function form(fields: Array<[string, string]>): RequestInit {
  return { method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() };
}

interface ContentItem {
  type: string;
  title: string;
  url: string;
  custom: Record<string, string>;
  lineItem?: { scoreMaximum: number; label: string; resourceId: string; tag: string };
}

let items: ContentItem[] = [];

async function launchLink(input: { sub: string; roles: string[]; resourceLinkId: string; custom: Record<string, string>; lineItem?: string | null; contextId?: string }): Promise<{ status: number; claims: Record<string, unknown> | null }> {
  const started = await login(server, lms);
  const idToken = await lms.idToken(
    lms.resourceLinkClaims({ nonce: started.nonce, contextId: input.contextId ?? CONTEXT, ...input, lineItem: input.lineItem ?? null }),
  );
  const res = await postIdToken(server, idToken, started.state, started.cookie);
  if (res.status !== 303) return { status: res.status, claims: null };
  const page = await fetch(res.headers.get('location') ?? '');
  const html = await page.text();
  const token = hidden(html, 'launch_data');
  return { status: page.status, claims: token ? (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>) : null };
}

describe('Deep Linking', () => {
  it('an instructor picks a tool (active tools only, by name), then its live locations; the LMS gets a signed response', async () => {
    const started = await login(server, lms);
    const idToken = await lms.idToken(lms.deepLinkingClaims({ nonce: started.nonce, sub: 'teacher-1', roles: [ROLES.instructor], contextId: CONTEXT, data: 'opaque:data/123' }));
    const tools = await postIdToken(server, idToken, started.state, started.cookie);
    expect(tools.status).toBe(200);
    const toolsHtml = await tools.text();
    expect(toolsHtml).toContain('Statistics Lab');
    expect(toolsHtml).not.toContain('Draft Only');
    const key = hidden(toolsHtml, 'key');

    const locations = await fetch(`${server.url}/lti/deep-linking`, form([['key', key], ['app', tool.app.id]]));
    expect(locations.status).toBe(200);
    const locationsHtml = await locations.text();
    expect(locationsHtml).toContain('Pick the week');
    expect(locationsHtml).toContain('Week 1 quiz');
    expect(locationsHtml).toContain('<span class="group-label">Readings</span> <span class="count" data-total="1">1 activity</span>');

    const confirmed = await fetch(
      `${server.url}/lti/deep-linking`,
      form([['key', key], ['app', tool.app.id], ['confirm', '1'], ['extid', 'quiz-1'], ['extid', 'reading-1']]),
    );
    expect(confirmed.status).toBe(200);
    const html = await confirmed.text();
    expect(html).toContain(`action="${lms.origin}/deep_linking_return"`);
    const jwt = hidden(html, 'JWT');
    const { payload, protectedHeader } = await jwtVerify(jwt, createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`)), {
      issuer: lms.clientId,
      audience: lms.issuer,
    });
    expect(typeof protectedHeader.kid).toBe('string');
    expect(payload).toMatchObject({
      'https://purl.imsglobal.org/spec/lti/claim/message_type': 'LtiDeepLinkingResponse',
      'https://purl.imsglobal.org/spec/lti/claim/version': '1.3.0',
      'https://purl.imsglobal.org/spec/lti/claim/deployment_id': lms.deploymentId,
      'https://purl.imsglobal.org/spec/lti-dl/claim/data': 'opaque:data/123',
    });
    expect(typeof payload['nonce']).toBe('string');
    items = payload['https://purl.imsglobal.org/spec/lti-dl/claim/content_items'] as ContentItem[];
    expect(items).toHaveLength(2);
    expect(items[0]).toMatchObject({ type: 'ltiResourceLink', title: 'Week 1 quiz', url: `${server.url}/lti/launch`, lineItem: { scoreMaximum: 20, label: 'Week 1 quiz', tag: 'quiz-1' } });
    expect(items[1]?.lineItem).toBeUndefined();
    expect(payload['https://purl.imsglobal.org/spec/lti-dl/claim/msg']).toBe('2 activities added from Statistics Lab.');
    // The confirmation says what was added before it posts the response (LTI-113).
    expect(html).toMatch(/<h1>Added to your course<\/h1>[\s\S]*Week 1 quiz<\/span> <span class="badge kind-assessment">Graded · 20 points<\/span>[\s\S]*Chapter 1/);
    // The choice is used up: a second confirmation places nothing.
    const again = await fetch(`${server.url}/lti/deep-linking`, form([['key', key], ['app', tool.app.id], ['confirm', '1'], ['extid', 'quiz-1']]));
    expect(again.status).toBe(400);
  });

  /** A Deep Linking request of the instructor, answered with the tools page: its picker key. */
  async function openChoice(data: string): Promise<string> {
    const started = await login(server, lms);
    const idToken = await lms.idToken(lms.deepLinkingClaims({ nonce: started.nonce, sub: 'teacher-1', roles: [ROLES.instructor], contextId: CONTEXT, data }));
    return hidden(await (await postIdToken(server, idToken, started.state, started.cookie)).text(), 'key');
  }

  it('confirming nothing shows the picker again saying what to do (no 400, nothing placed); an extid ticked twice is placed once', async () => {
    const key = await openChoice('dl-nothing');
    await (await fetch(`${server.url}/lti/deep-linking`, form([['key', key], ['app', tool.app.id]]))).text();
    const empty = await fetch(`${server.url}/lti/deep-linking`, form([['key', key], ['app', tool.app.id], ['confirm', '1']]));
    expect(empty.status).toBe(200);
    const html = await empty.text();
    expect(html).toMatch(/<p id="pick-error" class="error" role="alert" tabindex="-1">Tick at least one activity to add, or choose Cancel\.<\/p>/);
    expect(html).toContain('Week 1 quiz');
    // The choice is used up only when something is placed: the key still holds, the teacher ticks and adds.
    const twice = await fetch(`${server.url}/lti/deep-linking`, form([['key', key], ['app', tool.app.id], ['confirm', '1'], ['extid', 'reading-1'], ['extid', 'reading-1']]));
    const { payload } = await jwtVerify(hidden(await twice.text(), 'JWT'), createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`)));
    expect(payload['https://purl.imsglobal.org/spec/lti-dl/claim/content_items']).toHaveLength(1);
  });

  it('Cancel, from the tools or the locations: a signed response with no content item and the request\'s data, posted at once; the key is used up', async () => {
    for (const withApp of [false, true]) {
      const key = await openChoice(`dl-cancel-${String(withApp)}`);
      const fields: Array<[string, string]> = withApp ? [['key', key], ['app', tool.app.id], ['cancel', '1']] : [['key', key], ['cancel', '1']];
      const cancelled = await fetch(`${server.url}/lti/deep-linking`, form(fields));
      expect(cancelled.status).toBe(200);
      const html = await cancelled.text();
      expect(html).toContain('<h1>Nothing added</h1>');
      expect(html).toContain(`action="${lms.origin}/deep_linking_return" data-delay="0"`);
      const { payload } = await jwtVerify(hidden(html, 'JWT'), createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`)), { issuer: lms.clientId, audience: lms.issuer });
      expect(payload).toMatchObject({
        'https://purl.imsglobal.org/spec/lti/claim/message_type': 'LtiDeepLinkingResponse',
        'https://purl.imsglobal.org/spec/lti-dl/claim/content_items': [],
        'https://purl.imsglobal.org/spec/lti-dl/claim/data': `dl-cancel-${String(withApp)}`,
      });
      expect(payload['https://purl.imsglobal.org/spec/lti-dl/claim/msg']).toBeUndefined();
      expect((await fetch(`${server.url}/lti/deep-linking`, form([['key', key], ['cancel', '1']]))).status).toBe(400);
    }
  });

  it('a student cannot open the picker', async () => {
    const started = await login(server, lms);
    const idToken = await lms.idToken(lms.deepLinkingClaims({ nonce: started.nonce, sub: 'student-x', roles: [ROLES.learner], contextId: CONTEXT }));
    expect((await postIdToken(server, idToken, started.state, started.cookie)).status).toBe(403);
  });
});

describe('launching the placed link, and grades', () => {
  let submit = '';
  let apiToken = '';

  it('the LMS link of a content item launches its placement with the line item the AGS claim names', async () => {
    const quiz = items[0] as ContentItem;
    const launched = await launchLink({ sub: 'student-1', roles: [ROLES.learner], resourceLinkId: 'moodle-rl-1', custom: quiz.custom, lineItem: lms.urls.lineItem(5) });
    expect(launched.status).toBe(200);
    const claims = launched.claims as { grade: { submit: string }; api: { token: string }; location: { extid: string } };
    expect(claims.location.extid).toBe('quiz-1');
    submit = claims.grade.submit;
    apiToken = claims.api.token;
    expect(submit).toMatch(/\/scores$/);
  });

  it('grade.submit publishes to the LMS: one token for several scores, userId the sub, timestamp the submitted', async () => {
    const tokenRequests = lms.to('/mod/lti/token.php').length;
    for (const score of [0.5, 0.75]) {
      const res = await fetch(submit, { method: 'POST', headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ score }) });
      expect(res.status).toBe(200);
      const attempt = (await res.json()) as { status: string; submitted: string };
      expect(attempt.status).toBe('success');
      const sent = lms.scores.at(-1);
      expect(sent?.lineItem).toBe('/lineitems/5?type_id=1');
      expect(sent?.score).toMatchObject({ userId: 'student-1', scoreGiven: score * 20, scoreMaximum: 20, timestamp: attempt.submitted });
    }
    expect(lms.to('/mod/lti/token.php').length - tokenRequests).toBe(1);
  });

  it('a burst of 20 concurrent regrades: none fails, and the gradebook ends on the latest submitted', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(submit, { method: 'POST', headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ score: (i + 1) / 20 }) }).then(
          (r) => r.json() as Promise<{ status: string; submitted: string; score: number }>,
        ),
      ),
    );
    expect(results.filter((r) => r.status !== 'success')).toEqual([]);
    const latest = results.reduce((a, b) => (a.submitted > b.submitted ? a : b));
    const cell = lms.gradebook.get('/lineitems/5?type_id=1\nstudent-1');
    expect(cell?.timestamp).toBe(latest.submitted);
    expect(cell?.scoreGiven).toBe(latest.score * 20);
    expect(lms.scores.filter((s) => s.status === 409)).toEqual([]);
  });

  it.runIf(TEST_STORE === 'postgres')('across two instances on one PostgreSQL database, a burst still reaches the LMS in submitted order', async () => {
    const other = await startServer({ dataDir: server.dataDir, config: { allowLoopbackTools: true } });
    try {
      const path = new URL(submit).pathname;
      // Fresh connections (no keep-alive pool shared with earlier tests), half to each instance.
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          postJson(`${i % 2 === 0 ? server.url : other.url}${path}`, apiToken, { score: (20 - i) / 20 }) as Promise<{ status: string; submitted: string; score: number }>,
        ),
      );
      expect(results.filter((r) => r.status !== 'success')).toEqual([]);
      const latest = results.reduce((a, b) => (a.submitted > b.submitted ? a : b));
      expect(lms.gradebook.get('/lineitems/5?type_id=1\nstudent-1')?.timestamp).toBe(latest.submitted);
      expect(lms.scores.filter((x) => x.status === 409)).toEqual([]);
    } finally {
      await other.stop();
    }
  });

  it('max_score without the LMS line-item scope is a failed attempt saying so', async () => {
    lms.token.grantLineItem = false;
    try {
      const res = await fetch(submit, { method: 'POST', headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ score: 1, max_score: 25 }) });
      const attempt = (await res.json()) as { status: string; data: { error: string } };
      expect(attempt.status).toBe('failed');
      expect(attempt.data.error).toMatch(/line-item scope/);
    } finally {
      lms.token.grantLineItem = true;
    }
  });

  it('an assessment placement with no line item from the LMS: failed, data.response null', async () => {
    const started = await login(server, lms);
    const dl = await lms.idToken(lms.deepLinkingClaims({ nonce: started.nonce, sub: 'teacher-1', roles: [ROLES.instructor], contextId: 'course-nocolumn' }));
    const key = hidden(await (await postIdToken(server, dl, started.state, started.cookie)).text(), 'key');
    await (await fetch(`${server.url}/lti/deep-linking`, form([['key', key], ['app', tool.app.id]]))).text();
    const html = await (await fetch(`${server.url}/lti/deep-linking`, form([['key', key], ['app', tool.app.id], ['confirm', '1'], ['extid', 'quiz-1']]))).text();
    const { payload } = await jwtVerify(hidden(html, 'JWT'), createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`)));
    const item = (payload['https://purl.imsglobal.org/spec/lti-dl/claim/content_items'] as ContentItem[])[0] as ContentItem;
    const launched = await launchLink({ sub: 'student-2', roles: [ROLES.learner], resourceLinkId: 'rl-nocolumn', custom: item.custom, contextId: 'course-nocolumn' });
    const claims = launched.claims as { grade: { submit: string | null }; context: string; location: { id: string }; user: { member: string } };
    // No line item: the tool is told there is no gradebook column; a score sent anyway fails without reaching the LMS.
    expect(claims.grade.submit).toBeNull();
    const before = lms.scores.length;
    const res = await fetch(`${server.url}/v1/contexts/${claims.context}/apps/${tool.app.id}/locations/${claims.location.id}/members/${claims.user.member}/scores`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tool.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ score: 0.5 }),
    });
    const attempt = (await res.json()) as { status: string; data: { error: string; response: unknown } };
    expect(attempt.status).toBe('failed');
    expect(attempt.data.error).toMatch(/has no line item/);
    expect(attempt.data.response).toBeNull();
    expect(lms.scores.length).toBe(before);
  });

  it('archived launch-keyed grades (2026-08-25) of a real-LMS launch reach the LMS', async () => {
    const pinned = await createTool(server, { name: 'Archived Quiz', contractVersion: '2026-08-25' });
    await setUrls(server, pinned.app.id, { callbackUrl: toolServer.url('/launch') });
    const org = await server.services.store.organizations.find(lms.issuer, lms.clientId, lms.deploymentId);
    const context = await server.services.store.contexts.findByExternal(org?.id ?? '', CONTEXT);
    const [location] = await server.services.store.locations.syncServed(pinned.app.id, [{ extid: 'final', type: 'assessment', label: 'Final', points: 10 }]);
    const placement = await server.services.launches.place({
      appId: pinned.app.id,
      contextId: context?.id ?? '',
      locationId: location?.id ?? '',
    });
    const launched = await launchLink({
      sub: 'student-9',
      roles: [ROLES.learner],
      resourceLinkId: 'rl-archived',
      custom: { tis_placement: placement.resourceLink },
      lineItem: lms.urls.lineItem(9),
    });
    expect(launched.status).toBe(200);
    const claims = launched.claims as { launch_id: string; grade_passback: boolean };
    expect(claims.grade_passback).toBe(true);
    const res = await fetch(`${server.url}/v1/grades`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pinned.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ launch_id: claims.launch_id, score: 0.7 }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ sync_status: 'synced', score: 0.7 });
    expect(lms.scores.at(-1)).toMatchObject({ lineItem: '/lineitems/9?type_id=1', score: { userId: 'student-9', scoreGiven: 7 } });
  });

  it('a course copy: the copied link names the old course\'s placement; the copy provisions with parent_context and parent_location', async () => {
    toolServer.route('/provision', answer.provisioning());
    await setUrls(server, tool.app.id, { provisionUrl: toolServer.url('/provision') });
    const quiz = items[0] as ContentItem;
    const started = await login(server, lms);
    const idToken = await lms.idToken(
      lms.resourceLinkClaims({
        nonce: started.nonce,
        sub: 'student-1',
        roles: [ROLES.learner],
        contextId: 'moodle-course-42-2027',
        resourceLinkId: 'moodle-rl-1-copy',
        custom: { ...quiz.custom, context_history: `${CONTEXT},moodle-course-41` },
        lineItem: lms.urls.lineItem(6),
      }),
    );
    const res = await postIdToken(server, idToken, started.state, started.cookie);
    expect(res.status).toBe(303);
    const launchUrl = res.headers.get('location') ?? '';
    // The launch page shows Provisioning (202) until the tool has PUT both levels.
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i += 1) {
      const page = await fetch(launchUrl);
      status = page.status;
      await page.text();
      if (status === 202) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    const org = await server.services.store.organizations.find(lms.issuer, lms.clientId, lms.deploymentId);
    const copy = await server.services.store.contexts.findByExternal(org?.id ?? '', 'moodle-course-42-2027');
    const original = await server.services.store.contexts.findByExternal(org?.id ?? '', CONTEXT);
    expect(copy?.parentContextId).toBe(original?.id);
    const provisions = toolServer.to('/provision').map((r) => {
      const token = r.form.get('launch_data') ?? '';
      return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { context: string; storage: { parent_context?: string; parent_location?: string } };
    });
    const forCopy = provisions.filter((c) => c.context === copy?.id);
    expect(forCopy.length).toBeGreaterThan(0);
    expect(forCopy.every((c) => c.storage.parent_context?.includes(original?.id ?? 'none'))).toBe(true);
    expect(forCopy.some((c) => typeof c.storage.parent_location === 'string')).toBe(true);
  });
});

describe('gradebook columns on every launch (issue 28)', () => {
  /** Registers the LMS again with these AGS scopes (the registration is updated in place). */
  async function grant(scopes: string[]): Promise<string> {
    const saved = await registerManually(
      { store: server.services.store, config: server.services.config, lms: server.services.lti.lms },
      { issuer: lms.issuer, clientId: lms.clientId, deployments: [lms.deploymentId], authUrl: lms.urls.auth, tokenUrl: lms.urls.token, jwksUrl: lms.urls.jwks, scopes },
    );
    if (!saved.ok) throw new Error(saved.message);
    return saved.registration.id;
  }
  const SCORE = 'https://purl.imsglobal.org/spec/lti-ags/scope/score';
  const LINE_ITEM = 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem';

  /** An instructor's first launch of a link no placement claims: the picker, then the chosen quiz's launch. */
  async function placingLaunch(resourceLinkId: string, ags: { lineItem?: string; containerOnly?: boolean }): Promise<{ grade: { submit: string | null } }> {
    const started = await login(server, lms);
    const idToken = await lms.idToken(
      lms.resourceLinkClaims({ nonce: started.nonce, sub: 'teacher-1', roles: [ROLES.instructor], contextId: 'course-placing', resourceLinkId, lineItem: ags.lineItem ?? null, containerOnly: ags.containerOnly ?? false }),
    );
    const tools = await postIdToken(server, idToken, started.state, started.cookie);
    expect(tools.status).toBe(200);
    const key = hidden(await tools.text(), 'key');
    await (await fetch(`${server.url}/lti/deep-linking`, form([['key', key], ['app', tool.app.id]]))).text();
    const placed = await fetch(`${server.url}/lti/deep-linking`, form([['key', key], ['app', tool.app.id], ['confirm', '1'], ['extid', 'quiz-1']]));
    expect(placed.status).toBe(303);
    const html = await (await fetch(placed.headers.get('location') ?? '')).text();
    return JSON.parse(Buffer.from(hidden(html, 'launch_data').split('.')[1] ?? '', 'base64url').toString('utf8')) as { grade: { submit: string | null } };
  }

  it("the instructor's placing launch of a link with a gradebook column carries grade.submit", async () => {
    const claims = await placingLaunch('rl-placing', { lineItem: lms.urls.lineItem(21) });
    expect(claims.grade.submit).toMatch(/\/scores$/);
  });

  it('a link added by hand (lineitems only): the placing launch creates its line item with the line-item scope, and none without it', async () => {
    const claims = await placingLaunch('rl-by-hand', { containerOnly: true });
    expect(claims.grade.submit).toMatch(/\/scores$/);
    expect(lms.created.filter((c) => c.body['resourceLinkId'] === 'rl-by-hand')).toEqual([
      { url: expect.any(String), body: { scoreMaximum: 20, label: 'Week 1 quiz', resourceLinkId: 'rl-by-hand', resourceId: expect.any(String), tag: 'quiz-1' } },
    ]);
    await grant([SCORE]);
    try {
      const without = await placingLaunch('rl-by-hand-no-scope', { containerOnly: true });
      expect(without.grade.submit).toBeNull();
      expect(lms.created.filter((c) => c.body['resourceLinkId'] === 'rl-by-hand-no-scope')).toEqual([]);
    } finally {
      await grant([SCORE, LINE_ITEM]);
    }
  });

  it('without the score scope: grade.submit null although the LMS names a line item, and the registration says why (API and tis)', async () => {
    const id = await grant([]);
    try {
      const claims = await placingLaunch('rl-no-score', { lineItem: lms.urls.lineItem(22) });
      expect(claims.grade.submit).toBeNull();
      const token = readFileSync(join(server.dataDir, 'platform-token'), 'utf8').trim();
      const shown = (await (await fetch(`${server.url}/dashboard/v1/lms/${id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { grades: { publishable: boolean; creates_line_items: boolean; explanation: string } };
      expect(shown.grades).toMatchObject({ publishable: false, creates_line_items: false });
      expect(shown.grades.explanation).toMatch(/^Grades cannot be published: the LMS did not grant the AGS score scope/);
      const out: string[] = [];
      expect(await run(['lms', 'show', id], { TIS_URL: server.url, TIS_TOKEN: token }, { out: (l) => out.push(l), err: (l) => out.push(l) })).toBe(0);
      expect(out.join('\n')).toContain('grades: cannot be published; Grades cannot be published: the LMS did not grant the AGS score scope');
    } finally {
      await grant([SCORE, LINE_ITEM]);
    }
  });

  it("an LMS token endpoint that drops the connection: the attempt's error names the token endpoint", async () => {
    const claims = await placingLaunch('rl-token-down', { lineItem: lms.urls.lineItem(23) });
    const { submit } = claims.grade;
    const apiToken = (claims as unknown as { api: { token: string } }).api.token;
    server.services.publisher.forgetClient?.(lms.urls.token, lms.clientId);
    lms.token.drop = true;
    try {
      const res = await fetch(submit ?? '', { method: 'POST', headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ score: 1 }) });
      const attempt = (await res.json()) as { status: string; data: { error: string } };
      expect(attempt.status).toBe('failed');
      expect(attempt.data.error).toMatch(/^the LMS token endpoint could not be reached at http:\/\/127\.0\.0\.1:\d+: token_endpoint /);
    } finally {
      lms.token.drop = false;
    }
  });
});
