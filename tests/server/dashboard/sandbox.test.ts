/**
 * The Sandbox over real HTTP against a real tool on loopback (decisions GAP-24, GAP-38, GAP-39, S-09 to
 * S-12): register, set URLs, open the picker (the tool's locations URL is called as the trial instructor),
 * place an assessment (column + provision requests; the tool answers 204 and PUTs its provision URLs),
 * launch as a student (the launch page's form is posted to the callback URL as the browser would), submit
 * a score with the launch's api.token, read the Grades tab and the grade history; reset (everything the
 * tool stored is gone and the next launch provisions again); copy (provision requests name the parent).
 * Plus every error the Sandbox operations list.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { claimErrors } from '../core/claims-schema.js';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import type { RecordedRequest, Route, ToolServer } from '../outbound/fixtures.js';
import { answer, startToolServer, verifyToken } from '../outbound/fixtures.js';
import type { Builder, Caller } from './helpers.js';
import { caller, createBuilder, expectProblem, platformToken, register } from './helpers.js';
import { launchPageOf } from '../sandbox/launch-chain.js';
import { sandboxLmsClient } from '../../../server/sandbox/lms-registration.js';
import { LINE_ITEM_SCOPE_WITHHELD } from '../../../server/scores/index.js';

const LOCATIONS = {
  message: 'Pick <b>what</b> to add',
  locations: {
    'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 20 },
    'reading-1': { type: 'content', label: 'Week 1 reading' },
  },
  grouped_locations: [{ label: 'Extras', locations: { 'quiz-2': { type: 'assessment', label: 'Bonus quiz' } } }],
};

let server: TestServer;
let tool: ToolServer;
let platform: Caller;
let builder: Builder;
let locationsRoute: Route = answer.json(LOCATIONS);
/** Whether the tool PUTs its provision URLs after accepting a provision request. */
let completeProvisioning = true;

type Json = Record<string, unknown>;

async function claimsOf(request: RecordedRequest, appId: string): Promise<Json> {
  return verifyToken(server, request.form.get('launch_data') ?? '', appId);
}

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, locationsTimeoutMs: 2000, provisionTimeoutMs: 2000 } });
  tool = await startToolServer();
  platform = caller(server, platformToken(server));
  builder = await createBuilder(server, platform, 'Sandbox Builder');
  tool.route('/locations', (req, res, recorded) => locationsRoute(req, res, recorded));
  tool.route('/launch', answer.text('<!DOCTYPE html><title>Quiz</title>', 200, 'text/html'));
  tool.route('/provision', answer.provisioning(() => completeProvisioning));
});
afterAll(async () => {
  await tool?.close();
  await server?.stop();
});
beforeEach(() => {
  locationsRoute = answer.json(LOCATIONS);
  completeProvisioning = true;
});

async function newTool(): Promise<string> {
  const { appId } = await register(builder);
  const set = await builder.call('PATCH', `/apps/${appId}`, {
    callback_url: tool.url('/launch'),
    provision_url: tool.url('/provision'),
    locations_url: tool.url('/locations'),
  });
  expect(set.status).toBe(200);
  return appId;
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 100; i += 1) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  throw new Error('condition not reached');
}

interface Placement {
  id: string;
  context_id: string;
  resource_link: string;
  line_item_id: string | null;
  location: Json;
  provisioning: { context: string; location: string; error: string | null };
}

async function provisioned(appId: string, contextId?: string): Promise<Placement[]> {
  const query = contextId ? `?context_id=${contextId}` : '';
  const read = async (): Promise<Placement[]> => (await builder.call<{ placements: Placement[] }>('GET', `/apps/${appId}/sandbox/placements${query}`)).body.placements;
  return until(read, (list) => list.every((p) => p.provisioning.context === 'provisioned' && p.provisioning.location === 'provisioned'));
}

