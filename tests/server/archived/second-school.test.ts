/**
 * The archived launch-keyed grades for real LMS launches (issue 13: "the archived launch-keyed grades
 * (2026-08-25, 2026-08-19) work for real-LMS launches"; decisions LTI-68, GAP-43): a second school of the
 * Sandbox's LMS (a deployment made by the dashboard's `POST .../sandbox/lms/schools`) is a real school, not a
 * Test-tab trial, so a launch there through the LMS, the service's OIDC login and id_token validation gets
 * a real grade (`grd_`, synced to that LMS's gradebook over AGS) under both archived contracts, while a
 * launch into the tool's trial course stays a trial (2026-08-25) or unknown (2026-08-19).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxLmsClient } from '../../../server/sandbox/lms-registration.js';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import type { ToolServer } from '../outbound/fixtures.js';
import { answer, startToolServer, verifyToken } from '../outbound/fixtures.js';
import type { Builder, Caller } from '../dashboard/helpers.js';
import { caller, createBuilder, platformToken, register } from '../dashboard/helpers.js';
import type { Archived } from './helpers.js';
import { ARCHIVED, call, expectProblem, expectValid } from './helpers.js';

type Json = Record<string, unknown>;

let server: TestServer;
let tool: ToolServer;
let platform: Caller;
let builder: Builder;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true } });
  tool = await startToolServer();
  tool.route('/launch', answer.text('launched', 200, 'text/html'));
  platform = caller(server, platformToken(server));
  builder = await createBuilder(server, platform, 'Archived Builder');
});
afterAll(async () => {
  await tool?.close();
  await server?.stop();
});

const unescape = (t: string): string => t.replace(/&#(\d+);/g, (_m, c: string) => String.fromCharCode(Number(c))).replace(/&amp;/g, '&').replace(/&quot;/g, '"');

function formOf(html: string): { action: string; fields: Record<string, string> } {
  const action = unescape(/<form[^>]*action="([^"]*)"/.exec(html)?.[1] ?? '');
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input[^>]*name="([^"]*)"[^>]*value="([^"]*)"/g)) fields[unescape(m[1] ?? '')] = unescape(m[2] ?? '');
  return { action, fields };
}

function postForm(url: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields).toString() });
}

/** A browser following an LMS launch URL: the service's login (its state cookie), the LMS's auth, the id_token form_post. */
async function throughOidc(launchUrl: string): Promise<Response> {
  const toLogin = await fetch(launchUrl, { redirect: 'manual' });
  expect(toLogin.status, await toLogin.clone().text()).toBe(302);
  const login = await fetch(toLogin.headers.get('location') ?? '', { redirect: 'manual' });
  expect(login.status, await login.clone().text()).toBe(302);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const auth = await fetch(login.headers.get('location') ?? '', { redirect: 'manual' });
  expect(auth.status).toBe(200);
  const form = formOf(await auth.text());
  expect(form.fields['id_token']).toBeTruthy();
  return postForm(form.action, form.fields, { Cookie: cookie });
}

async function lmsLaunchUrl(appId: string, sub: string, target: { resource_link_id: string } | { course_id: string }): Promise<string> {
  const made = await builder.call<{ url: string }>('POST', `/apps/${appId}/sandbox/lms/launches`, { sub, ...target });
  expect(made.status, JSON.stringify(made.body)).toBeLessThan(300);
  return made.body.url;
}

/** Deep Linking by the instructor in an LMS course: the service's picker places the stored location `key`. */
async function deepLink(appId: string, courseId: string, key: string): Promise<string> {
  const picker = await throughOidc(await lmsLaunchUrl(appId, 'sandbox-instructor', { course_id: courseId }));
  expect(picker.status, await picker.clone().text()).toBe(200);
  const pickerKey = formOf(await picker.text()).fields['key'] ?? '';
  const locations = await postForm(`${server.url}/lti/deep-linking`, { key: pickerKey, app: appId });
  expect(await locations.text()).toContain(key);
  const confirmed = await postForm(`${server.url}/lti/deep-linking`, { key: pickerKey, app: appId, confirm: '1', extid: key });
  const response = formOf(await confirmed.text());
  const returned = await postForm(response.action, { JWT: response.fields['JWT'] ?? '' }, { Accept: 'application/json' });
  expect(returned.status, await returned.clone().text()).toBe(200);
  const made = (await returned.json()) as { resource_links: { resource_link_id: string }[] };
  return made.resource_links[0]?.resource_link_id ?? '';
}

