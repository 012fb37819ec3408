/**
 * The web dashboard in Chromium, on one service and one browser (decision CI-41).
 *
 * End to end with the example quiz tool, through the web dashboard only, on a fresh install: a builder
 * registers a tool and sets its URLs (a URL the rules refuse shows the service's message), the platform team
 * activates it, the builder opens the Sandbox picker, places an assessment and launches it as a student. The
 * launch page hands the browser to the example quiz tool, a real process on loopback, which stores a row and
 * a file and submits a score; the Grades tab shows the score. The row, the file and the score are then read
 * back through the APIs. Afterwards: key rotation, a copy of the trial course and a reset, each as the page
 * shows it (what a reset does to the next launch is tests/server/dashboard/sandbox.test.ts's, CI-44).
 *
 * At 420 px and 1280 px wide (issue 17 §3, §4): the platform team creates a builder and an operator from the
 * web page (tokens shown once, with a copy button that really copies), the builder registers a tool (the API
 * key's copy button), sets its URLs, places a location (the provisioning labels follow the state without a
 * reload), a launch scores, and the Grades tab and the audit log show it. Then the LMS registrations page
 * (issue 13; decisions LTI-06, LTI-07, LTI-62): a Moodle-shaped LMS registers itself (Dynamic Registration)
 * and shows pending, the platform team activates and deactivates it from the page, registers a
 * Blackboard-shaped LMS by hand (a refused URL shows the service's message) and adds an institution's
 * deployment; a refused launch's report ID is listed on the registration and found by the search (issue 28);
 * the Sandbox's own registration is shown apart with no Deactivate (LTI-100). Each of these journeys runs
 * once, at 420 px; at every step the page is also widened to 1280 px and measured again: nothing overflows or
 * is clipped sideways at either width (layout.ts), and on the dashboard's pages axe-core finds no serious or
 * critical violation. Times are the viewer's local time (the browser runs in Asia/Kolkata), IDs are
 * shortened with a copy button, and a tool offers only the status moves its status allows.
 *
 * What the dashboard shows when things are not fine: the picker's exact error when the tool's locations URL
 * fails (a real misbehaving HTTP endpoint on loopback), a picker with only a message (markup gone, line
 * breaks kept), a suspended tool's closed Sandbox, a hosted tool's settings, and the platform team's view of
 * registration. Each refused call must log exactly the console error its status makes Chromium log, and
 * nothing else; no request may leave loopback.
 *
 * And the dashboard's files as the service serves them (server/web-dashboard/), over HTTP (CI-43): the right
 * content types, revalidated caching with ETags, a strict Content-Security-Policy on every file, a page with
 * no inline script or style, script that never writes markup from data and never calls another origin, and
 * `/dashboard/v1/...` left to the dashboard API.
 *
 * The service runs with the loopback development switch on (the tools are on http://127.0.0.1). Screenshots:
 * test-artifacts/e2e/dashboard-sandbox/, dashboard-layout/ and dashboard-states/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed } from 'vitest';
import { createDashboardClient, type DashboardClient } from '../../client/index.ts';
import { files, locationsResponse, rows, type LaunchClaims } from '../../client/tool/index.ts';
import { ensureSandboxRegistration } from '../../server/sandbox/lms-registration.ts';
import { WEB_DASHBOARD_CSP, WEB_DASHBOARD_FILES } from '../../server/web-dashboard/router.ts';
import { startServer, type TestServer } from '../server/harness.ts';
import { ROLES, startLms, type LmsFixture } from '../server/lti/lms-fixture.ts';
import { login, postIdToken } from '../server/lti/support.ts';
import { answer, startToolServer, type ToolServer } from '../server/outbound/fixtures.ts';
import { accessibilityProblems, overflowProblems } from './layout.ts';
import { BrowserGuard, failureShots, launchChromium, screenshots, shows, startQuizTool, type QuizProcess } from './support.ts';

const BUILDER = { name: 'Erin Builder', email: 'erin.builder@northwind.example' };
const QUIZ_MESSAGE = 'Pick the quizzes to add to this course. Practice items are never graded.';

const TIME_ZONE = 'Asia/Kolkata';
const LOCALE = 'en-GB';
const NARROW = 420;
const WIDE = 1280;

let server: TestServer;
let tool: ToolServer;
let browser: Browser;
let context: BrowserContext;
let guard: BrowserGuard;
let bootstrap: string;
const shot = screenshots('dashboard-layout');

beforeAll(async () => {
  // LMS_AUTO_ACTIVATE off (its default): a registered LMS arrives pending.
  server = await startServer({ config: { allowLoopbackTools: true, lmsAutoActivate: false, logLevel: 'warn' } });
  bootstrap = readFileSync(join(server.dataDir, 'platform-token'), 'utf8').trim();
  tool = await startToolServer();
  tool.route('/locations', answer.json({
    message: 'Pick the quizzes for this course. Each one is graded out of its points.',
    locations: { 'week-1-quiz': { type: 'assessment', label: 'Week 1 quiz: describing data with a rather long title', points: 20 } },
    grouped_locations: [{ label: 'Readings', locations: { 'reading-1': { type: 'content', label: 'Reading 1' } } }],
  }));
  tool.route('/launch', answer.text('ok', 200, 'text/plain'));
  // The tool takes its time to set up, so the page first shows "pending" and must follow it to "provisioned".
  tool.route('/provision', answer.provisioning(() => true));
  browser = await launchChromium();
  // bypassCSP: axe-core is injected as a script the page's own policy (script-src 'self') would refuse.
  context = await browser.newContext({ viewport: { width: NARROW, height: 900 }, timezoneId: TIME_ZONE, locale: LOCALE, bypassCSP: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  guard = new BrowserGuard(context);
  await guard.install();
}, 120_000);

// Each test answers for its own console errors and requests, so one failure is reported once.
beforeEach(() => guard.forget());

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await tool?.close();
  await server?.stop();
});

/** The text the page must show for an ISO time: the viewer's zone and locale. */
function local(iso: string): string {
  return new Date(iso).toLocaleString(LOCALE, { dateStyle: 'medium', timeStyle: 'medium', timeZone: TIME_ZONE });
}

/** Signs in with the token; opens the dashboard first unless the page already shows its sign-in form. */
async function signIn(page: Page, token: string, who: string | RegExp, { open = true }: { open?: boolean } = {}): Promise<void> {
  if (open) await page.goto(`${server.url}/dashboard/`);
  await page.locator('#sign-in-token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await shows(page.locator('#identity-name'), who);
}

/** Signs out; the dashboard keeps nothing of the session in the tab's storage afterwards. */
async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('#sign-in').waitFor({ state: 'visible' });
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
}

