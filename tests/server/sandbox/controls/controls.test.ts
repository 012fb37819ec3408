/**
 * The Sandbox LMS's controls as dashboard operations (decisions LTI-66 to LTI-69), each shown through real
 * launches from the Sandbox LMS (in process under /lms) over the service's OIDC login and id_token
 * validation, on real HTTP and a real store: rename and re-term, a second school, a person in one course
 * only, an assessment link with no gradebook column, the registration without the line-item scope, a
 * gradebook that refuses scores, course copy, short token lifetimes; and who may call them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandboxLmsHost } from '../../../../server/sandbox/lms-host.js';
import type { Io } from '../../../../bin/tis.ts';
import { run } from '../../../../bin/tis.ts';
import type { TestServer } from '../../harness.js';
import { startServer } from '../../harness.js';
import type { RecordedRequest, ToolServer } from '../../outbound/fixtures.js';
import { TestClock, answer, startToolServer, verifyToken } from '../../outbound/fixtures.js';
import type { Builder, Caller } from '../../dashboard/helpers.js';
import { caller, createBuilder, expectProblem, platformToken, register } from '../../dashboard/helpers.js';

type Json = Record<string, unknown>;

interface Course {
  id: string;
  school: string;
  title: string;
  label: string;
  history: string[];
  enrolments: { sub: string; roles: string[] }[];
  resource_links: { id: string; title: string; custom: Record<string, string>; columns: { line_item_id: string; url: string; score_maximum: number; refuses_scores_with: number | null }[] }[];
}

const unescape = (t: string): string => t.replace(/&#(\d+);/g, (_m, c: string) => String.fromCharCode(Number(c))).replace(/&amp;/g, '&').replace(/&quot;/g, '"');

function formOf(html: string): { action: string; fields: Record<string, string> } {
  const action = unescape(/<form[^>]*action="([^"]*)"/.exec(html)?.[1] ?? '');
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input[^>]*name="([^"]*)"[^>]*value="([^"]*)"/g)) fields[unescape(m[1] ?? '')] = unescape(m[2] ?? '');
  return { action, fields };
}

/** The LMS's form_post of an id_token, reached as a browser does: LMS launch URL, service login, LMS auth. */
async function idTokenForm(launchUrl: string): Promise<{ form: { action: string; fields: Record<string, string> }; cookie: string }> {
  const toLogin = await fetch(launchUrl, { redirect: 'manual' });
  expect(toLogin.status, await toLogin.clone().text()).toBe(302);
  const login = await fetch(toLogin.headers.get('location') ?? '', { redirect: 'manual' });
  expect(login.status, await login.clone().text()).toBe(302);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const auth = await fetch(login.headers.get('location') ?? '', { redirect: 'manual' });
  expect(auth.status).toBe(200);
  const form = formOf(await auth.text());
  expect(form.fields['id_token']).toBeTruthy();
  return { form, cookie };
}

function postForm(url: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields).toString() });
}

async function throughOidc(launchUrl: string): Promise<Response> {
  const { form, cookie } = await idTokenForm(launchUrl);
  return postForm(form.action, form.fields, { Cookie: cookie });
}

let server: TestServer;
let clock: TestClock;
let tool: ToolServer;
let platform: Caller;
let builder: Builder;
let appId: string;
let trial: string;

async function control<T = Json>(method: string, path: string, body?: unknown, who: Caller = builder.call): Promise<T> {
  const answered = await who<T>(method, `/apps/${appId}/sandbox/lms${path}`, body);
  expect(answered.status, JSON.stringify(answered.body)).toBeLessThan(300);
  return answered.body;
}

async function launchUrl(sub: string, target: { resource_link_id: string } | { course_id: string }, app = appId): Promise<string> {
  const answered = await builder.call<{ url: string }>('POST', `/apps/${app}/sandbox/lms/launches`, { sub, ...target });
  expect(answered.status, JSON.stringify(answered.body)).toBe(201);
  return answered.body.url;
}

/** Opens a launch page until provisioning is done and posts its form to the tool: the tool's claims. */
async function toTool(launchPage: string, app = appId): Promise<Json> {
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
    return verifyToken(server, form.fields['launch_data'] ?? '', app);
  }
  throw new Error('provisioning never ended');
}

/** A person's launch of a resource link of `owner`'s Sandbox LMS, through the LMS and the service's LTI path, to `app`'s claims. */
async function launchAs(sub: string, resourceLinkId: string, app = appId, owner = appId): Promise<Json> {
  const launched = await throughOidc(await launchUrl(sub, { resource_link_id: resourceLinkId }, owner));
  expect(launched.status, await launched.clone().text()).toBe(303);
  return toTool(launched.headers.get('location') ?? '', app);
}

