/**
 * The whole LTI path between the reference LMS and the service, over real HTTP on loopback: the Sandbox's
 * LMS (in process under /lms, decision LTI-40) registers the service through Dynamic Registration; an
 * instructor's Deep Linking launch goes through the service's OIDC login and id_token validation to its
 * picker, whose signed response makes the LMS's resource link and gradebook column; a student's launch of
 * that link reaches the tool's callback; the tool's grade lands in the LMS's gradebook through AGS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxLmsClient } from '../../../server/sandbox/lms-client.js';
import { ensureLmsSandbox, sandboxTrialCourseId } from '../../../server/sandbox/lms-sandbox.js';
import type { TestServer, Tool } from '../harness.js';
import { createTool, startServer } from '../harness.js';
import type { ToolServer } from '../outbound/fixtures.js';
import { answer, setUrls, startToolServer, verifyToken } from '../outbound/fixtures.js';

function formOf(html: string): { action: string; fields: Record<string, string> } {
  const unescape = (t: string): string => t.replace(/&#(\d+);/g, (_m, c: string) => String.fromCharCode(Number(c))).replace(/&amp;/g, '&').replace(/&quot;/g, '"');
  const action = unescape(/<form[^>]*action="([^"]*)"/.exec(html)?.[1] ?? '');
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input[^>]*name="([^"]*)"[^>]*value="([^"]*)"/g)) fields[unescape(m[1] ?? '')] = unescape(m[2] ?? '');
  return { action, fields };
}

/**
 * A browser's way from an LMS launch URL to the service's answer to the id_token: the LMS's redirect to
 * the service's login, the service's redirect (with its state cookie) to the LMS's auth endpoint, and the
 * LMS's form_post of the id_token back to the service.
 */
async function throughOidc(launchUrl: string): Promise<Response> {
  const toLogin = await fetch(launchUrl, { redirect: 'manual' });
  expect(toLogin.status).toBe(302);
  const login = await fetch(toLogin.headers.get('location') ?? '', { redirect: 'manual' });
  expect(login.status, await login.clone().text()).toBe(302);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const auth = await fetch(login.headers.get('location') ?? '', { redirect: 'manual' });
  expect(auth.status).toBe(200);
  const form = formOf(await auth.text());
  expect(form.fields['id_token']).toBeTruthy();
  return fetch(form.action, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: cookie },
    body: new URLSearchParams(form.fields).toString(),
  });
}