/** Opens the launch link as a browser would, and submits its form to the tool as the page's script does. */
async function openAndSubmit(launchUrl: string): Promise<{ status: number; html: string; posted: RecordedRequest | null }> {
  const page = await fetch(launchUrl);
  const html = await page.text();
  if (page.status !== 200) return { status: page.status, html, posted: null };
  const action = /<form id="launch" method="post" action="([^"]+)"/.exec(html)?.[1];
  const launchData = /name="launch_data" value="([^"]+)"/.exec(html)?.[1];
  if (!action || !launchData) throw new Error(`no launch form in:\n${html}`);
  expect(html).toContain("document.getElementById('launch').submit();");
  const before = tool.to('/launch').length;
  const posted = await fetch(action.replace(/&amp;/g, '&'), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ launch_data: launchData }).toString(),
  });
  expect(posted.status).toBe(200);
  return { status: 200, html, posted: tool.to('/launch')[before] ?? null };
}

async function launchAs(appId: string, placementId: string, as: string): Promise<Json> {
  const ticket = await builder.call<{ launch_url: string; expires: string }>('POST', `/apps/${appId}/sandbox/placements/${placementId}/launches`, { as });
  expect(ticket.status).toBe(201);
  expect(ticket.headers.get('cache-control')).toBe('no-store');
  // The LMS's launch URL (LTI-45): its chain through OIDC login ends on the launch page.
  expect(ticket.body.launch_url).toMatch(new RegExp(`^${server.url}/lms/launch/[^/]+$`));
  const launchPage = await launchPageOf(ticket.body.launch_url);
  expect(launchPage).toMatch(new RegExp(`^${server.url}/launch/[A-Za-z0-9_-]{43}$`));
  const opened = await until(() => openAndSubmit(launchPage), (o) => o.status !== 202);
  expect(opened.status).toBe(200);
  return claimsOf(opened.posted as RecordedRequest, appId);
}