async function clipboard(page: Page): Promise<string> {
  return page.evaluate(() => navigator.clipboard.readText());
}

async function atWidth(page: Page, width: number): Promise<void> {
  await page.setViewportSize({ width, height: 900 });
  // Two frames: the resize's layout has run before the page is measured.
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
}

/**
 * A screenshot, then the layout check at 420 px and, the same page widened, at 1280 px (a person sees the
 * screenshot, the test sees the numbers), then back to 420 px. With `axe` (the dashboard's own pages),
 * axe-core too, once per page state: no serious or critical accessibility violation (issue 29).
 */
async function looksRight(page: Page, name: string, axe = true): Promise<void> {
  await shot(page, name);
  expect(await overflowProblems(page), `${name} at ${NARROW} px`).toEqual([]);
  if (axe) expect(await accessibilityProblems(page), name).toEqual([]);
  await atWidth(page, WIDE);
  expect(await overflowProblems(page), `${name} at ${WIDE} px`).toEqual([]);
  await atWidth(page, NARROW);
}

describe('web dashboard, end to end with the example quiz tool', () => {
  // This journey's own tab state, quiz process and helpers; the file's server and browser are shared.
  const screenshot = screenshots('dashboard-sandbox');
  let context: BrowserContext;
  let guard: BrowserGuard;
  let tool: QuizProcess | null = null;
  let platformToken: string;
  let builderToken: string;

  beforeAll(async () => {
    // The platform team's token, generated at first start into DATA_DIR (openapi/dashboard, platformToken).
    platformToken = bootstrap;
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    guard = new BrowserGuard(context);
    await guard.install();
  });
  afterAll(async () => {
    await context?.close();
    await tool?.stop();
  });

  /** The claims of a launch token, read without verifying it: the tool verified it already. */
  function claimsOf(launchData: string): LaunchClaims {
    return JSON.parse(Buffer.from(launchData.split('.')[1]!, 'base64url').toString('utf8')) as LaunchClaims;
  }

  beforeEach(() => {
    onTestFailed(failureShots(context, 'dashboard-sandbox'));
  });

  it('registers, configures, activates, places, launches as a student, and shows the grade', async () => {
    const page = await context.newPage();
    // Every launch the browser POSTs to the tool's callback URL, as the tool received it.
    const launches: LaunchClaims[] = [];
    context.on('request', (request) => {
      if (tool && request.method() === 'POST' && request.url() === `${tool.url}/launch`) {
        const launchData = new URLSearchParams(request.postData() ?? '').get('launch_data');
        if (launchData) launches.push(claimsOf(launchData));
      }
    });
    const builderName = `${BUILDER.name} <${BUILDER.email}>`;

    // Sign in: a wrong token shows the API's detail; the right one is kept in sessionStorage only.
    await page.goto(`${server.url}/dashboard/`);
    await page.locator('#sign-in').waitFor({ state: 'visible' });
    await guard.expectingRefusals([401], async () => {
      await page.locator('#sign-in-token').fill('tisb_not-a-real-token');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await shows(page.locator('#sign-in-error'), 'Invalid bearer token');
    });
    // A fresh install: the sign-in page says where the platform team's token is (issue 29).
    await shows(page.locator('#sign-in-first-time'), /platform-token.*DATA_DIR/);
    await signIn(page, platformToken, 'Platform team', { open: false });
    // The first builder, created and signed in as in one step (OPS-42): the registration form opens.
    await page.getByRole('link', { name: 'Builders' }).click();
    await page.locator('#builder-form input[name=name]').fill(BUILDER.name);
    await page.locator('#builder-form input[name=email]').fill(BUILDER.email);
    await page.getByRole('button', { name: 'Create and sign in as this builder' }).click();
    await shows(page.locator('#identity-name'), builderName);
    await page.locator('#register-form').waitFor({ state: 'visible' });
    expect(await page.locator('#builder-secret').isHidden()).toBe(true);
    builderToken = (await page.evaluate(() => sessionStorage.getItem('tis.dashboard.token'))) ?? '';
    expect(builderToken).toMatch(/^tisb_/);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    await screenshot(page, 'signed-in-as-builder');

    // Register a self-hosted tool: the API key is shown once.
    await page.locator('#register-form input[name=name]').fill('Statistics Quiz');
    await page.locator('#register-form textarea[name=description]').fill('Quizzes for the statistics course.');
    await page.locator('#register-form').getByRole('button', { name: 'Register' }).click();
    await shows(page.locator('#secret-title'), 'API key');
    const apiKey = await page.locator('#secret-value').inputValue();
    expect(apiKey).toMatch(/^ltiaas_app_[a-z0-9]{20,}_[A-Za-z0-9_-]{43}$/);
    await shows(page.locator('#tool-id code'), /^app_[a-z0-9]{4}…[a-z0-9]{4}$/);
    const appId = (await page.locator('#tool-id').getAttribute('data-id')) ?? '';
    expect(appId).toMatch(/^app_[a-z0-9]{20,}$/);
    await shows(page.locator('#tool-status'), 'draft');
    await shows(page.locator('#tool-key-hint'), `ltiaas_...${apiKey.slice(-4)}`);
    expect(await page.locator('#activate').isHidden()).toBe(true);
    expect(await page.locator(`#tool-list button[data-app="${appId}"]`).textContent()).toContain('Statistics Quiz');
    await screenshot(page, 'registered');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.locator('#secret').isHidden()).toBe(true);

    // The tool process, told its ID and the service's origin.
    tool = await startQuizTool(server.url, appId);

    // Settings: a URL the rules refuse shows the service's message and changes nothing.
    await shows(page.locator('#tab-settings[aria-selected=true]'), 'Settings');
    const settings = page.locator('#settings-form');
    await guard.expectingRefusals([422], async () => {
      await settings.locator('input[name=callback_url]').fill('https://user:secret@127.0.0.1/launch');
      await settings.getByRole('button', { name: 'Save settings' }).click();
      await shows(page.locator('#settings-error'), 'callback_url must not contain credentials');
    });
    await screenshot(page, 'settings-url-refused');
    await settings.locator('input[name=callback_url]').fill(`${tool.url}/launch`);
    await settings.locator('input[name=provision_url]').fill(`${tool.url}/provision`);
    await settings.locator('input[name=locations_url]').fill(`${tool.url}/locations`);
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await shows(page.locator('#settings-saved'), 'Saved.');
    expect(await page.locator('#settings-error').isHidden()).toBe(true);
    expect(await settings.locator('input[name=locations_url]').inputValue()).toBe(`${tool.url}/locations`);
    await screenshot(page, 'settings-saved');

    // The platform team activates it.
    await signOut(page);
    await signIn(page, platformToken, 'Platform team', { open: false });
    await shows(page.locator('#tool-name'), 'Statistics Quiz');
    await page.getByRole('button', { name: 'Activate' }).click();
    await shows(page.locator('#tool-status'), 'active');
    expect(await page.locator('#activate').isHidden()).toBe(true);
    expect(await page.locator('#suspend').isVisible()).toBe(true);
    await screenshot(page, 'activated-by-platform');
    await signOut(page);
    // The tool's head still shows the platform team's "active" from before the sign-out until the builder's
    // own read of the tool answers; a tab clicked before that answer is undone by it (seen under load).
    const toolRead = page.waitForResponse((res) => res.request().method() === 'GET' && new URL(res.url()).pathname === `/dashboard/v1/apps/${appId}`);
    await signIn(page, builderToken, builderName, { open: false });
    await toolRead;
    await shows(page.locator('#tool-status'), 'active');

    // The Sandbox picker: the message, the top-level location, the groups collapsed with their counts.
    await page.getByRole('tab', { name: 'Sandbox' }).click();
    await shows(page.locator('#trial-users tbody tr').first().locator('td').first(), 'instructor');
    await page.getByRole('button', { name: 'Open the picker' }).click();
    await shows(page.locator('#picker [data-picker=message]'), QUIZ_MESSAGE, 40_000);
    const picker = page.locator('#picker');
    await shows(picker.locator(':scope > ul > li[data-extid=final-quiz] .label'), 'Final quiz');
    const groups = picker.locator(':scope > details');
    expect(await groups.count()).toBe(2);
    await shows(groups.nth(0).locator('summary'), 'Unit 1: Describing data (2)');
    await shows(groups.nth(1).locator('summary'), 'Unit 2: Probability (1)');
    expect(await groups.evaluateAll((all) => all.map((d) => (d as HTMLDetailsElement).open))).toEqual([false, false]);
    expect(await picker.locator('li[data-extid=unit-1-quiz]').isVisible()).toBe(false);
    await screenshot(page, 'picker');

    // Place the Unit 1 quiz, an assessment of 20 points.
    await groups.nth(0).locator('summary').click();
    await shows(picker.locator('li[data-extid=unit-1-quiz] .label'), 'Unit 1 quiz');
    await page.getByRole('button', { name: 'Place Unit 1 quiz' }).click();
    await shows(page.locator('#sandbox-status'), 'Placed Unit 1 quiz.', 20_000);
    // The provisioning labels follow the state until it settles, without a reload.
    await shows(page.locator('#placements tbody tr td').nth(3), 'course provisioned location provisioned', 30_000);
    const row = page.locator('#placements tbody tr');
    expect(await row.count()).toBe(1);
    expect(await row.locator('td').nth(1).textContent()).toBe('assessment');
    expect(await row.locator('td').nth(2).textContent()).toBe('20');
    await screenshot(page, 'placed');

    // Launch as the first student: the launch page opens in a new window and hands over to the quiz.
    await page.getByLabel('Launch Unit 1 quiz as').selectOption('student_1');
    const popupOpened = context.waitForEvent('page');
    await page.getByRole('button', { name: 'Launch Unit 1 quiz' }).click();
    const quiz = await popupOpened;
    await quiz.locator('form#quiz').waitFor({ state: 'visible', timeout: 40_000 });
    expect(await quiz.locator('#previous').count()).toBe(0);
    expect(quiz.url()).toBe(`${tool.url}/launch`);
    await shows(quiz.locator('h1'), 'Unit 1 quiz');
    await shows(page.locator('#sandbox-status'), 'Opened the launch page of Unit 1 quiz as student_1 in a new window.');
    await screenshot(quiz, 'quiz-launched-as-student');

    // The student answers one of two questions right; the tool stores the row and file and sends 0.5.
    await quiz.locator('input[name=q1][value="0"]').check();
    await quiz.locator('input[name=q2][value="1"]').check();
    await quiz.getByRole('button', { name: 'Submit answers' }).click();
    await shows(quiz.locator('#score'), '1 of 2 correct.', 20_000);
    await shows(quiz.locator('#gradebook'), 'Gradebook: sent.');
    await screenshot(quiz, 'quiz-result');
    await quiz.close();

    // The Grades tab: the Sandbox gradebook's column, and the grade history.
    await page.getByRole('tab', { name: 'Grades' }).click();
    const column = page.locator('#gradebook .column');
    await shows(column.locator('h4'), 'Unit 1 quiz 20 points, grades released');
    const score = column.locator('tbody tr');
    expect(await score.count()).toBe(1);
    expect(await score.locator('td').nth(0).textContent()).toBe('student_1');
    // Scores read as points and a percentage (issue 29): the gradebook's, and the history's against the
    // column's points the score was published with, though the quiz sent no max_score.
    expect(await score.locator('td.score').textContent()).toBe('10 / 20 (50%)');
    expect(await score.locator('td').nth(3).textContent()).toBe('1 of 2 correct');
    const history = page.locator('#history tbody tr');
    await shows(history.first().locator('td').nth(1), 'success');
    expect(await history.count()).toBe(1);
    expect(await history.first().locator('td').nth(2).textContent()).toBe('10 / 20 (50%)');
    await screenshot(page, 'grades');

    // The same facts through the APIs.
    const dashboard: DashboardClient = createDashboardClient({ baseUrl: server.url, token: builderToken });
    const sandbox = await dashboard.GET('/dashboard/v1/apps/{app_id}/sandbox', { params: { path: { app_id: appId } } });
    if (sandbox.error) throw new Error(sandbox.error.detail);
    const placement = sandbox.data.placements[0]!;
    const student = sandbox.data.users.student_1;
    expect(placement.location.extid).toBe('unit-1-quiz');
    expect(placement.provisioning).toEqual({ context: 'provisioned', location: 'provisioned', error: null });
    const gradebook = await dashboard.GET('/dashboard/v1/apps/{app_id}/sandbox/grades', { params: { path: { app_id: appId } } });
    expect(gradebook.data?.columns[0]?.scores).toMatchObject([
      { role: 'student_1', member_id: student.member_id, score_given: 10, score_maximum: 20, comment: '1 of 2 correct' },
    ]);
    const attempts = await dashboard.GET('/dashboard/v1/apps/{app_id}/grades', { params: { path: { app_id: appId } } });
    expect(attempts.data?.attempts).toMatchObject([
      { status: 'success', score: 0.5, max_score: null, member: student.member_id, location: placement.location.id, context: sandbox.data.context, data: { source_type: 'session', source_id: student.user_id } },
    ]);
    expect(attempts.data?.points).toEqual({ [attempts.data!.attempts[0]!.id]: 20 });

    // Storage and files take a launch's api.token (GAP-28): the student's own, from the launch the
    // browser POSTed to the tool.
    expect(launches).toHaveLength(1);
    const claims = launches[0]!;
    expect(claims).toMatchObject({ app: appId, context: sandbox.data.context, location: { id: placement.location.id }, user: { member: student.member_id } });
    const rowPath = { context_id: sandbox.data.context, app_id: appId, location_id: placement.location.id, member_id: student.member_id };
    expect(claims.storage.member_location).toBe(
      `${server.url}/v1/contexts/${rowPath.context_id}/apps/${appId}/locations/${rowPath.location_id}/members/${rowPath.member_id}/storage`,
    );
    const stored = await rows(claims.storage.member_location, claims.api.token!).get();
    if (stored.error) throw new Error(stored.error.detail);
    expect(stored.data).toMatchObject({ quiz: 'unit-1-quiz', answers: { q1: 0, q2: 1 }, attempts: 1, last: { score: 0.5, correct: 1, total: 2, gradebook: 'sent' } });
    const file = await files(claims.files.member_location, claims.api.token!).read('answer-sheet.json');
    if (file.error) throw new Error(file.error.detail);
    const sheet = (await (await fetch(file.data.url)).json()) as Record<string, unknown>;
    expect(sheet).toMatchObject({ quiz: 'unit-1-quiz', attempt: 1, score: 0.5, correct: 1, total: 2 });
    const scoreUrl = claims.grade.submit!;

    // Rotating the key shows the new one once; the old one stops working at once.
    await page.getByRole('button', { name: 'Rotate API key' }).click();
    await page.getByRole('button', { name: 'Rotate now' }).click();
    await shows(page.locator('#secret-title'), 'New API key');
    const newKey = await page.locator('#secret-value').inputValue();
    expect(newKey).not.toBe(apiKey);
    await shows(page.locator('#tool-key-hint'), `ltiaas_...${newKey.slice(-4)}`);
    const withOldKey = await fetch(scoreUrl, { method: 'POST', headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, body: '{"score":1}' });
    expect(withOldKey.status).toBe(401);
    expect(((await withOldKey.json()) as { detail: string }).detail).toBe('Invalid API key');
    await screenshot(page, 'key-rotated');
    await page.getByRole('button', { name: 'I have stored it' }).click();

    // A copy of the trial course, then a reset: the copy goes, the stored row and the score go.
    await page.getByRole('tab', { name: 'Sandbox' }).click();
    await page.getByRole('button', { name: 'Copy the trial course' }).click();
    await shows(page.locator('#sandbox-status'), /^Copied the trial course: .+, copy of ctx_[A-Za-z0-9_-]+\.$/);
    expect(await page.locator('#sandbox-course option').count()).toBe(2);
    expect(await page.locator('#sandbox-course').inputValue()).not.toBe(sandbox.data.context);
    expect(await page.locator('#placements-empty').isVisible()).toBe(true);
    await screenshot(page, 'copied');
    await page.getByRole('button', { name: 'Reset the Sandbox…' }).click();
    await page.getByRole('button', { name: 'Reset now' }).click();
    await shows(page.locator('#sandbox-status'), 'The Sandbox is reset: the next placement or launch provisions again.');
    expect(await page.locator('#sandbox-course option').count()).toBe(1);
    expect(await page.locator('#placements tbody tr').count()).toBe(1);
    await screenshot(page, 'reset');
    // The reset revoked the student's token. That the next launch provisions again and the tool finds no row
    // is tests/server/dashboard/sandbox.test.ts's (CI-44); a second launch here showed nothing more.
    expect((await rows(claims.storage.member_location, claims.api.token!).get()).error?.detail).toBe('Invalid bearer token');
    expect(launches).toHaveLength(1);
    await page.getByRole('tab', { name: 'Grades' }).click();
    await shows(page.locator('#gradebook .column p'), 'No scores yet.');
    expect(await page.locator('#history tbody tr').count()).toBe(1);
    await screenshot(page, 'grades-after-reset');

    expect(guard.foreignRequests).toEqual([]);
    expect(guard.consoleErrors).toEqual([]);
  }, 240_000);
});