/** A person's launch of a resource link through the LMS and the service's LTI path: the claims the tool receives. */
async function launchAs(appId: string, sub: string, resourceLinkId: string): Promise<Json> {
  const launched = await throughOidc(await lmsLaunchUrl(appId, sub, { resource_link_id: resourceLinkId }));
  expect(launched.status, await launched.clone().text()).toBe(303);
  const launchPage = launched.headers.get('location') ?? '';
  for (let i = 0; i < 100; i += 1) {
    const page = await fetch(launchPage);
    const html = await page.text();
    if (page.status === 202) {
      await new Promise((resolve) => setTimeout(resolve, 30));
      continue;
    }
    expect(page.status, html).toBe(200);
    const form = formOf(html);
    expect(form.action).toBe(tool.url('/launch'));
    return verifyToken(server, form.fields['launch_data'] ?? '', appId);
  }
  throw new Error('provisioning never ended');
}

describe.each(ARCHIVED)('a tool pinned to %s, launched from a second school of the Sandbox LMS', (version: Archived) => {
  it('gets a real launch-keyed grade, synced to that school’s LMS gradebook; the trial course’s launch does not', async () => {
    const registered = await register(builder, { name: `Archived ${version}`, hosting: 'self_hosted', contract_version: version });
    const appId = registered.appId;
    const auth = `Bearer ${registered.apiKey ?? ''}`;
    expect((await builder.call('PATCH', `/apps/${appId}`, { callback_url: tool.url('/launch') })).status).toBe(200);
    expect((await platform('POST', `/apps/${appId}/activate`)).status).toBe(200);
    // A location stored through the archived management API: the picker offers it (by ID under 2026-08-19).
    const body = version === '2026-08-19' ? { type: 'assessment', label: 'Final quiz' } : { extid: 'final-quiz', type: 'assessment', label: 'Final quiz' };
    const stored = await call('POST', `${server.url}/v1/apps/me/locations`, { auth, body });
    expect(stored.status, JSON.stringify(stored.body)).toBe(201);
    const key = version === '2026-08-19' ? String(stored.body['id']) : 'final-quiz';

    const school = await builder.call<{ deployment_id: string; course: { id: string; enrolments: { sub: string }[] } }>('POST', `/apps/${appId}/sandbox/lms/schools`, {
      title: 'Northwind University',
    });
    expect(school.status, JSON.stringify(school.body)).toBeLessThan(300);
    expect(school.body.deployment_id).toBe(`sandbox-${appId}-2`);
    expect(school.body.course.enrolments.map((e) => e.sub)).toContain('sandbox-student_1');
    const link = await deepLink(appId, school.body.course.id, key);
    const launched = await launchAs(appId, 'sandbox-student_1', link);
    expect(launched['grade_passback']).toBe(true);
    expect(launched['organization']).toMatchObject({ [version === '2026-08-19' ? 'id' : 'deployment']: `sandbox-${appId}-2` });

    const graded = await call('POST', `${server.url}/v1/grades`, { auth, body: { launch_id: launched['launch_id'], score: 0.8, comment: 'Well argued' } });
    expect(graded.status, JSON.stringify(graded.body)).toBe(200);
    expectValid(version, 'GradeRecord', graded.body);
    expect(graded.body).toMatchObject({ launch_id: launched['launch_id'], score: 0.8, sync_status: 'synced', sync_error: null });
    expect(String(graded.body['grade_id'])).toMatch(/^grd_/);
    const read = await call('GET', `${server.url}/v1/grades/${String(graded.body['grade_id'])}`, { auth });
    expect(read.body).toEqual(graded.body);
    // In the second school's LMS gradebook, under the person's LMS id, against the column's points (100).
    const book = await sandboxLmsClient(server.services).gradebook(school.body.course.id);
    expect(book.columns.flatMap((c) => c.scores)).toEqual([
      expect.objectContaining({ userId: 'sandbox-student_1', scoreGiven: 80, scoreMaximum: 100, comment: 'Well argued', activityProgress: 'Completed' }),
    ]);
    // The grade history has it as an attempt of the member (S-13).
    const attempts = await server.services.store.attempts.list({ appId });
    expect(attempts.items.map((a) => [a.score, a.status])).toEqual([[0.8, 'success']]);

    // The same tool's launch into its trial course (the Test tab's) is a trial, never a grade.
    const trialLink = await deepLink(appId, `sandbox-${appId}-trial`, key);
    const trial = await launchAs(appId, 'sandbox-student_1', trialLink);
    const trialGrade = await call('POST', `${server.url}/v1/grades`, { auth, body: { launch_id: trial['launch_id'], score: 0.5 } });
    if (version === '2026-08-25') {
      expect(trialGrade.status).toBe(200);
      expect(String(trialGrade.body['grade_id'])).toMatch(/^trial_/);
    } else {
      expectProblem(trialGrade, 404, 'Launch not found', version);
    }
    expect((await server.services.store.attempts.list({ appId })).items).toHaveLength(1);
  });
});