/** The service's picker pages: the tool, its live locations (the picker), then the location confirmed. */
async function choose(toolsPage: string, extid: string, app = appId): Promise<Response> {
  const key = formOf(toolsPage).fields['key'] ?? '';
  const locations = await postForm(`${server.url}/lti/deep-linking`, { key, app });
  expect(await locations.text()).toContain(extid);
  return postForm(`${server.url}/lti/deep-linking`, { key, app, confirm: '1', extid });
}

/** Deep Linking by the instructor in a course of `owner`'s Sandbox LMS: the picker places `app`'s `extid`, the LMS makes the link. */
async function deepLink(courseId: string, extid: string, app = appId, owner = appId): Promise<string> {
  const picker = await throughOidc(await launchUrl('sandbox-instructor', { course_id: courseId }, owner));
  expect(picker.status, await picker.clone().text()).toBe(200);
  const confirmed = await choose(await picker.text(), extid, app);
  const response = formOf(await confirmed.text());
  const returned = await postForm(response.action, { JWT: response.fields['JWT'] ?? '' }, { Accept: 'application/json' });
  expect(returned.status, await returned.clone().text()).toBe(200);
  const made = (await returned.json()) as { resource_links: { resource_link_id: string }[] };
  return made.resource_links[0]?.resource_link_id ?? '';
}