describe('the whole flow', () => {
  it('picker, placement, provisioning, launch, score, Grades tab, history; reset; copy', async () => {
    const appId = await newTool();

    // The Sandbox as created with the tool.
    const fresh = await builder.call<Json & { users: Record<string, Json>; organization: Json }>('GET', `/apps/${appId}/sandbox`);
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({ app_id: appId, provisioning: null, placements: [], copies: [], last_reset: null, school: { grants_line_item_scope: true } });
    // The deployment sandbox-<app_id> of the service's registration with its Sandbox LMS (LTI-44).
    const registration = await server.services.store.lti.listRegistrationsByIssuer(`${server.url}/lms`);
    expect(fresh.body.organization).toMatchObject({ issuer: `${server.url}/lms`, client: registration[0]?.clientId, deployment: `sandbox-${appId}` });
    expect(Object.values(fresh.body.users).map((u) => u['groups'])).toEqual([['instructor'], ['assistant'], ['manager'], ['student'], ['student']]);
    const trial = String(fresh.body['context']);
    const users = fresh.body.users as Record<string, { member_id: string; user_id: string }>;

    // The picker calls the locations URL as the trial instructor.
    const sinceLocations = tool.to('/locations').length;
    const picker = await builder.call<Json & { locations: Json[]; groups: Array<Json & { locations: Json[] }> }>('POST', `/apps/${appId}/sandbox/picker`);
    expect(picker.status).toBe(200);
    expect(picker.body).toMatchObject({ context_id: trial, message: 'Pick what to add' });
    expect(picker.body.locations.map((l) => [l['extid'], l['type'], l['points']])).toEqual([['quiz-1', 'assessment', 20], ['reading-1', 'content', null]]);
    expect(picker.body.groups[0]).toMatchObject({ label: 'Extras', count: 1 });
    const locationsRequest = tool.to('/locations')[sinceLocations] as RecordedRequest;
    const locationsClaims = await claimsOf(locationsRequest, appId);
    expect(claimErrors('LocationsClaims', locationsClaims)).toEqual([]);
    expect(locationsClaims).toMatchObject({ context: trial, user: { member: users['instructor']?.member_id } });

    // Placing the assessment: its column, and both provision requests at once.
    const sinceProvision = tool.to('/provision').length;
    const placed = await builder.call<Placement>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' });
    expect(placed.status).toBe(201);
    expect(placed.headers.get('location')).toBe(`/dashboard/v1/apps/${appId}/sandbox/placements?context_id=${trial}`);
    expect(placed.body).toMatchObject({ context_id: trial, location: { extid: 'quiz-1', type: 'assessment', label: 'Week 1 quiz', points: 20 } });
    // The column the Sandbox's LMS made for the placement's resource link, by its AGS URL (LTI-45).
    expect(placed.body.line_item_id).toMatch(new RegExp(`^${server.url}/lms/`));
    const provisionRequests = tool.to('/provision').slice(sinceProvision);
    expect(provisionRequests).toHaveLength(2);
    const [courseLevel, locationLevel] = await Promise.all(provisionRequests.map((r) => claimsOf(r, appId)));
    expect(courseLevel).toMatchObject({ context: trial, location: null });
    expect(locationLevel).toMatchObject({ context: trial, location: { extid: 'quiz-1' } });
    const [ready] = await provisioned(appId);
    expect(ready).toMatchObject({ id: placed.body.id, provisioning: { context: 'provisioned', location: 'provisioned', error: null } });

    // A student's launch, through the launch page, to the callback URL.
    const claims = await launchAs(appId, placed.body.id, 'student_1');
    expect(claimErrors('LaunchClaims', claims)).toEqual([]);
    expect(claims).toMatchObject({ context: trial, resource_link: placed.body.resource_link, user: { member: users['student_1']?.member_id, groups: ['student'] } });
    const apiToken = (claims['api'] as { token: string }).token;
    const submit = (claims['grade'] as { submit: string }).submit;
    expect(submit).toContain(`/members/${users['student_1']?.member_id}/scores`);

    // The tool keeps a row and submits a score with the launch's api.token.
    const memberRow = (claims['storage'] as { member: string }).member;
    const wrote = await fetch(memberRow, { method: 'PUT', headers: { Authorization: `Bearer ${apiToken}`, 'Content-Type': 'application/json' }, body: '{"answers":[1,2]}' });
    expect(wrote.status).toBe(204);
    const scored = await fetch(submit, { method: 'POST', headers: { Authorization: `Bearer ${apiToken}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ score: 0.8, comment: 'Well done' }) });
    expect(scored.status).toBe(200);
    const attempt = (await scored.json()) as Json;
    expect(attempt['status']).toBe('success');

    const grades = await builder.call<{ context_id: string; columns: Array<Json & { scores: Json[] }> }>('GET', `/apps/${appId}/sandbox/grades`);
    expect(grades.status).toBe(200);
    expect(grades.body.context_id).toBe(trial);
    expect(grades.body.columns).toHaveLength(1);
    expect(grades.body.columns[0]).toMatchObject({ line_item_id: placed.body.line_item_id, placement_id: placed.body.id, label: 'Week 1 quiz', score_maximum: 20 });
    expect(grades.body.columns[0]?.scores).toEqual([
      expect.objectContaining({ role: 'student_1', member_id: users['student_1']?.member_id, score_given: 16, score_maximum: 20, comment: 'Well done', timestamp: attempt['submitted'] }),
    ]);
    const history = await builder.call<{ attempts: Json[] }>('GET', `/apps/${appId}/grades?context_id=${trial}`);
    expect(history.body.attempts.map((a) => a['id'])).toEqual([attempt['id']]);

    // Reset: the stored data, tokens and unused tickets go, the course and its placements stay.
    // (The ticket is minted when the LMS launch reaches the service: a link opened but not launched.)
    const unused = await builder.call<{ launch_url: string }>('POST', `/apps/${appId}/sandbox/placements/${placed.body.id}/launches`, { as: 'manager' });
    const unusedPage = await launchPageOf(unused.body.launch_url);
    const sinceReset = tool.to('/provision').length;
    expect((await builder.call('POST', `/apps/${appId}/sandbox/reset`)).status).toBe(204);
    expect((await fetch(unusedPage)).status).toBe(404);
    const afterReset = await builder.call<Json & { placements: Placement[] }>('GET', `/apps/${appId}/sandbox`);
    expect(afterReset.body).toMatchObject({ context: trial, provisioning: null, copies: [] });
    expect(afterReset.body['last_reset']).toEqual(expect.any(String));
    expect(afterReset.body.placements.map((p) => [p.id, p.resource_link, p.line_item_id])).toEqual([[placed.body.id, placed.body.resource_link, placed.body.line_item_id]]);
    expect(afterReset.body.placements[0]?.provisioning).toMatchObject({ context: 'pending', location: 'pending' });
    const oldToken = await fetch(memberRow, { headers: { Authorization: `Bearer ${apiToken}` } });
    expect(oldToken.status).toBe(401);
    expect(((await oldToken.json()) as Json)['detail']).toBe('Invalid bearer token');
    const emptied = await builder.call<{ columns: Array<{ scores: Json[]; line_item_id: string }> }>('GET', `/apps/${appId}/sandbox/grades`);
    expect(emptied.body.columns.map((c) => [c.line_item_id, c.scores])).toEqual([[placed.body.line_item_id, []]]);
    expect((await builder.call<{ attempts: Json[] }>('GET', `/apps/${appId}/grades`)).body.attempts).toHaveLength(1);
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' }), 409, 'picker_not_opened', `no picker answer for context ${trial}: open the picker first`);

    // The next launch provisions again, and the tool finds no row.
    const again = await launchAs(appId, placed.body.id, 'student_1');
    const levels = await Promise.all(tool.to('/provision').slice(sinceReset).map((r) => claimsOf(r, appId)));
    expect(levels.map((c) => (c['location'] === null ? 'course' : 'location'))).toEqual(['course', 'location']);
    const newToken = (again['api'] as { token: string }).token;
    const row = await fetch(memberRow, { headers: { Authorization: `Bearer ${newToken}` } });
    expect(row.status).toBe(200);
    expect(await row.json()).toEqual({});

    // A copy: new course, same people, new memberships; its provision requests name the parent.
    const copied = await builder.call<Json & { users: Record<string, { member_id: string; user_id: string }> }>('POST', `/apps/${appId}/sandbox/copies`);
    expect(copied.status).toBe(201);
    const copy = String(copied.body['context']);
    const term = /^SANDBOX-(\d{4})([SF])$/.exec(String((fresh.body['course'] as Json)['label']));
    expect(term).not.toBeNull();
    const nextTerm = term?.[2] === 'S' ? `SANDBOX-${term[1]}F` : `SANDBOX-${Number(term?.[1]) + 1}S`;
    expect(copied.body).toMatchObject({ parent_context: trial, course: { name: 'Sandbox course', label: nextTerm }, provisioning: null });
    expect(copied.body.users['student_1']?.user_id).toBe(users['student_1']?.user_id);
    expect(copied.body.users['student_1']?.member_id).not.toBe(users['student_1']?.member_id);
    // In the Sandbox's LMS, a course copy of the trial course, its history naming it, the trial users enrolled (LTI-47).
    const lmsCopy = await sandboxLmsClient(server.services).course((await server.services.store.contexts.get(copy))?.externalId ?? '');
    expect(lmsCopy).toMatchObject({ history: [`sandbox-${appId}-trial`], deployment_id: `sandbox-${appId}`, resource_links: [] });
    expect(lmsCopy.enrolments).toHaveLength(5);
    const copyPicker = await builder.call('POST', `/apps/${appId}/sandbox/picker`, { context_id: copy });
    expect(copyPicker.body['context_id']).toBe(copy);
    const sinceCopy = tool.to('/provision').length;
    const inCopy = await builder.call<Placement>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1', context_id: copy, label: 'Quiz, again' });
    expect(inCopy.status).toBe(201);
    expect(inCopy.body).toMatchObject({ context_id: copy, location: { id: placed.body.location['id'], label: 'Quiz, again' } });
    const [copyCourse, copyLocation] = await Promise.all(tool.to('/provision').slice(sinceCopy).map((r) => claimsOf(r, appId)));
    const urls = server.services.launches.urls;
    expect(copyCourse?.['storage']).toEqual({ context: urls.contextRow(copy, appId), location: null, parent_context: urls.contextRow(trial, appId) });
    expect(copyLocation?.['storage']).toMatchObject({
      parent_context: urls.contextRow(trial, appId),
      parent_location: urls.locationRow(trial, appId, String(placed.body.location['id'])),
    });
    await provisioned(appId, copy);
    const instructorInCopy = await launchAs(appId, inCopy.body.id, 'instructor');
    expect(instructorInCopy).toMatchObject({ context: copy, user: { member: copied.body.users['instructor']?.member_id, groups: ['instructor'] } });
    const listed = await builder.call<{ copies: Json[]; placements: Placement[] }>('GET', `/apps/${appId}/sandbox`);
    expect(listed.body.copies.map((c) => c['context'])).toEqual([copy]);
    expect(listed.body.placements.map((p) => p.context_id)).toEqual([trial, copy]);

    // A copy of the copy names the copy; a reset takes every copy away.
    const second = await builder.call<Json>('POST', `/apps/${appId}/sandbox/copies`, { parent_context: copy, course: { name: 'Next term', label: 'SANDBOX-2027S' } });
    expect(second.body).toMatchObject({ parent_context: copy, course: { name: 'Next term', label: 'SANDBOX-2027S' } });
    // A copy without a label is a course without one, in the service and in the LMS (not the parent's label).
    const unlabelled = await builder.call<Json>('POST', `/apps/${appId}/sandbox/copies`, { parent_context: copy, course: { name: 'No label' } });
    expect(unlabelled.status).toBe(201);
    expect(unlabelled.body).toMatchObject({ course: { name: 'No label', label: null } });
    const unlabelledId = String(unlabelled.body['context']);
    const lmsUnlabelled = await sandboxLmsClient(server.services).course((await server.services.store.contexts.get(unlabelledId))?.externalId ?? '');
    expect(lmsUnlabelled).toMatchObject({ title: 'No label', label: '' });
    await builder.call('POST', `/apps/${appId}/sandbox/picker`, { context_id: unlabelledId });
    const inUnlabelled = await builder.call<Placement>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1', context_id: unlabelledId });
    expect(inUnlabelled.status, JSON.stringify(inUnlabelled.body)).toBe(201);
    await provisioned(appId, unlabelledId);
    expect(await launchAs(appId, inUnlabelled.body.id, 'student_1')).toMatchObject({ context: unlabelledId, course: { name: 'No label', label: null } });
    expect((await builder.call('POST', `/apps/${appId}/sandbox/reset`)).status).toBe(204);
    expect((await builder.call<{ copies: Json[] }>('GET', `/apps/${appId}/sandbox`)).body.copies).toEqual([]);
    expectProblem(await builder.call('GET', `/apps/${appId}/sandbox/placements?context_id=${copy}`), 404, 'sandbox_context_not_found', `context ${copy} is not a Sandbox course of app ${appId}`);
  });

  it('launches as every trial user; staff carry their names, students do not', async () => {
    const appId = await newTool();
    await builder.call('POST', `/apps/${appId}/sandbox/picker`);
    const placed = await builder.call<Placement>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'reading-1' });
    expect(placed.body.line_item_id).toBeNull();
    await provisioned(appId);
    const people = [
      ['instructor', 'instructor', 'Irene Instructor'],
      ['assistant', 'assistant', 'Ari Assistant'],
      ['manager', 'manager', 'Mona Manager'],
      ['student_1', 'student', null],
      ['student_2', 'student', null],
    ] as const;
    for (const [as, group, fullName] of people) {
      const claims = await launchAs(appId, placed.body.id, as);
      expect(claims['user']).toMatchObject({ groups: [group], full_name: fullName });
      expect((claims['user'] as Json)['email'] === null).toBe(fullName === null);
      expect(claims['grade']).toEqual({ submit: null });
    }
  });

  it('a school withholding the line-item scope: the score publishes, a max_score attempt fails', async () => {
    const appId = await newTool();
    const withheld = await builder.call('PUT', `/apps/${appId}/sandbox/school`, { grants_line_item_scope: false });
    expect(withheld.body).toEqual({ grants_line_item_scope: false });
    expect((await builder.call<{ school: Json }>('GET', `/apps/${appId}/sandbox`)).body.school).toEqual({ grants_line_item_scope: false });
    // One tool's answer is its own school's: another tool's Sandbox on the same LMS still grants it (LTI-51).
    const other = await newTool();
    expect((await builder.call<{ school: Json }>('GET', `/apps/${other}/sandbox`)).body.school).toEqual({ grants_line_item_scope: true });
    await builder.call('POST', `/apps/${appId}/sandbox/picker`);
    const placed = await builder.call<Placement>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' });
    await provisioned(appId);
    const claims = await launchAs(appId, placed.body.id, 'student_2');
    const auth = { Authorization: `Bearer ${(claims['api'] as { token: string }).token}`, 'Content-Type': 'application/json' };
    const submit = (claims['grade'] as { submit: string }).submit;
    const plain = await fetch(submit, { method: 'POST', headers: auth, body: '{"score":0.5}' });
    expect(((await plain.json()) as Json)['status']).toBe('success');
    const withMax = await fetch(submit, { method: 'POST', headers: auth, body: '{"score":0.5,"max_score":40}' });
    const failed = (await withMax.json()) as Json & { data: { error: string } };
    expect(failed['status']).toBe('failed');
    expect(failed.data.error).toBe(LINE_ITEM_SCOPE_WITHHELD);
    const granted = await builder.call('PUT', `/apps/${appId}/sandbox/school`, { grants_line_item_scope: true });
    expect(granted.body).toEqual({ grants_line_item_scope: true });
  });
});

describe('the Sandbox of a tool registered before it had one', () => {
  it('is made on first use, once, however many requests race for it', async () => {
    const created = await server.services.store.apps.create({ name: 'Older tool', hosting: 'self_hosted', builderId: builder.id });
    const appId = created.app.id;
    const answers = await Promise.all(Array.from({ length: 6 }, () => builder.call<Json>('GET', `/apps/${appId}/sandbox`)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(new Set(answers.map((a) => a.body['context'])).size).toBe(1);
    expect(await server.services.store.contexts.listSandbox(appId)).toHaveLength(1);
  });
});

describe('errors', () => {
  it('picker: 409 without a locations URL, 502 with the instructor\'s message, and nothing placeable after', async () => {
    const { appId } = await register(builder);
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/picker`), 409, 'no_locations_url', 'App does not have a locations_url configured');
    await builder.call('PATCH', `/apps/${appId}`, { locations_url: tool.url('/locations') });
    expect((await builder.call('POST', `/apps/${appId}/sandbox/picker`)).status).toBe(200);
    locationsRoute = answer.status(503);
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/picker`), 502, 'locations_http_error', 'app failed to provide the available locations (HTTP 503)');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' }), 409, 'picker_not_opened');
    locationsRoute = answer.text('not json');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/picker`), 502, 'locations_invalid_json', 'the app returned invalid JSON');
    locationsRoute = answer.redirect('https://elsewhere.example/');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/picker`), 502, 'locations_redirect');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/picker`, { context_id: 'ctx_nothing' }), 404, 'sandbox_context_not_found', `context ctx_nothing is not a Sandbox course of app ${appId}`);
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/picker`, { course: 'x' }), 422, 'unknown_field', 'unknown field: course');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/picker`, undefined, { raw: '{' }), 400, 'malformed_json');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/picker`, undefined, { raw: 'x', contentType: 'text/plain' }), 415, 'unsupported_media_type');
  });

  it('placements: 422 for the body, 404 for a course of no Sandbox', async () => {
    const appId = await newTool();
    await builder.call('POST', `/apps/${appId}/sandbox/picker`);
    const trial = String((await builder.call('GET', `/apps/${appId}/sandbox`)).body['context']);
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements`, {}), 422, 'field_required', 'extid is required');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-9' }), 422, 'extid_not_offered', `extid quiz-9 was not in the last picker answer for context ${trial}`);
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1', label: ' ' }), 422, 'field_blank', 'label cannot be blank');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1', label: '<b></b>' }), 422, 'field_blank', 'label cannot be blank');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1', context_id: 'ctx_x' }), 404, 'sandbox_context_not_found');
    expectProblem(await builder.call('GET', `/apps/${appId}/sandbox/placements?context_id=ctx_x`), 404, 'sandbox_context_not_found');
    expectProblem(await builder.call('GET', `/apps/${appId}/sandbox/grades?context_id=ctx_x`), 404, 'sandbox_context_not_found');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements`, undefined, { raw: '{' }), 400, 'malformed_json');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements`, undefined, { raw: 'x', contentType: 'text/plain' }), 415, 'unsupported_media_type');
    // Another tool's Sandbox course is not this tool's.
    const other = await newTool();
    const otherTrial = String((await builder.call('GET', `/apps/${other}/sandbox`)).body['context']);
    expectProblem(await builder.call('GET', `/apps/${appId}/sandbox/placements?context_id=${otherTrial}`), 404, 'sandbox_context_not_found');
  });

  it('launches: 404 for a placement of no Sandbox of the tool, 422 for `as`', async () => {
    const appId = await newTool();
    await builder.call('POST', `/apps/${appId}/sandbox/picker`);
    const placed = await builder.call<Placement>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' });
    const other = await newTool();
    expectProblem(await builder.call('POST', `/apps/${other}/sandbox/placements/${placed.body.id}/launches`, { as: 'student_1' }), 404, 'placement_not_found', `placement ${placed.body.id} is not in the Sandbox of app ${other}`);
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements/${placed.body.id}/launches`, { as: 'teacher' }), 422, 'invalid_enum', 'as must be one of [instructor, assistant, manager, student_1, student_2]');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements/${placed.body.id}/launches`, {}), 422, 'field_required', 'as is required');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements/${placed.body.id}/launches`, undefined, { raw: '{' }), 400, 'malformed_json');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/placements/${placed.body.id}/launches`, undefined, { raw: 'as=x', contentType: 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type');
  });

  it('copies, school: 422 for the body; 404 for an unknown parent', async () => {
    const appId = await newTool();
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/copies`, { course: { name: '  ' } }), 422, 'field_blank', 'course.name cannot be blank');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/copies`, { course: {} }), 422, 'field_required', 'course.name is required');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/copies`, { name: 'x' }), 422, 'unknown_field', 'unknown field: name');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/copies`, { parent_context: 'ctx_none' }), 404, 'sandbox_context_not_found');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/copies`, undefined, { raw: '{' }), 400, 'malformed_json');
    expectProblem(await builder.call('POST', `/apps/${appId}/sandbox/copies`, undefined, { raw: 'x', contentType: 'text/plain' }), 415, 'unsupported_media_type');
    expectProblem(await builder.call('PUT', `/apps/${appId}/sandbox/school`, { grants_line_item_scope: 'no' }), 422, 'invalid_type', 'grants_line_item_scope must be a boolean');
    expectProblem(await builder.call('PUT', `/apps/${appId}/sandbox/school`, {}), 422, 'invalid_type', 'grants_line_item_scope must be a boolean');
    expectProblem(await builder.call('PUT', `/apps/${appId}/sandbox/school`, undefined, { raw: '{' }), 400, 'malformed_json');
    expectProblem(await builder.call('PUT', `/apps/${appId}/sandbox/school`, undefined, { raw: 'x', contentType: 'text/plain' }), 415, 'unsupported_media_type');
  });

  it('a suspended tool\'s Sandbox answers 409 on every operation; activated, it opens again', async () => {
    const appId = await newTool();
    await builder.call('POST', `/apps/${appId}/sandbox/picker`);
    const placed = await builder.call<Placement>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' });
    await platform('POST', `/apps/${appId}/suspend`);
    const detail = `tool ${appId} is suspended: its Sandbox is closed until the platform team activates it`;
    const calls: Array<[string, string, unknown]> = [
      ['GET', '/sandbox', undefined],
      ['PUT', '/sandbox/school', { grants_line_item_scope: false }],
      ['POST', '/sandbox/picker', undefined],
      ['GET', '/sandbox/placements', undefined],
      ['POST', '/sandbox/placements', { extid: 'quiz-1' }],
      ['POST', `/sandbox/placements/${placed.body.id}/launches`, { as: 'student_1' }],
      ['POST', '/sandbox/copies', undefined],
      ['POST', '/sandbox/reset', undefined],
      ['GET', '/sandbox/grades', undefined],
    ];
    for (const [method, path, body] of calls) expectProblem(await builder.call(method, `/apps/${appId}${path}`, body), 409, 'sandbox_suspended', detail);
    await platform('POST', `/apps/${appId}/activate`);
    expect((await builder.call('GET', `/apps/${appId}/sandbox`)).status).toBe(200);
  });

  it('a provision request that fails does not undo the placement (201, failed, the reason)', async () => {
    const { appId } = await register(builder);
    await builder.call('PATCH', `/apps/${appId}`, { locations_url: tool.url('/locations'), provision_url: tool.url('/nothing-here'), callback_url: tool.url('/launch') });
    await builder.call('POST', `/apps/${appId}/sandbox/picker`);
    const placed = await builder.call<Placement>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'quiz-1' });
    expect(placed.status).toBe(201);
    expect(placed.body.provisioning).toEqual({ context: 'failed', location: 'failed', error: 'app failed to accept the provision request (HTTP 404)' });
  });
});