describe(`web dashboard at ${NARROW} and ${WIDE} px`, () => {
  it('platform team: the first builder and an operator from the web page, tokens copied once', async () => {
    onTestFailed(failureShots(context, 'dashboard-layout'));
    const page = await context.newPage();
    await signIn(page, bootstrap, 'Platform team');
    await shows(page.locator('#register-platform-note'), /Create a builder/);
    await looksRight(page, 'platform-home');

    await page.getByRole('link', { name: 'Builders' }).click();
    await page.locator('#builder-form input[name=name]').fill('Ana Ruiz');
    await page.locator('#builder-form input[name=email]').fill('ana@northwind.example');
    await page.getByRole('button', { name: 'Create builder' }).click();
    await page.locator('#builder-secret').waitFor({ state: 'visible' });
    const token = await page.locator('#builder-secret-value').inputValue();
    expect(token).toMatch(/^tisb_[A-Za-z0-9_-]{43}$/);
    await page.locator('#builder-secret-copy').getByRole('button', { name: 'Copy it' }).click();
    await shows(page.locator('#builder-secret-copy button'), 'Copied');
    expect(await clipboard(page)).toBe(token);
    const row = page.locator('#builder-list tbody tr').filter({ hasText: 'Ana Ruiz' });
    const builderId = (await row.locator('.id').getAttribute('data-id')) ?? '';
    expect(builderId).toMatch(/^bld_[a-z0-9]{20,}$/);
    await shows(row.locator('.id code'), `bld_${builderId.slice(4, 8)}…${builderId.slice(-4)}`);
    await row.locator('.id button').click();
    expect(await clipboard(page)).toBe(builderId);
    const created = (await row.locator('time').getAttribute('datetime')) ?? '';
    await shows(row.locator('time'), local(created));
    await looksRight(page, 'builders');
    // The token is not shown again once the page is left.
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('link', { name: 'Builders' }).click();
    expect(await page.locator('#builder-secret').isHidden()).toBe(true);

    await page.getByRole('link', { name: 'Operators' }).click();
    await page.locator('#operator-form input[name=name]').fill('Kofi Mensah');
    await page.locator('#operator-form input[name=email]').fill('kofi@northwind.example');
    await page.getByRole('button', { name: 'Create operator' }).click();
    await page.locator('#operator-secret').waitFor({ state: 'visible' });
    const operatorToken = await page.locator('#operator-secret-value').inputValue();
    expect(operatorToken).toMatch(/^tiso_/);
    await looksRight(page, 'operators');
    await signOut(page);

    // The builder signs in with the copied token and registers a tool: its key is copied once.
    await signIn(page, token, 'Ana Ruiz <ana@northwind.example>');
    await page.getByRole('button', { name: 'Register a tool' }).click();
    await page.locator('#register-form input[name=name]').fill('Statistics quizzes with a long enough name to wrap');
    await page.locator('#register-form').getByRole('button', { name: 'Register' }).click();
    await shows(page.locator('#secret-title'), 'API key');
    const apiKey = await page.locator('#secret-value').inputValue();
    expect(apiKey).toMatch(/^ltiaas_app_/);
    await page.locator('#secret-copy button').click();
    expect(await clipboard(page)).toBe(apiKey);
    const appId = (await page.locator('#tool-id').getAttribute('data-id')) ?? '';
    await shows(page.locator('#tool-id code'), `app_${appId.slice(4, 8)}…${appId.slice(-4)}`);
    await shows(page.locator('#tool-status'), 'draft');
    expect(await page.locator('#activate').isHidden()).toBe(true);
    expect(await page.locator('#suspend').isHidden()).toBe(true);
    await looksRight(page, 'registered');
    await page.getByRole('button', { name: 'I have stored it' }).click();

    const settings = page.locator('#settings-form');
    await settings.locator('input[name=callback_url]').fill(tool.url('/launch'));
    await settings.locator('input[name=provision_url]').fill(tool.url('/provision'));
    await settings.locator('input[name=locations_url]').fill(tool.url('/locations'));
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await shows(page.locator('#settings-saved'), 'Saved.');
    await looksRight(page, 'settings');

    // Sandbox: place an assessment; the labels follow provisioning to its end without a reload. Until the
    // tool's Sandbox is read, the picker waits: opened then, it named no course and was refused 404.
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const sandboxRead = `${server.url}/dashboard/v1/apps/${appId}/sandbox`;
    let passed: Promise<void> = Promise.resolve();
    await page.route(sandboxRead, (route) => {
      passed = held.then(() => route.continue());
      return passed;
    }, { times: 1 });
    await page.getByRole('tab', { name: 'Sandbox' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Open the picker' }).isDisabled()).toBe(true);
    release();
    await passed;
    await page.getByRole('button', { name: 'Open the picker' }).click();
    await page.locator('#picker li[data-extid=week-1-quiz]').waitFor({ state: 'visible', timeout: 30_000 });
    await page.getByRole('button', { name: /^Place Week 1 quiz/ }).click();
    await shows(page.locator('#sandbox-status'), 'Placed Week 1 quiz: describing data with a rather long title.');
    const placed = page.locator('#placements tbody tr');
    await shows(placed.locator('td').nth(3), 'course provisioned location provisioned', 30_000);
    await shows(page.locator('#sandbox-summary .badge'), 'provisioned');
    await looksRight(page, 'sandbox');

    // A launch scores, as the tool would, so the Grades tab has a gradebook and a history to show.
    const builder = createDashboardClient({ baseUrl: server.url, token });
    const placementId = (await placed.getAttribute('data-placement')) ?? '';
    const signed = await builder.POST('/dashboard/v1/apps/{app_id}/sandbox/placements/{placement_id}/signed-launches', {
      params: { path: { app_id: appId, placement_id: placementId } },
      body: { as: 'student_1' },
    });
    if (signed.error) throw new Error(signed.error.detail);
    const claims = JSON.parse(Buffer.from(signed.data.fields.launch_data.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      api: { token: string };
      grade: { submit: string };
    };
    const scored = await fetch(claims.grade.submit, {
      method: 'POST',
      headers: { Authorization: `Bearer ${claims.api.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ score: 0.85, comment: 'Good work on the histogram question; the boxplot needs its whiskers.' }),
    });
    expect(scored.status).toBeLessThan(300);
    // A regrade out of other points: the column takes them, the history keeps each attempt's own.
    const regraded = await fetch(claims.grade.submit, {
      method: 'POST',
      headers: { Authorization: `Bearer ${claims.api.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ score: 0.5, max_score: 40 }),
    });
    expect(regraded.status).toBe(200);
    await page.getByRole('tab', { name: 'Grades' }).click();
    const history = page.locator('#history tbody tr');
    await shows(history.nth(1).locator('td').nth(1), 'success', 20_000);
    const submitted = (await history.nth(1).locator('time').getAttribute('datetime')) ?? '';
    await shows(history.nth(1).locator('td').nth(0), local(submitted));
    // Scores as people read them: points and a percentage, in the gradebook and the history (issue 29).
    await shows(page.locator('#gradebook td.score'), '20 / 40 (50%)');
    await shows(history.nth(0).locator('td.score'), '20 / 40 (50%)');
    await shows(history.nth(1).locator('td.score'), '17 / 20 (85%)');
    await looksRight(page, 'grades');
    await signOut(page);

    // The platform team: a draft tool offers Activate only, an active one Suspend only.
    await signIn(page, operatorToken, 'Platform team');
    await page.locator(`#tool-list button[data-app="${appId}"]`).click();
    await shows(page.locator('#tool-status'), 'draft');
    expect(await page.locator('#activate').isVisible()).toBe(true);
    expect(await page.locator('#suspend').isHidden()).toBe(true);
    await page.getByRole('button', { name: 'Activate' }).click();
    await shows(page.locator('#tool-status'), 'active');
    expect(await page.locator('#activate').isHidden()).toBe(true);
    expect(await page.locator('#suspend').isVisible()).toBe(true);
    await shows(page.locator(`#tool-list button[data-app="${appId}"] .badge`), 'active');
    await looksRight(page, 'activated');

    // LMS registrations: the URLs an LMS administrator copies wrap between their parts, never inside the host.
    await page.getByRole('link', { name: 'LMS registrations' }).click();
    await page.locator('#lms-urls code').first().waitFor({ state: 'visible' });
    const splitHosts = await page.locator('#lms-urls code').evaluateAll((codes) => codes.flatMap((code) => {
      // The page offers breaks only after / ? & = (<wbr>), so the host is one text node of the code.
      const host = new URL(code.textContent ?? '').host;
      const text = Array.from(code.childNodes).find((n): n is Text => n.nodeType === Node.TEXT_NODE && (n as Text).data.includes(host));
      if (!text) return [code.textContent ?? ''];
      const range = document.createRange();
      range.setStart(text, text.data.indexOf(host));
      range.setEnd(text, text.data.indexOf(host) + host.length);
      return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size > 1 ? [code.textContent ?? ''] : [];
    }));
    expect(splitHosts).toEqual([]);
    await looksRight(page, 'lms');

    await page.getByRole('link', { name: 'Audit log' }).click();
    const newest = page.locator('#audit-list tbody tr').first();
    await shows(newest.locator('td').nth(2), 'app.activate');
    await shows(newest.locator('td').nth(1), 'Kofi Mensah (operator)');
    const at = (await newest.locator('time').getAttribute('datetime')) ?? '';
    await shows(newest.locator('td').nth(0), local(at));
    expect(await newest.locator('.id').getAttribute('data-id')).toBe(appId);
    expect(await page.locator('#audit-list tbody tr[data-action="builder.create"]').count()).toBeGreaterThan(0);
    await looksRight(page, 'audit-log');

    expect(guard.foreignRequests).toEqual([]);
    expect(guard.consoleErrors).toEqual([]);
  }, 240_000);
});

describe(`LMS registrations page at ${NARROW} and ${WIDE} px`, () => {
  let moodle: LmsFixture;

  beforeAll(async () => {
    // A Moodle registered through Dynamic Registration: it arrives pending.
    moodle = await startLms('moodle');
    moodle.connect(server.url);
    const registered = await fetch(`${server.url}/lti/register?${new URLSearchParams({ openid_configuration: moodle.urls.openidConfiguration, registration_token: 'reg-token-1' })}`);
    expect(registered.status).toBe(200);
    await registered.text();
  });
  afterAll(async () => {
    await moodle?.close();
  });

  it('lists, shows, activates, deactivates, registers by hand and adds a deployment', async () => {
    onTestFailed(failureShots(context, 'dashboard-layout'));
    const page = await context.newPage();
    await signIn(page, bootstrap, 'Platform team');
    await page.getByRole('link', { name: 'LMS registrations' }).click();

    // The service's URLs for the LMS administrator.
    await shows(page.locator('#lms-urls dd').first().locator('code'), `${server.url}/lti/register`);
    const moodleRow = page.locator('#lms-list tbody tr').filter({ hasText: moodle.clientId });
    await shows(moodleRow.locator('.badge'), 'pending');
    await shows(moodleRow.locator('td').nth(4), 'dynamic');
    await looksRight(page, 'lms-list', false);

    // Show, activate, deactivate: the status follows on the row and in the detail.
    await moodleRow.getByRole('button', { name: /^Show/ }).click();
    await page.locator('#lms-detail').waitFor({ state: 'visible' });
    await shows(page.locator('#lms-deployments li'), moodle.deploymentId);
    expect(await page.locator('#lms-deployment-form').isHidden()).toBe(true);
    expect(await page.locator('#lms-deactivate').isHidden()).toBe(true);
    await looksRight(page, 'lms-pending', false);
    await page.locator('#lms-activate').click();
    await shows(page.locator('#lms-detail-status .badge'), 'active');
    await shows(moodleRow.locator('.badge'), 'active');
    expect(await page.locator('#lms-activate').isHidden()).toBe(true);
    const id = (await page.locator('#lms-detail').getAttribute('data-registration')) ?? '';
    expect((await server.services.store.lti.getRegistration(id))?.status).toBe('active');
    await looksRight(page, 'lms-active', false);

    // A launch refused because the browser dropped the state cookie in the LMS frame (issue 28): its
    // report ID, read off the person's page, is listed on the registration and found by the search.
    const framed = await login(server, moodle);
    const idToken = await moodle.idToken(moodle.resourceLinkClaims({ nonce: framed.nonce, sub: 'framed-student', roles: [ROLES.learner], contextId: 'c' }));
    const reportId = /Report ID: <code>([^<]+)<\/code>/.exec(await (await postIdToken(server, idToken, framed.state, null)).text())?.[1] ?? '';
    await moodleRow.getByRole('button', { name: /^Show/ }).click();
    await shows(page.locator(`#lms-refusals tbody tr[data-report="${reportId}"] td`).nth(3), /your LMS opens the tool in a frame/);
    await page.locator('#lms-refusal-form input[name=report_id]').fill(reportId);
    await page.locator('#lms-refusal-form').getByRole('button', { name: 'Find' }).click();
    await shows(page.locator('#lms-refusal-found'), /What to change\s*Open the tool in a new window/);
    await looksRight(page, 'lms-refusals', false);
    await page.locator('#lms-deactivate').click();
    await shows(page.locator('#lms-detail-status .badge'), 'inactive');
    expect((await server.services.store.lti.getRegistration(id))?.status).toBe('inactive');

    // By hand: a URL against the rules is refused with the service's words, then a Blackboard-shaped one.
    const clientId = 'bb-global-6f1c2e0a-9d4b-4c7e-8a51-2b3c4d5e6f70';
    const form = page.locator('#lms-form');
    await form.locator('input[name=issuer]').fill('https://blackboard.com');
    await form.locator('input[name=client_id]').fill(clientId);
    await form.locator('textarea[name=deployments]').fill('c1f0e5a2-7b3d-4e9f-a6c8-1d2e3f4a5b6c');
    await form.locator('input[name=auth_url]').fill(`${moodle.origin}/api/v1/gateway/oidcauth`);
    await form.locator('input[name=token_url]').fill('http://10.0.0.5/api/v1/gateway/oauth2/jwttoken');
    await form.locator('input[name=jwks_url]').fill(`${moodle.origin}/api/v1/management/applications/${clientId}/jwks.json`);
    await form.locator('input[name=title]').fill('Northwind Learn');
    await guard.expectingRefusals([422], async () => {
      await form.getByRole('button', { name: 'Register LMS' }).click();
      await shows(page.locator('#lms-form-error'), 'token_url must be an absolute https:// URL');
    });
    await form.locator('input[name=token_url]').fill(`${moodle.origin}/api/v1/gateway/oauth2/jwttoken`);
    await form.getByRole('button', { name: 'Register LMS' }).click();
    await shows(page.locator('#lms-form-status'), 'Saved: Northwind Learn is pending.');
    await shows(page.locator('#lms-detail-title'), 'Northwind Learn');
    const bbRow = page.locator('#lms-list tbody tr').filter({ hasText: clientId });
    await shows(bbRow.locator('td').nth(4), 'manual');
    await looksRight(page, 'lms-manual', false);

    // A second institution on Blackboard's one client: a deployment added to the same registration.
    await page.locator('#lms-deployment-form input[name=deployment]').fill('9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d');
    await page.locator('#lms-deployment-form').getByRole('button', { name: 'Add deployment' }).click();
    await shows(page.locator('#lms-deployments li').nth(1), '9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d');
    await shows(bbRow.locator('td').nth(3), '2');
    const stored = await server.services.store.lti.findRegistration('https://blackboard.com', clientId);
    expect(stored).toMatchObject({ status: 'pending', method: 'manual', deployments: ['c1f0e5a2-7b3d-4e9f-a6c8-1d2e3f4a5b6c', '9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d'] });
    await looksRight(page, 'lms-deployments', false);

    expect(guard.foreignRequests).toEqual([]);
    expect(guard.consoleErrors).toEqual([]);
  }, 120_000);

  it("shows the Sandbox's own registration apart from the schools; its detail offers no Deactivate but says why (decision LTI-100)", async () => {
    onTestFailed(failureShots(context, 'dashboard-layout'));
    const own = await ensureSandboxRegistration(server.services);
    const page = await context.newPage();
    await signIn(page, bootstrap, 'Platform team');
    await page.getByRole('link', { name: 'LMS registrations' }).click();
    await shows(page.locator('#lms-sandbox'), /^Sandbox LMS \(built into this service\) lreg_.*active/);
    expect(await page.locator('#lms-list tbody tr').filter({ hasText: own.id }).count()).toBe(0);
    await page.locator('#lms-sandbox').getByRole('button', { name: /^Show/ }).click();
    await page.locator('#lms-detail').waitFor({ state: 'visible' });
    await shows(page.locator('#lms-detail-title'), 'Sandbox LMS (built into this service)');
    expect(await page.locator('#lms-deactivate').isHidden()).toBe(true);
    expect(await page.locator('#lms-sandbox-note').isVisible()).toBe(true);
    await looksRight(page, 'lms-sandbox-detail', false);
    await page.close();
    expect(guard.consoleErrors).toEqual([]);
  }, 120_000);
});

describe('web dashboard states', () => {
  // This section's own tab state, tool endpoint and builder; the file's server and browser are shared.
  const screenshot = screenshots('dashboard-states');
  let toolServer: ToolServer;
  let context: BrowserContext;
  let guard: BrowserGuard;
  let platformToken: string;
  let builderToken: string;
  let builder: DashboardClient;
  let platform: DashboardClient;

  beforeAll(async () => {
    toolServer = await startToolServer();
    platformToken = bootstrap;
    platform = createDashboardClient({ baseUrl: server.url, token: platformToken });
    const created = await platform.POST('/dashboard/v1/builders', { body: { name: 'Kim Builder', email: 'kim@northwind.example' } });
    if (created.error) throw new Error(created.error.detail);
    builderToken = created.data.token;
    builder = createDashboardClient({ baseUrl: server.url, token: builderToken });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    guard = new BrowserGuard(context);
    await guard.install();
  });
  afterAll(async () => {
    await context?.close();
    await toolServer?.close();
  });

  async function registered(name: string, hosting: 'self_hosted' | 'hosted' = 'self_hosted'): Promise<string> {
    const made = await builder.POST('/dashboard/v1/apps', { body: { name, hosting } });
    if (made.error) throw new Error(made.error.detail);
    return made.data.app.id;
  }

  async function openAs(token: string, hash: string): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${server.url}/dashboard/${hash}`);
    await page.locator('#sign-in-token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#workspace').waitFor({ state: 'visible' });
    return page;
  }

  beforeEach(() => {
    onTestFailed(failureShots(context, 'dashboard-states'));
  });

  it('has a guard that sees console errors and stops requests leaving loopback', async () => {
    const own = new BrowserGuard(await browser.newContext());
    await own.install();
    const page = await own.context.newPage();
    await page.goto(`${server.url}/healthz`);
    const outcome = await page.evaluate(async () => {
      console.error('seen by the guard');
      try {
        await fetch('http://192.0.2.1/never', { mode: 'no-cors' });
        return 'sent';
      } catch {
        return 'blocked';
      }
    });
    expect(outcome).toBe('blocked');
    expect(own.foreignRequests).toEqual(['http://192.0.2.1/never']);
    expect(own.consoleErrors.some((line) => line.startsWith('seen by the guard'))).toBe(true);
    await own.context.close();
  });

  it("shows the picker's exact error, then a message-only picker", async () => {
    const appId = await registered('Failing picker');
    const set = await builder.PATCH('/dashboard/v1/apps/{app_id}', { params: { path: { app_id: appId } }, body: { locations_url: toolServer.url('/locations') } });
    expect(set.error).toBeUndefined();
    toolServer.route('/locations', answer.status(503));
    const page = await openAs(builderToken, `#/apps/${appId}/sandbox`);
    await shows(page.locator('#trial-users tbody tr').first().locator('td').first(), 'instructor');

    await guard.expectingRefusals([502], async () => {
      await page.getByRole('button', { name: 'Open the picker' }).click();
      await shows(page.locator('#picker-error'), 'app failed to provide the available locations (HTTP 503)');
    });
    expect(await page.locator('#picker').isHidden()).toBe(true);
    await screenshot(page, 'picker-error');

    toolServer.route('/locations', answer.text(locationsResponse().message('No <b>licence</b> yet.\nAsk sales.').toJSONText(), 200, 'application/json'));
    await page.getByRole('button', { name: 'Open the picker' }).click();
    const message = page.locator('#picker [data-picker=message]');
    await shows(message, 'No licence yet.\nAsk sales.');
    expect(await page.locator('#picker-error').isHidden()).toBe(true);
    expect(await page.locator('#picker b').count()).toBe(0);
    expect(await page.locator('#picker li.location').count()).toBe(0);
    await shows(page.locator('#picker > p.muted').first(), 'The tool offers nothing to place here.');
    // The line break is rendered as one (innerText follows the CSS), not folded into a space.
    expect(await message.innerText()).toBe('No licence yet.\nAsk sales.');
    await screenshot(page, 'picker-message-only');
    await page.close();
    expect(guard.consoleErrors).toEqual([]);
  }, 120_000);

  it("shows a suspended tool's closed Sandbox with the API's words", async () => {
    const appId = await registered('Suspended one');
    expect((await platform.POST('/dashboard/v1/apps/{app_id}/suspend', { params: { path: { app_id: appId } } })).error).toBeUndefined();
    const page = await guard.expectingRefusals([409], async () => {
      const opened = await openAs(builderToken, `#/apps/${appId}/sandbox`);
      await shows(opened.locator('#sandbox-error'), `tool ${appId} is suspended: its Sandbox is closed until the platform team activates it`);
      return opened;
    });
    await shows(page.locator('#tool-status'), 'suspended');
    expect(await page.getByRole('button', { name: 'Open the picker' }).isDisabled()).toBe(true);
    await screenshot(page, 'sandbox-suspended');
    await page.close();
    expect(guard.consoleErrors).toEqual([]);
  });

  it('shows a hosted tool without endpoint URLs or key, and the platform team without a registration form', async () => {
    const appId = await registered('Hosted quiz', 'hosted');
    const page = await openAs(platformToken, `#/apps/${appId}/settings`);
    await shows(page.locator('#identity-name'), 'Platform team');
    await shows(page.locator('#tool-hosting'), 'hosted');
    await shows(page.locator('#tool-key-hint'), 'none (hosted)');
    expect(await page.locator('#rotate-key').isHidden()).toBe(true);
    // A draft tool offers Activate only (issue 17 §4).
    expect(await page.locator('#activate').isVisible()).toBe(true);
    expect(await page.locator('#suspend').isHidden()).toBe(true);
    for (const field of ['callback_url', 'provision_url', 'locations_url']) {
      expect(await page.locator(`#settings-form input[name=${field}]`).isDisabled(), field).toBe(true);
    }
    await shows(page.locator('#settings-hosted-note'), 'A hosted tool has no endpoint URLs.');
    await screenshot(page, 'hosted-tool-as-platform');

    await page.getByRole('button', { name: 'Register a tool' }).click();
    await shows(page.locator('#register-platform-note'), /^Registering takes a builder's token/);
    expect(await page.locator('#register-form').isHidden()).toBe(true);
    await page.close();
    expect(guard.consoleErrors).toEqual([]);
    expect(guard.foreignRequests).toEqual([]);
  });
});

const STATIC_DIR = join(import.meta.dirname, '../../server/web-dashboard/static');

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

describe('web dashboard files', () => {
  it('lists exactly the files of the static folder', () => {
    expect([...WEB_DASHBOARD_FILES].sort()).toEqual(readdirSync(STATIC_DIR).sort());
  });

  it('redirects /dashboard to /dashboard/, keeping the query', async () => {
    const res = await fetch(`${server.url}/dashboard?x=1`, { redirect: 'manual' });
    expect(res.status).toBe(308);
    expect(res.headers.get('location')).toBe('/dashboard/?x=1');
  });

  it('serves the page at /dashboard/ with its CSP and security headers', async () => {
    const res = await fetch(`${server.url}/dashboard/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(TYPES['html']);
    expect(res.headers.get('content-security-policy')).toBe(WEB_DASHBOARD_CSP);
    expect(WEB_DASHBOARD_CSP).toContain("script-src 'self'");
    expect(WEB_DASHBOARD_CSP).toContain("connect-src 'self'");
    expect(WEB_DASHBOARD_CSP).not.toContain('unsafe');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(await res.text()).toBe(readFileSync(join(STATIC_DIR, 'index.html'), 'utf8'));
  });

  it.each(WEB_DASHBOARD_FILES.map((name) => [name]))('serves %s with its type, no-cache and an ETag that revalidates to 304', async (name) => {
    const res = await fetch(`${server.url}/dashboard/${name}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(TYPES[name.slice(name.lastIndexOf('.') + 1)]);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-security-policy')).toBe(WEB_DASHBOARD_CSP);
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(STATIC_DIR, name)))).toBe(true);

    const again = await fetch(`${server.url}/dashboard/${name}`, { headers: { 'If-None-Match': etag! } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const stale = await fetch(`${server.url}/dashboard/${name}`, { headers: { 'If-None-Match': '"other"' } });
    expect(stale.status).toBe(200);
  });

  it('answers HEAD without a body', async () => {
    const res = await fetch(`${server.url}/dashboard/app.js`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(readFileSync(join(STATIC_DIR, 'app.js')).length));
  });

  it('answers an unknown file 404 and another method 405, in the problem envelope', async () => {
    for (const path of ['/dashboard/nope.js', '/dashboard/../server/app.ts', '/dashboard/%2e%2e/package.json', '/dashboard/static/app.js']) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    const post = await fetch(`${server.url}/dashboard/`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(((await post.json()) as { detail: string }).detail).toBe('POST is not allowed here; allowed: GET, HEAD');
  });

  it('leaves /dashboard/v1/... to the dashboard API', async () => {
    const res = await fetch(`${server.url}/dashboard/v1/me`);
    expect(res.headers.get('content-type') ?? '').not.toMatch(/text\/html|javascript/);
    expect(res.headers.get('content-security-policy')).toBeNull();
  });
});

describe('web dashboard source', () => {
  const html = readFileSync(join(STATIC_DIR, 'index.html'), 'utf8');
  const scripts = WEB_DASHBOARD_FILES.filter((name) => name.endsWith('.js')).map((name) => [name, readFileSync(join(STATIC_DIR, name), 'utf8')] as const);

  it('has no inline script, style or event handler in the page', () => {
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) expect(tag).toMatch(/\bsrc="[a-z-]+\.js"/);
    expect(html).not.toMatch(/<script\b[^>]*>(?!<\/script>)/);
    expect(html).not.toMatch(/<style\b/);
    expect(html).not.toMatch(/\sstyle=/);
    expect(html).not.toMatch(/\son[a-z]+=/);
  });

  it('every module it imports is served', () => {
    for (const [name, source] of scripts) {
      for (const [, spec] of source.matchAll(/\bfrom '([^']+)'/g)) {
        expect(spec, name).toMatch(/^\.\/[a-z-]+\.js$/);
        expect(WEB_DASHBOARD_FILES as readonly string[], `${name} imports ${spec}`).toContain(spec!.slice(2));
      }
    }
  });

  it('never writes markup from data and only fetches the dashboard API of its own origin', () => {
    for (const [name, source] of scripts) {
      expect(source, name).not.toMatch(/\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function/);
      expect(source, name).not.toMatch(/https?:\/\//);
      expect(source, name).not.toMatch(/localStorage/);
    }
    const fetches = scripts.flatMap(([name, source]) => [...source.matchAll(/\bfetch\(/g)].map(() => name));
    expect(fetches).toEqual(['api.js']);
    expect(scripts.find(([name]) => name === 'api.js')![1]).toContain('new URL(`/dashboard/v1${path}`, window.location.origin)');
  });
});