async function submit(claims: Json, body: Json): Promise<{ status: string; data: { error: string; response: { status: number; body: string } | null } }> {
  const grade = claims['grade'] as { submit: string };
  const api = claims['api'] as { token: string };
  const res = await fetch(grade.submit, { method: 'POST', headers: { Authorization: `Bearer ${api.token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const attempt = (await res.json()) as { status: string; data: { error: string; response: { status: number; body: string } | null } };
  expect(res.status, JSON.stringify(attempt)).toBe(200);
  return attempt;
}

beforeAll(async () => {
  clock = new TestClock();
  server = await startServer({ clock, config: { allowLoopbackTools: true, lmsAutoActivate: true, provisionTimeoutMs: 2000, locationsTimeoutMs: 2000 } });
  tool = await startToolServer();
  tool.route('/launch', answer.text('launched', 200, 'text/html'));
  tool.route('/provision', answer.provisioning());
  tool.route(
    '/locations',
    answer.json({
      locations: {
        'quiz-1': { type: 'assessment', label: 'Quiz 1', points: 10 },
        'quiz-2': { type: 'assessment', label: 'Quiz 2', points: 5 },
        'reading-1': { type: 'content', label: 'Reading 1' },
      },
    }),
  );
  platform = caller(server, platformToken(server));
  builder = await createBuilder(server, platform, 'Controls Builder');
  appId = (await register(builder)).appId;
  const set = await builder.call('PATCH', `/apps/${appId}`, { callback_url: tool.url('/launch'), provision_url: tool.url('/provision'), locations_url: tool.url('/locations') });
  expect(set.status).toBe(200);
  expect((await platform('POST', `/apps/${appId}/activate`)).status).toBe(200);
});
afterAll(async () => {
  await tool?.close();
  await server?.stop();
});

describe('the Sandbox LMS controls', () => {
  let quiz1: string;
  let firstLaunch: Json;

  it("answers the tool's schools, trial course and people", async () => {
    const lms = await control<{ issuer: string; schools: { deployment_id: string }[]; trial_course: string; people: string[]; grants_line_item_scope: boolean; settings: Json }>('GET', '');
    expect(lms.issuer).toBe(`${server.url}/lms`);
    expect(lms.schools.map((s) => s.deployment_id)).toEqual([`sandbox-${appId}`]);
    expect(lms.trial_course).toBe(`sandbox-${appId}-trial`);
    expect(lms.people).toContain('sandbox-student_1');
    expect(lms.grants_line_item_scope).toBe(true);
    expect(lms.settings).toEqual({ access_token_ttl_seconds: 3600, id_token_ttl_seconds: 300, launch_ttl_seconds: 300 });
    trial = lms.trial_course;
  });

  it('renames and re-terms a course: the next launch carries the new name and label', async () => {
    quiz1 = await deepLink(trial, 'quiz-1');
    firstLaunch = await launchAs('sandbox-student_1', quiz1);
    expect(firstLaunch['course']).toMatchObject({ name: 'Sandbox course' });
    const renamed = await control<Course>('PATCH', `/courses/${trial}`, { title: 'Biology 101', label: 'BIO-101-2027S' });
    expect(renamed).toMatchObject({ id: trial, title: 'Biology 101', label: 'BIO-101-2027S' });
    const next = await launchAs('sandbox-student_1', quiz1);
    expect(next['course']).toMatchObject({ name: 'Biology 101', label: 'BIO-101-2027S' });
    expect(next['context']).toEqual(firstLaunch['context']);
  });

  it('a gradebook that refuses a score: a failed attempt carrying the LMS answer, then accepted again', async () => {
    const course = await control<Course>('GET', `/courses/${trial}`);
    const column = course.resource_links.find((l) => l.id === quiz1)?.columns[0];
    expect(column).toMatchObject({ score_maximum: 10, refuses_scores_with: null });
    const lineItem = column?.line_item_id ?? '';
    const refusing = await control<Course>('PATCH', `/courses/${trial}/line-items/${lineItem}`, { refuses_scores_with: 503 });
    expect(refusing.resource_links.find((l) => l.id === quiz1)?.columns[0]?.refuses_scores_with).toBe(503);
    const refused = await submit(firstLaunch, { score: 0.5 });
    expect(refused.status).toBe('failed');
    expect(refused.data.response?.status).toBe(503);
    expect(refused.data.response?.body).toContain('score_refused');
    await control('PATCH', `/courses/${trial}/line-items/${lineItem}`, { refuses_scores_with: null });
    expect((await submit(firstLaunch, { score: 0.6 })).status).toBe('success');
    // A column of no course of the tool's.
    const other = await builder.call('PATCH', `/apps/${appId}/sandbox/lms/courses/${trial}/line-items/999999`, { refuses_scores_with: 500 });
    expectProblem(other, 404, 'sandbox_lms_not_found', `line item 999999 is not a gradebook column of course ${trial}`);
  });

  it('a registration without the line-item scope: max_score fails with the reason (platform team only)', async () => {
    const refusedToBuilder = await builder.call('PATCH', '/sandbox/lms/registration', { grants_line_item_scope: false });
    expectProblem(refusedToBuilder, 403, 'platform_only');
    const withheld = await platform<{ grants_line_item_scope: boolean }>('PATCH', '/sandbox/lms/registration', { grants_line_item_scope: false });
    expect(withheld.status).toBe(200);
    expect(withheld.body.grants_line_item_scope).toBe(false);
    try {
      const attempt = await submit(firstLaunch, { score: 0.7, max_score: 20 });
      expect(attempt.status).toBe('failed');
      expect(attempt.data.error).toContain('line-item scope');
      expect(attempt.data.response).toBeNull();
    } finally {
      expect((await platform('PATCH', '/sandbox/lms/registration', { grants_line_item_scope: true })).status).toBe(200);
    }
  });

  it('an assessment link added with no gradebook column: the service makes its column, and its grades reach it (LTI-122)', async () => {
    const course = await control<Course>('POST', `/courses/${trial}/links`, { title: 'Quiz 2', column: null });
    const link = course.resource_links.find((l) => l.title === 'Quiz 2');
    expect(link?.columns).toEqual([]);
    // The instructor's launch of a link no placement claims: the service's "not set up yet" choice.
    const choice = await throughOidc(await launchUrl('sandbox-instructor', { resource_link_id: link?.id ?? '' }));
    expect(choice.status).toBe(200);
    const chosen = await choose(await choice.text(), 'quiz-2');
    expect(chosen.status, await chosen.clone().text()).toBe(303);
    // The LMS names its line-item container and grants the line-item scope: the service created one column
    // for the link and remembered it, so the student's launch carries grade.submit and a score lands.
    const claims = await launchAs('sandbox-student_2', link?.id ?? '');
    expect((claims['grade'] as { submit: string | null }).submit).toMatch(/\/scores$/);
    const attempt = await submit(claims, { score: 1 });
    expect(attempt.status, JSON.stringify(attempt.data)).toBe('success');
  });

  it('a person enrolled in one course only: their token on another course is refused with 403', async () => {
    const person = await control<{ sub: string }>('POST', '/users', { given_name: 'Olu', family_name: 'Onecourse', email: 'olu@school.example' });
    expect(person.sub).toMatch(new RegExp(`^sandbox-${appId}-user-[0-9a-f]{12}$`));
    const chemistry = await control<Course>('POST', '/courses', { title: 'Chemistry 110', label: 'CHEM-110' });
    expect(chemistry.id).toMatch(new RegExp(`^sandbox-${appId}-course-`));
    await control('PUT', `/courses/${chemistry.id}/enrolments/sandbox-instructor`, { roles: ['instructor'] });
    const enrolled = await control<Course>('PUT', `/courses/${chemistry.id}/enrolments/${person.sub}`, { roles: ['student'] });
    expect(enrolled.enrolments.map((e) => e.sub)).toEqual([person.sub, 'sandbox-instructor'].sort());
    const reading = await deepLink(chemistry.id, 'reading-1');
    const claims = await launchAs(person.sub, reading);
    expect(claims['course']).toMatchObject({ name: 'Chemistry 110' });
    const token = (claims['api'] as { token: string }).token;
    const rows = (contextId: unknown): Promise<Response> =>
      fetch(`${server.url}/v1/contexts/${String(contextId)}/apps/${appId}/storage`, { headers: { Authorization: `Bearer ${token}` } });
    expect((await rows(claims['context'])).status).not.toBe(403);
    const elsewhere = await rows(firstLaunch['context']);
    expect(elsewhere.status).toBe(403);
    // The LMS refuses their launch of the trial course's link: not enrolled there.
    const notEnrolled = await builder.call('POST', `/apps/${appId}/sandbox/lms/launches`, { sub: person.sub, resource_link_id: quiz1 });
    expectProblem(notEnrolled, 422, 'sandbox_lms_refused', /not_enrolled/);
  });

  it('a second school: the same person launches as another organization and user', async () => {
    const school = await control<{ deployment_id: string; course: Course }>('POST', '/schools', { title: 'Northwind University' });
    expect(school.deployment_id).toBe(`sandbox-${appId}-2`);
    expect(school.course.id).toBe(`sandbox-${appId}-2-course`);
    expect(school.course.enrolments.map((e) => e.sub)).toContain('sandbox-student_1');
    const link = await deepLink(school.course.id, 'quiz-1');
    const there = await launchAs('sandbox-student_1', link);
    expect(there['organization']).toMatchObject({ deployment: `sandbox-${appId}-2`, client: (firstLaunch['organization'] as Json)['client'] });
    expect((there['user'] as Json)['id']).not.toBe((firstLaunch['user'] as Json)['id']);
    expect(there['organization']).not.toEqual(firstLaunch['organization']);
    const lms = await control<{ schools: { deployment_id: string }[] }>('GET', '');
    expect(lms.schools.map((s) => s.deployment_id)).toEqual([`sandbox-${appId}`, `sandbox-${appId}-2`]);

    // Not a Test-tab trial: a tool on the archived 2026-08-25 contract gets a real launch-keyed grade there.
    const archived = await register(builder, { name: 'Archived quiz', hosting: 'self_hosted', contract_version: '2026-08-25' });
    await builder.call('PATCH', `/apps/${archived.appId}`, { callback_url: tool.url('/launch'), provision_url: tool.url('/provision'), locations_url: tool.url('/locations') });
    expect((await platform('POST', `/apps/${archived.appId}/activate`)).status).toBe(200);
    const archivedLink = await deepLink(school.course.id, 'quiz-2', archived.appId);
    const launched = await launchAs('sandbox-student_1', archivedLink, archived.appId);
    expect(launched['grade_passback']).toBe(true);
    const graded = await fetch(`${server.url}/v1/grades`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${archived.apiKey ?? ''}`, 'Content-Type': 'application/json', 'Contract-Version': '2026-08-25' },
      body: JSON.stringify({ launch_id: launched['launch_id'], score: 0.8 }),
    });
    const grade = (await graded.json()) as Json;
    expect(graded.status, JSON.stringify(grade)).toBe(200);
    expect(grade).toMatchObject({ launch_id: launched['launch_id'], score: 0.8, sync_status: 'synced', sync_error: null });
    expect(String(grade['grade_id'])).not.toMatch(/^trial_/);
  });

  it("course copy: the copy's first launch provisions with parent_context", async () => {
    const copy = await control<Course>('POST', `/courses/${trial}/copies`, { label: 'BIO-101-2027F', with_enrolments: true });
    expect(copy.history).toEqual([trial]);
    const copiedLink = copy.resource_links.find((l) => l.custom['tis_placement'] !== undefined);
    expect(copiedLink).toBeDefined();
    const before = tool.to('/provision').length;
    const claims = await launchAs('sandbox-student_1', copiedLink?.id ?? '');
    expect(claims['course']).toMatchObject({ label: 'BIO-101-2027F' });
    expect(claims['context']).not.toEqual(firstLaunch['context']);
    const provisions = tool.to('/provision').slice(before).map((r: RecordedRequest) => JSON.parse(Buffer.from((r.form.get('launch_data') ?? '').split('.')[1] ?? '', 'base64url').toString('utf8')) as Json);
    const contextLevel = provisions.find((p) => (p['provision'] as Json)['location'] === null);
    expect(contextLevel?.['storage']).toMatchObject({ parent_context: expect.stringContaining(String(firstLaunch['context'])) });
  });

  it('short token lifetimes (platform team only): an id_token used after its lifetime is refused', async () => {
    expectProblem(await builder.call('PATCH', '/sandbox/lms/settings', { id_token_ttl_seconds: 1 }), 403, 'platform_only');
    const short = await platform<Json>('PATCH', '/sandbox/lms/settings', { id_token_ttl_seconds: 1 });
    expect(short.body).toEqual({ access_token_ttl_seconds: 3600, id_token_ttl_seconds: 1, launch_ttl_seconds: 300 });
    try {
      const { form, cookie } = await idTokenForm(await launchUrl('sandbox-student_1', { resource_link_id: quiz1 }));
      const launchesBefore = tool.to('/launch').length;
      clock.advance(10_000);
      const refused = await postForm(form.action, form.fields, { Cookie: cookie });
      expect(refused.status).toBe(401);
      expect(await refused.text()).not.toContain(form.fields['id_token'] ?? '');
      expect(tool.to('/launch').length).toBe(launchesBefore);
    } finally {
      clock.advance(-10_000);
      const reset = await platform<Json>('DELETE', '/sandbox/lms/settings');
      expect(reset.body).toEqual({ access_token_ttl_seconds: 3600, id_token_ttl_seconds: 300, launch_ttl_seconds: 300 });
    }
  });

  it("keeps every tool team to its own tool's Sandbox LMS", async () => {
    const other = await createBuilder(server, platform, 'Other Builder');
    const otherApp = (await register(other)).appId;
    expectProblem(await other.call('GET', `/apps/${appId}/sandbox/lms`), 404, 'app_not_found');
    const renamed = await other.call('PATCH', `/apps/${otherApp}/sandbox/lms/courses/${trial}`, { title: 'Mine now' });
    expectProblem(renamed, 404, 'sandbox_lms_outside', `course ${trial} is not in the Sandbox LMS of app ${otherApp} (its IDs begin with sandbox-${otherApp}-)`);
    expectProblem(await other.call('POST', `/apps/${otherApp}/sandbox/lms/launches`, { sub: 'sandbox-student_1', resource_link_id: quiz1 }), 404, 'sandbox_lms_outside');
    expectProblem(await other.call('POST', `/apps/${otherApp}/sandbox/lms/courses`, { school: `sandbox-${appId}`, title: 'X', label: 'X' }), 404, 'sandbox_lms_outside');
    expectProblem(await other.call('POST', `/apps/${otherApp}/sandbox/lms/launches`, { sub: 'sandbox-student_1' }), 422, 'sandbox_lms_launch_target');
    expect((await server.services.sandboxLms.ready()) !== null).toBe(true);
    expect((await builder.call<Course>('GET', `/apps/${appId}/sandbox/lms/courses/${trial}`)).body.title).toBe('Biology 101');
  });
});

