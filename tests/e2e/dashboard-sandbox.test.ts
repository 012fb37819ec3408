/**
 * End to end, in Chromium, through the web dashboard only: a builder registers a tool and sets its URLs
 * (a URL the rules refuse shows the service's message), the platform team activates it, the builder opens
 * the Sandbox picker, places an assessment and launches it as a student. The launch page hands the browser
 * to the example quiz tool, a real process on loopback, which stores a row and a file and submits a score;
 * the Grades tab shows the score. The row, the file and the score are then read back through the APIs.
 * Afterwards: key rotation, a copy of the trial course and a reset, each as the page shows it.
 *
 * The service runs with the loopback development switch on (the tool is on http://127.0.0.1). The test
 * fails on any console error it does not expect and on any request that leaves loopback. Screenshots of
 * every step go to test-artifacts/e2e/.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed } from 'vitest';
import { createDashboardClient } from '../../client/index.ts';
import { files, rows, type LaunchClaims } from '../../client/tool/index.ts';
import type { DashboardClient } from '../../client/index.ts';
import { startServer, type TestServer } from '../server/harness.ts';
import { BrowserGuard, failureShots, launchChromium, screenshots, shows, startQuizTool, type QuizProcess } from './support.ts';

const BUILDER = { name: 'Erin Builder', email: 'erin.builder@northwind.example' };
const QUIZ_MESSAGE = 'Pick the quizzes to add to this course. Practice items are never graded.';

const screenshot = screenshots('dashboard-sandbox');

let server: TestServer;
let browser: Browser;
let context: BrowserContext;
let guard: BrowserGuard;
let tool: QuizProcess | null = null;
let platformToken: string;
let builderToken: string;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, logLevel: 'warn' } });
  // The platform team's token, generated at first start into DATA_DIR (openapi/dashboard, platformToken).
  platformToken = readFileSync(join(server.dataDir, 'platform-token'), 'utf8').trim();
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  guard = new BrowserGuard(context);
  await guard.install();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await tool?.stop();
  await server?.stop();
});

async function signIn(page: Page, token: string, who: string): Promise<void> {
  await page.locator('#sign-in-token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await shows(page.locator('#identity-name'), who);
}

async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('#sign-in').waitFor({ state: 'visible' });
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
}

/** The claims of a launch token, read without verifying it: the tool verified it already. */
function claimsOf(launchData: string): LaunchClaims {
  return JSON.parse(Buffer.from(launchData.split('.')[1]!, 'base64url').toString('utf8')) as LaunchClaims;
}

beforeEach(() => {
  onTestFailed(failureShots(context, 'dashboard-sandbox'));
});

describe('web dashboard, end to end with the example quiz tool', () => {
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
    await signIn(page, platformToken, 'Platform team');
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
    await signIn(page, platformToken, 'Platform team');
    await shows(page.locator('#tool-name'), 'Statistics Quiz');
    await page.getByRole('button', { name: 'Activate' }).click();
    await shows(page.locator('#tool-status'), 'active');
    expect(await page.locator('#activate').isHidden()).toBe(true);
    expect(await page.locator('#suspend').isVisible()).toBe(true);
    await screenshot(page, 'activated-by-platform');
    await signOut(page);
    await signIn(page, builderToken, builderName);
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
    // The reset revoked the student's token, and the next launch finds the quiz as never attempted.
    expect((await rows(claims.storage.member_location, claims.api.token!).get()).error?.detail).toBe('Invalid bearer token');
    await page.getByLabel('Launch Unit 1 quiz as').selectOption('student_1');
    const again = context.waitForEvent('page');
    await page.getByRole('button', { name: 'Launch Unit 1 quiz' }).click();
    const relaunched = await again;
    await relaunched.locator('form#quiz').waitFor({ state: 'visible', timeout: 40_000 });
    expect(await relaunched.locator('#previous').count()).toBe(0);
    await screenshot(relaunched, 'quiz-after-reset');
    await relaunched.close();
    expect(launches).toHaveLength(2);
    const afterReset = await rows(launches[1]!.storage.member_location, launches[1]!.api.token!).get();
    expect(afterReset.data).toEqual({ quiz: 'unit-1-quiz', answers: {}, attempts: 0 });
    await page.getByRole('tab', { name: 'Grades' }).click();
    await shows(page.locator('#gradebook .column p'), 'No scores yet.');
    expect(await page.locator('#history tbody tr').count()).toBe(1);
    await screenshot(page, 'grades-after-reset');

    expect(guard.foreignRequests).toEqual([]);
    expect(guard.consoleErrors).toEqual([]);
  }, 240_000);
});