describe('the reference LMS and the service, end to end', () => {
  let server: TestServer;
  let toolServer: ToolServer;
  let tool: Tool;
  let lms: SandboxLmsClient;
  beforeAll(async () => {
    server = await startServer({ config: { allowLoopbackTools: true, lmsAutoActivate: true } });
    toolServer = await startToolServer();
    toolServer.route('/launch', answer.text('launched', 200, 'text/html'));
    toolServer.route('/locations', answer.json({ locations: { 'quiz-1': { type: 'assessment', label: 'Quiz 1', points: 10 } } }));
    tool = await createTool(server, { name: 'Week quizzes' });
    await setUrls(server, tool.app.id, { callbackUrl: toolServer.url('/launch'), locationsUrl: toolServer.url('/locations') });
    const host = server.services.sandboxLms;
    await host.ready();
    lms = new SandboxLmsClient(host.issuer(), host.controlToken, host.transport);
  });
  afterAll(async () => {
    await toolServer?.close();
    await server?.stop();
  });

  it('registers, deep-links, launches and grades', async () => {
    const issuer = server.services.sandboxLms.issuer();
    // Dynamic Registration: the administrator's window opens the service's /lti/register.
    const initiated = await lms.initiateRegistration(`${server.url}/lti/register`);
    const registered = await fetch(initiated.url);
    expect(registered.status, await registered.clone().text()).toBe(200);
    expect(await registered.text()).toContain('org.imsglobal.lti.close');
    const { registrations } = await lms.registrations();
    expect(registrations).toHaveLength(1);
    const clientId = registrations[0]?.client_id ?? '';
    const deploymentId = registrations[0]?.deployments[0]?.deployment_id ?? '';
    const stored = await server.services.store.lti.findRegistration(issuer, clientId);
    expect(stored).toMatchObject({ status: 'active', tokenUrl: `${issuer}/token` });

    // A school's course with an instructor and a student.
    const course = await lms.createCourse({ deployment_id: deploymentId, title: 'Biology 101', label: 'BIO-101-2026F' });
    const irene = await lms.createUser({ given_name: 'Irene', family_name: 'Instructor', email: 'irene@school.example' });
    const sam = await lms.createUser({ given_name: 'Sam', family_name: 'Student', email: 'sam@school.example' });
    await lms.enrol(course.id, irene.sub, ['instructor']);
    await lms.enrol(course.id, sam.sub, ['student']);

    // Deep Linking: the service's picker answers the LMS with a signed response.
    const picker = await throughOidc((await lms.deepLink(course.id, irene.sub)).url);
    expect(picker.status, await picker.clone().text()).toBe(200);
    const pickerHtml = await picker.text();
    expect(pickerHtml).toContain('Week quizzes');
    const key = formOf(pickerHtml).fields['key'] ?? '';
    const choose = (fields: Record<string, string>): Promise<Response> =>
      fetch(`${server.url}/lti/deep-linking`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      });
    const locations = await choose({ key, app: tool.app.id });
    expect(await locations.text()).toContain('Quiz 1');
    const confirmed = await choose({ key, app: tool.app.id, confirm: '1', extid: 'quiz-1' });
    expect(confirmed.status).toBe(200);
    const response = formOf(await confirmed.text());
    expect(response.action).toBe(`${issuer}/deep-linking/return`);
    const returned = await fetch(response.action, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams({ JWT: response.fields['JWT'] ?? '' }).toString(),
    });
    expect(returned.status, await returned.clone().text()).toBe(200);
    const made = (await returned.json()) as { resource_links: { resource_link_id: string; line_item?: { id: string; scoreMaximum: number } }[] };
    expect(made.resource_links).toHaveLength(1);
    const link = made.resource_links[0];
    expect(link?.line_item).toMatchObject({ scoreMaximum: 10 });

    // The student's launch of the new link reaches the tool's callback, as a school of its own.
    const launched = await throughOidc((await lms.launch(link?.resource_link_id ?? '', sam.sub)).url);
    expect(launched.status, await launched.clone().text()).toBe(303);
    const page = await fetch(launched.headers.get('location') ?? '');
    expect(page.status).toBe(200);
    const toolForm = formOf(await page.text());
    expect(toolForm.action).toBe(toolServer.url('/launch'));
    const claims = await verifyToken(server, toolForm.fields['launch_data'] ?? '', tool.app.id);
    expect(claims['organization']).toMatchObject({ issuer, client: clientId, deployment: deploymentId });
    expect(claims['course']).toMatchObject({ name: 'Biology 101', label: 'BIO-101-2026F' });
    expect((claims['user'] as { groups: string[] }).groups).toEqual(['student']);

    // The tool grades the student: the score reaches the LMS's gradebook through AGS.
    const grade = claims['grade'] as { submit: string };
    const api = claims['api'] as { token: string };
    const submitted = await fetch(grade.submit, {
      method: 'POST',
      headers: { Authorization: `Bearer ${api.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ score: 0.8, comment: 'Well done' }),
    });
    const attempt = (await submitted.json()) as { status: string; submitted: string };
    expect(submitted.status, JSON.stringify(attempt)).toBe(200);
    expect(attempt.status).toBe('success');
    const book = await lms.gradebook(course.id);
    expect(book.columns[0]?.scores).toEqual([expect.objectContaining({ userId: sam.sub, scoreGiven: 8, scoreMaximum: 10, comment: 'Well done', timestamp: attempt.submitted })]);
  });

  it('a link a teacher adds by hand gets one gradebook column from the service, on the placing launch and under racing launches (issue 28)', async () => {
    const { registrations } = await lms.registrations();
    const deploymentId = registrations[0]?.deployments[0]?.deployment_id ?? '';
    const course = await lms.createCourse({ deployment_id: deploymentId, title: 'Chemistry 101', label: 'CHEM-101' });
    const ines = await lms.createUser({ given_name: 'Ines', family_name: 'Instructor', email: 'ines@school.example' });
    await lms.enrol(course.id, ines.sub, ['instructor']);
    const students = await Promise.all([1, 2, 3, 4].map((i) => lms.createUser({ given_name: `Stu${i}`, family_name: 'Dent', email: `stu${i}@school.example` })));
    for (const s of students) await lms.enrol(course.id, s.sub, ['student']);

    // The teacher's own link, no column: her first launch places the quiz through the picker and the
    // service creates the link's line item in the LMS.
    const byHand = await lms.createLink(course.id, { title: 'Quiz by hand', custom: {}, line_item: null });
    const picker = await throughOidc((await lms.launch(byHand.id, ines.sub)).url);
    const key = formOf(await picker.text()).fields['key'] ?? '';
    const choose = (fields: Record<string, string>): Promise<Response> =>
      fetch(`${server.url}/lti/deep-linking`, { method: 'POST', redirect: 'manual', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
    await (await choose({ key, app: tool.app.id })).text();
    const placed = await choose({ key, app: tool.app.id, confirm: '1', extid: 'quiz-1' });
    expect(placed.status).toBe(303);
    const teacherClaims = await verifyToken(server, formOf(await (await fetch(placed.headers.get('location') ?? '')).text()).fields['launch_data'] ?? '', tool.app.id);
    expect((teacherClaims['grade'] as { submit: string | null }).submit).toMatch(/\/scores$/);
    expect((await lms.link(byHand.id)).line_items).toEqual([expect.objectContaining({ label: 'Quiz 1', scoreMaximum: 10 })]);

    // A second hand-made link naming a placement with no column: four students' first launches race.
    const school = await server.services.store.organizations.find(server.services.sandboxLms.issuer(), registrations[0]?.client_id ?? '', deploymentId);
    const context = await server.services.store.contexts.findByExternal(school?.id ?? '', course.id);
    const first = await server.services.store.placements.get((await server.services.store.lti.findResourceLink(school?.id ?? '', byHand.id)) ?? '');
    const second = await server.services.launches.place({ appId: tool.app.id, contextId: context?.id ?? '', locationId: first?.locationId ?? '' });
    const raced = await lms.createLink(course.id, { title: 'Quiz, second sitting', custom: { tis_placement: second.resourceLink }, line_item: null });
    const claims = await Promise.all(
      students.map(async (s) => {
        const launched = await throughOidc((await lms.launch(raced.id, s.sub)).url);
        expect(launched.status, await launched.clone().text()).toBe(303);
        return verifyToken(server, formOf(await (await fetch(launched.headers.get('location') ?? '')).text()).fields['launch_data'] ?? '', tool.app.id);
      }),
    );
    expect((await lms.link(raced.id)).line_items).toHaveLength(1);
    const submits = claims.map((c) => (c['grade'] as { submit: string | null }).submit);
    expect(submits.every((u) => typeof u === 'string')).toBe(true);
    const graded = await fetch(submits[0] as string, {
      method: 'POST',
      headers: { Authorization: `Bearer ${(claims[0]?.['api'] as { token: string }).token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ score: 0.5 }),
    });
    expect(((await graded.json()) as { status: string }).status).toBe('success');
    const column = (await lms.gradebook(course.id)).columns.find((c) => c.resourceLinkId === raced.id);
    expect(column?.scores).toEqual([expect.objectContaining({ userId: students[0]?.sub, scoreGiven: 5 })]);
  });

  it("makes the LMS side of a tool's Sandbox once, and its staff's launches land in that school and course", async () => {
    const course = { title: 'Sandbox course', label: 'SANDBOX-2026F', schoolTitle: 'Sandbox School' };
    const [first, second] = await Promise.all([ensureLmsSandbox(server.services, tool.app.id, course), ensureLmsSandbox(server.services, tool.app.id, course)]);
    expect(second).toEqual(first);
    expect(first).toMatchObject({ deploymentId: `sandbox-${tool.app.id}`, courseId: sandboxTrialCourseId(tool.app.id) });
    const made = await lms.course(first.courseId);
    expect(made).toMatchObject({ deployment_id: first.deploymentId, title: 'Sandbox course', label: 'SANDBOX-2026F' });
    expect(made.enrolments.map((e) => e.sub)).toEqual(['sandbox-assistant', 'sandbox-instructor', 'sandbox-manager', 'sandbox-student_1', 'sandbox-student_2']);
    expect((await ensureLmsSandbox(server.services, tool.app.id, course)).courseId).toBe(first.courseId);

    const issuer = server.services.sandboxLms.issuer();
    for (const role of ['instructor', 'assistant', 'manager'] as const) {
      // Every staff role opens the picker: each LIS role maps to its group (LTI-11).
      const picker = await throughOidc((await lms.deepLink(first.courseId, `sandbox-${role}`)).url);
      expect(picker.status, await picker.clone().text()).toBe(200);
      expect(await picker.text()).toContain('Week quizzes');
    }
    const school = await server.services.store.organizations.find(issuer, first.registration.clientId, first.deploymentId);
    expect(school).not.toBeNull();
    const context = await server.services.store.contexts.findByExternal(school?.id ?? '', first.courseId);
    expect(context).toMatchObject({ name: 'Sandbox course', label: 'SANDBOX-2026F' });
    for (const [role, group] of [['instructor', 'instructor'], ['assistant', 'assistant'], ['manager', 'manager']] as const) {
      const user = await server.services.store.users.findByExternal(school?.id ?? '', `sandbox-${role}`);
      const member = user && context ? await server.services.store.members.find(context.id, user.id) : null;
      expect(member?.groups, role).toEqual([group]);
    }
  });
});