describe("a tool's own school settings in the Sandbox LMS (LTI-71 to LTI-73)", () => {
  let other: string;
  let otherLaunch: Json;
  let ownLaunch: Json;

  /** The tokens the Sandbox LMS has issued so far: a new one is the service asking again. */
  async function tokensIssued(): Promise<number> {
    const lms = await server.services.sandboxLms.ready();
    return Number((await lms.platform.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM lms_access_tokens'))?.n);
  }

  beforeAll(async () => {
    other = (await register(builder, { name: 'Other quiz', hosting: 'self_hosted' })).appId;
    await builder.call('PATCH', `/apps/${other}`, { callback_url: tool.url('/launch'), provision_url: tool.url('/provision'), locations_url: tool.url('/locations') });
    expect((await platform('POST', `/apps/${other}/activate`)).status).toBe(200);
    const otherTrial = (await builder.call<{ trial_course: string }>('GET', `/apps/${other}/sandbox/lms`)).body.trial_course;
    otherLaunch = await launchAs('sandbox-student_2', await deepLink(otherTrial, 'quiz-1', other, other), other, other);
    const ownTrial = (await control<{ trial_course: string }>('GET', '')).trial_course;
    ownLaunch = await launchAs('sandbox-student_2', await deepLink(ownTrial, 'quiz-2'));
  });

  it("reads and sets the tool's school's own values, null following the LMS-wide ones, for that tool only", async () => {
    const fresh = await control<Json>('GET', '/settings');
    expect(fresh).toEqual({
      school: `sandbox-${appId}`,
      own: { access_token_ttl_seconds: null, id_token_ttl_seconds: null, launch_ttl_seconds: null, grants_line_item_scope: null },
      effective: { access_token_ttl_seconds: 3600, id_token_ttl_seconds: 300, launch_ttl_seconds: 300, grants_line_item_scope: true },
    });
    const set = await control<{ own: Json; effective: Json }>('PATCH', '/settings', { launch_ttl_seconds: 60, id_token_ttl_seconds: 30 });
    expect(set.effective).toMatchObject({ launch_ttl_seconds: 60, id_token_ttl_seconds: 30, access_token_ttl_seconds: 3600 });
    const launch = await control<{ expires: string }>('POST', '/launches', { sub: 'sandbox-student_1', course_id: trial });
    expect(Date.parse(launch.expires) - clock.nowMs()).toBeLessThanOrEqual(61_000);
    expect((await builder.call<{ effective: Json }>('GET', `/apps/${other}/sandbox/lms/settings`)).body.effective).toMatchObject({ launch_ttl_seconds: 300 });
    const back = await control<{ own: Json }>('PATCH', '/settings', { launch_ttl_seconds: null, id_token_ttl_seconds: null });
    expect(back.own).toMatchObject({ launch_ttl_seconds: null, id_token_ttl_seconds: null });
    for (const bad of [{}, { launch_ttl_seconds: 0 }, { access_token_ttl_seconds: 86_401 }, { grants_line_item_scope: 'no' }, { colour: 'red' }]) {
      expect((await builder.call('PATCH', `/apps/${appId}/sandbox/lms/settings`, bad)).status).toBe(422);
    }
    const stranger = await createBuilder(server, platform, 'Settings Stranger');
    expectProblem(await stranger.call('PATCH', `/apps/${appId}/sandbox/lms/settings`, { launch_ttl_seconds: 5 }), 404, 'app_not_found');
  });

  it("a tool's short access-token lifetime: the service asks a new token after it, and another tool's scores keep theirs", async () => {
    const set = await control<{ effective: Json }>('PATCH', '/settings', { access_token_ttl_seconds: 5 });
    expect(set.effective).toMatchObject({ access_token_ttl_seconds: 5 });
    // The LMS of this process, on the test's clock like the service, so "ten seconds later" needs no waiting.
    const lms = await server.services.sandboxLms.ready();
    const lmsPlatform = lms.platform as { clock: { nowMs(): number } };
    const lmsClock = lmsPlatform.clock;
    lmsPlatform.clock = clock;
    try {
      expect((await submit(ownLaunch, { score: 0.3 })).status).toBe('success');
      expect((await submit(otherLaunch, { score: 0.3 })).status).toBe('success');
      const before = await tokensIssued();
      clock.advance(10_000);
      try {
        // The other tool's school keeps the LMS-wide hour: its score goes on the token the service holds.
        expect((await submit(otherLaunch, { score: 0.4 })).status).toBe('success');
        expect(await tokensIssued()).toBe(before);
        // This tool's school refuses that token after five seconds: the service asks a new one, and publishes.
        const attempt = await submit(ownLaunch, { score: 0.4 });
        expect(attempt.status, attempt.data.error).toBe('success');
        expect(await tokensIssued()).toBe(before + 1);
      } finally {
        clock.advance(-10_000);
      }
    } finally {
      lmsPlatform.clock = lmsClock;
      await control('DELETE', '/settings');
    }
  });

  it("a tool's withheld line-item scope: its max_score fails with the reason, another tool's Sandbox still grants it", async () => {
    const withheld = await control<{ own: Json; effective: Json }>('PATCH', '/settings', { grants_line_item_scope: false });
    expect(withheld).toMatchObject({ own: { grants_line_item_scope: false }, effective: { grants_line_item_scope: false } });
    try {
      // One source of truth: the Sandbox school's record follows the school's setting in the LMS.
      expect((await builder.call<{ school: Json }>('GET', `/apps/${appId}/sandbox`)).body.school).toEqual({ grants_line_item_scope: false });
      const refused = await submit(ownLaunch, { score: 0.7, max_score: 20 });
      expect(refused.status).toBe('failed');
      expect(refused.data.error).toBe("max_score needs the LMS line-item scope, which this school's LMS developer key does not grant; nothing was published");
      expect(refused.data.response).toBeNull();
      expect((await submit(otherLaunch, { score: 0.7, max_score: 20 })).status).toBe('success');
      expect((await submit(ownLaunch, { score: 0.7 })).status).toBe('success');
    } finally {
      const reset = await control<{ own: Json; effective: Json }>('DELETE', '/settings');
      expect(reset.effective).toMatchObject({ grants_line_item_scope: true });
    }
    expect((await builder.call<{ school: Json }>('GET', `/apps/${appId}/sandbox`)).body.school).toEqual({ grants_line_item_scope: true });
    expect((await submit(ownLaunch, { score: 0.8, max_score: 20 })).status).toBe('success');
    // putSandboxSchool is the same setting.
    expect((await builder.call('PUT', `/apps/${appId}/sandbox/school`, { grants_line_item_scope: false })).status).toBe(200);
    expect((await control<{ own: Json }>('GET', '/settings')).own).toMatchObject({ grants_line_item_scope: false });
    expect((await builder.call('PUT', `/apps/${appId}/sandbox/school`, { grants_line_item_scope: true })).status).toBe(200);
    expect((await control<{ own: Json }>('GET', '/settings')).own).toMatchObject({ grants_line_item_scope: true });
    await control('DELETE', '/settings');
  });
});

describe('the list controls (LTI-74)', () => {
  async function all<T>(path: string, field: string): Promise<{ items: T[]; pages: number }> {
    const items: T[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await control<Record<string, unknown>>('GET', `${path}?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`);
      items.push(...(page[field] as T[]));
      cursor = page['next_cursor'] as string | null;
      pages += 1;
    } while (cursor !== null && pages < 50);
    return { items, pages };
  }

  it("lists the tool's courses with their schools and terms, a page at a time, and no other tool's", async () => {
    const { items, pages } = await all<{ id: string; school: string; title: string; label: string; history: string[] }>('/courses', 'courses');
    expect(pages).toBeGreaterThan(1);
    expect(new Set(items.map((c) => c.id)).size).toBe(items.length);
    expect(items.every((c) => c.id.startsWith(`sandbox-${appId}-`))).toBe(true);
    expect(items[0]).toMatchObject({ id: trial, school: `sandbox-${appId}` });
    expect(items.find((c) => c.title === 'Chemistry 110')).toMatchObject({ label: 'CHEM-110', school: `sandbox-${appId}` });
    expect(items.find((c) => c.id === `sandbox-${appId}-2-course`)).toMatchObject({ school: `sandbox-${appId}-2` });
    expect(items.find((c) => c.label === 'BIO-101-2027F')).toMatchObject({ history: [trial] });
  });

  it('lists the trial people and its own people with their enrolments in its courses only', async () => {
    const { items } = await all<{ sub: string; enrolments: { course_id: string; roles: string[] }[] }>('/users', 'people');
    const subs = items.map((p) => p.sub);
    expect(subs).toEqual(expect.arrayContaining(['sandbox-instructor', 'sandbox-student_1', 'sandbox-student_2']));
    expect(subs.every((sub) => /^sandbox-(instructor|assistant|manager|student_1|student_2)$/.test(sub) || sub.startsWith(`sandbox-${appId}-user-`))).toBe(true);
    expect(items.flatMap((p) => p.enrolments).every((e) => e.course_id.startsWith(`sandbox-${appId}-`))).toBe(true);
    const olu = items.find((p) => p.sub.startsWith(`sandbox-${appId}-user-`) && p.enrolments.length === 1);
    expect(olu?.enrolments[0]?.roles).toEqual([expect.stringContaining('Learner')]);
    expect(items.find((p) => p.sub === 'sandbox-student_1')?.enrolments.map((e) => e.course_id)).toContain(trial);
  });

  it('refuses a bad page the way every dashboard list does', async () => {
    expectProblem(await builder.call('GET', `/apps/${appId}/sandbox/lms/courses?cursor=nonsense`), 400, 'invalid_cursor', 'cursor is not valid for this list');
    const first = await control<{ next_cursor: string }>('GET', '/courses?limit=1');
    // A cursor of one list is not one of another.
    expectProblem(await builder.call('GET', `/apps/${appId}/sandbox/lms/users?cursor=${first.next_cursor}`), 400, 'invalid_cursor');
    expect((await builder.call('GET', `/apps/${appId}/sandbox/lms/users?limit=0`)).status).toBe(400);
  });
});

describe('a Sandbox LMS that cannot start', () => {
  it('answers 503 sandbox_lms_unavailable with Retry-After, never 500', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tis-lms-controls-'));
    // DATA_DIR names a file: the LMS's SQLite file cannot be made under it.
    const notADirectory = join(dir, 'not-a-directory');
    writeFileSync(notADirectory, '');
    const host = createSandboxLmsHost({ config: { ...server.services.config, dataDir: notADirectory, databaseUrl: null }, log: server.services.log });
    const previous = server.services.sandboxLms;
    server.services.sandboxLms = host;
    try {
      const fresh = (await register(builder)).appId;
      for (const refused of [await builder.call('GET', `/apps/${fresh}/sandbox/lms`), await platform('PATCH', '/sandbox/lms/settings', { launch_ttl_seconds: 60 })]) {
        expectProblem(refused, 503, 'sandbox_lms_unavailable', 'the Sandbox LMS is not available; retry shortly');
        expect(refused.headers.get('retry-after')).toBe('1');
      }
    } finally {
      host.close();
      server.services.sandboxLms = previous;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** `tis` itself (tests/bin's way: the CLI's own `run`) against the same server, token in the environment. */
async function tis(args: string[], token: string): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (l) => out.push(l), err: (l) => err.push(l) };
  const code = await run(args, { TIS_URL: server.url, TIS_TOKEN: token }, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('tis sandbox lms', () => {
  it('drives the controls through the dashboard API', async () => {
    const shown = await tis(['sandbox', 'lms', 'show', appId, '--json'], builder.token);
    expect(shown.code, shown.err).toBe(0);
    const trialCourse = (JSON.parse(shown.out) as { trial_course: string }).trial_course;
    const renamed = await tis(['sandbox', 'lms', 'rename', appId, trialCourse, '--title', 'Biology 102', '--label', 'BIO-102'], builder.token);
    expect(renamed).toMatchObject({ code: 0, out: `${trialCourse}: Biology 102 (BIO-102)` });

    const person = await tis(['sandbox', 'lms', 'user', appId, '--given-name', 'Cli', '--family-name', 'Person', '--email', 'cli@school.example'], builder.token);
    expect(person.code, person.err).toBe(0);
    const course = await tis(['sandbox', 'lms', 'course-add', appId, '--title', 'Physics', '--label', 'PHY-1', '--json'], builder.token);
    const courseId = (JSON.parse(course.out) as { id: string }).id;
    const enrolled = await tis(['sandbox', 'lms', 'enrol', appId, courseId, person.out, '--role', 'student'], builder.token);
    expect(enrolled.out).toContain(`${person.out}  Learner`);
    const linked = await tis(['sandbox', 'lms', 'link', appId, courseId, '--title', 'Lab 1', '--no-column', '--json'], builder.token);
    const linkId = (JSON.parse(linked.out) as { resource_links: { id: string; columns: unknown[] }[] }).resource_links[0]?.id ?? '';
    const launched = await tis(['sandbox', 'lms', 'launch', appId, person.out, '--link', linkId], builder.token);
    expect(launched.code, launched.err).toBe(0);
    expect(launched.out).toMatch(new RegExp(`^${server.url}/lms/launch/`));
    const copied = await tis(['sandbox', 'lms', 'copy', appId, courseId, '--with-enrolments'], builder.token);
    expect(copied.out).toMatch(new RegExp(`^copied into sandbox-${appId}-course-[0-9a-f]+ \\(history ${courseId}\\)$`));
    const school = await tis(['sandbox', 'lms', 'school', appId, '--title', 'Cli school'], builder.token);
    expect(school.out).toMatch(new RegExp(`^school sandbox-${appId}-\\d+ \\(Cli school\\) with course sandbox-${appId}-\\d+-course$`));

    // The LMS-wide controls are the platform team's.
    const byBuilder = await tis(['sandbox', 'lms', 'lifetimes', '--id-token', '5'], builder.token);
    expect(byBuilder).toMatchObject({ code: 1, err: "error: this operation takes the platform team's credential (HTTP 403)" });
    const token = platformToken(server);
    expect((await tis(['sandbox', 'lms', 'lifetimes', '--id-token', '5'], token)).out).toBe('access token 3600 s, id_token 5 s, launch link 300 s');
    expect((await tis(['sandbox', 'lms', 'lifetimes', '--reset'], token)).out).toBe('access token 3600 s, id_token 300 s, launch link 300 s');
    expect((await tis(['sandbox', 'lms', 'line-item-scope', 'withhold'], token)).out).toMatch(/withholds the line-item scope$/);
    expect((await tis(['sandbox', 'lms', 'line-item-scope', 'grant'], token)).out).toMatch(/grants the line-item scope$/);
    // The tool's own school's settings are its team's (LTI-71).
    const own = (args: string[]): Promise<{ code: number; out: string; err: string }> => tis(['sandbox', 'lms', 'school-settings', appId, ...args], builder.token);
    expect((await own(['--access-token', '5', '--line-item-scope', 'withhold'])).out).toBe(
      `school sandbox-${appId}: access token 5 s (own), id_token 300 s, launch link 300 s, line-item scope withheld (own)`,
    );
    expect((await own(['--access-token', 'lms'])).out).toBe(`school sandbox-${appId}: access token 3600 s, id_token 300 s, launch link 300 s, line-item scope withheld (own)`);
    expect((await own([])).out).toBe(`school sandbox-${appId}: access token 3600 s, id_token 300 s, launch link 300 s, line-item scope withheld (own)`);
    expect((await own(['--reset'])).out).toBe(`school sandbox-${appId}: access token 3600 s, id_token 300 s, launch link 300 s, line-item scope granted`);
    expect((await own(['--line-item-scope', 'maybe'])).code).toBe(2);
    expect((await own(['--reset', '--launch-link', '5'])).code).toBe(2);
    // The lists (LTI-74).
    const courses = await tis(['sandbox', 'lms', 'courses', appId, '--limit', '1'], builder.token);
    expect(courses.code, courses.err).toBe(0);
    expect(courses.out.split('\n')[0]).toMatch(/^COURSE\s+SCHOOL\s+LABEL\s+TITLE$/);
    expect(courses.out.split('\n')).toHaveLength(2);
    expect(courses.err).toMatch(/^More: repeat with --cursor \S+$/);
    const people = await tis(['sandbox', 'lms', 'people', appId, '--json'], builder.token);
    expect((JSON.parse(people.out) as { people: { sub: string }[] }).people.map((p) => p.sub)).toContain(person.out);
    expect((await tis(['sandbox', 'lms', 'link', appId, courseId, '--title', 'X', '--points', '5', '--no-column'], builder.token)).code).toBe(2);
  });
});
