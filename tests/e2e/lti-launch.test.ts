/**
 * The LTI path in Chromium, from an LMS page to the tool (issue 13, issue 28).
 *
 * From a Moodle-shaped LMS page on loopback: the page starts the OIDC login, the browser follows the
 * service's redirect to the LMS's auth endpoint, which form-posts the id_token back (the state cookie riding
 * along); the instructor picks a tool and a location in the service's picker and the Deep Linking response
 * goes back to the LMS; then a student opens the placed link and the browser reaches the tool's callback.
 * Then the same link from a course page that frames the tool and offers platform storage, in a browser that
 * drops the service's cookie: the state travels through the LMS page's postMessage storage instead
 * (decisions LTI-08, LTI-09, LTI-63).
 *
 * Through the reference LMS (the Sandbox's LMS, in process under /lms), the Deep Linking picker as a teacher
 * meets it (decisions LTI-110 to LTI-114): the administrator's Dynamic Registration window registers the
 * service (beforeAll), then the tree with groups collapsed and their descriptions showing, counts of ticked
 * items that follow the ticks and the group checkbox, keyboard use, "nothing chosen" explained before any
 * post, Cancel reaching the LMS as a response with no item, the confirmation of what was added, axe-core with
 * no serious or critical violation, and no horizontal overflow. The picker is used at 420 px (an LMS modal,
 * a phone) and each state is measured again with the page widened to 1280 px (decision CI-42). Then a
 * student launches the link the LMS made, which reaches the tool's callback, with and without platform
 * storage (the LMS frames the service and answers lti.put_data).
 *
 * One service and one browser for both LMSes (CI-42); no request may leave loopback. Screenshots:
 * test-artifacts/e2e/lti-launch/ and test-artifacts/picker/.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { registerManually } from '../../server/lti/registration.ts';
import { SandboxLmsClient } from '../../server/sandbox/lms-client.ts';
import type { TestServer, Tool } from '../server/harness.ts';
import { createTool, startServer } from '../server/harness.ts';
import type { ToolServer } from '../server/outbound/fixtures.ts';
import { answer, setUrls, startToolServer } from '../server/outbound/fixtures.ts';
import { ROLES, startLms, type LmsFixture } from '../server/lti/lms-fixture.ts';
import { BrowserGuard, failureShots, launchChromium, REPO_ROOT, screenshots, shows } from './support.ts';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const LOCATIONS = {
  message: 'Choose this week’s work.',
  locations: { welcome: { type: 'content', label: 'Welcome to the course' } },
  grouped_locations: [
    { label: 'Unit Alpha', description: 'Numbers and counting', locations: { 'alpha-quiz': { type: 'assessment', label: 'Alpha quiz', points: 10 } } },
    {
      label: 'Unit Beta',
      description: 'Fractions: a practice set and a graded test',
      locations: {
        'beta-practice': { type: 'practice', label: 'Beta practice' },
        'beta-test': { type: 'assessment', label: 'Beta test', points: 25, description: 'Twenty questions, about 40 minutes' },
      },
      grouped_locations: [{ label: 'Extra work', locations: { 'beta-extra': { type: 'practice', label: 'Beta extra problems' } } }],
    },
    { label: 'Unit Gamma', description: 'Coming in spring' },
  ],
};

let server: TestServer;
let toolServer: ToolServer;
let tool: Tool;
let lms: SandboxLmsClient;
let browser: Browser;
let context: BrowserContext;
let guard: BrowserGuard;
let courseId = '';
let teacher = '';
let student = '';
/** The resource link the LMS made for the Beta test, which the student launches. */
let placedLink = '';

// The Moodle-shaped LMS page, its tool and its own browser context (the cookie-dropping route is per context).
let moodle: LmsFixture;
let labServer: ToolServer;
let lab: Tool;
let moodleContext: BrowserContext;
let moodleGuard: BrowserGuard;
let placementLink = '';
const screenshot = screenshots('lti-launch');

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, lmsAutoActivate: true, logLevel: 'warn' } });
  toolServer = await startToolServer();
  toolServer.route('/launch', answer.text('<!doctype html><title>Maths</title><p>launched</p>', 200, 'text/html'));
  toolServer.route('/locations', answer.json(LOCATIONS));
  tool = await createTool(server, { name: 'Maths Practice' });
  await setUrls(server, tool.app.id, { callbackUrl: toolServer.url('/launch'), locationsUrl: toolServer.url('/locations') });
  const host = server.services.sandboxLms;
  await host.ready();
  lms = new SandboxLmsClient(host.issuer(), host.controlToken, host.transport);
  browser = await launchChromium();
  context = await browser.newContext();
  guard = new BrowserGuard(context);
  await guard.install();

  const tab = await context.newPage();
  const initiated = await lms.initiateRegistration(`${server.url}/lti/register`);
  const register = new URL(`${host.issuer()}/admin/register`);
  register.searchParams.set('registration_token', initiated.registration_token);
  register.searchParams.set('tool_url', initiated.url);
  await tab.goto(register.toString());
  await shows(tab.locator('#status'), 'Registration finished.');
  await tab.close();
  const { registrations } = await lms.registrations();
  const course = await lms.createCourse({ deployment_id: registrations[0]?.deployments[0]?.deployment_id ?? '', title: 'Maths 6', label: 'MATH-6' });
  courseId = course.id;
  teacher = (await lms.createUser({ given_name: 'Tess', family_name: 'Teacher', email: 'tess@school.example' })).sub;
  await lms.enrol(courseId, teacher, ['instructor']);
  student = (await lms.createUser({ given_name: 'Sam', family_name: 'Student', email: 'sam@school.example' })).sub;
  await lms.enrol(courseId, student, ['student']);

  moodle = await startLms('moodle');
  moodle.connect(server.url);
  moodle.browser.loginUrl = `${server.url}/lti/login`;
  moodle.browser.targetLinkUri = `${server.url}/lti/launch`;
  moodle.browser.claims = (hint, nonce) => {
    if (hint === 'pick') return moodle.deepLinkingClaims({ nonce, sub: 'teacher-1', roles: [ROLES.instructor], contextId: 'moodle-7', data: 'dl-data' });
    return moodle.resourceLinkClaims({
      nonce,
      sub: 'student-1',
      roles: [ROLES.learner],
      contextId: 'moodle-7',
      resourceLinkId: 'moodle-link-1',
      custom: { tis_placement: placementLink },
      lineItem: moodle.urls.lineItem(3),
    });
  };
  labServer = await startToolServer();
  labServer.route('/launch', answer.text('<!DOCTYPE html><title>Lab</title><h1>Statistics Lab is open</h1>', 200, 'text/html'));
  labServer.route('/locations', answer.json({ locations: { 'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 10 } } }));
  lab = await createTool(server, { name: 'Statistics Lab' });
  await setUrls(server, lab.app.id, { callbackUrl: labServer.url('/launch'), locationsUrl: labServer.url('/locations') });
  const saved = await registerManually(
    { store: server.services.store, config: server.services.config, lms: server.services.lti.lms },
    { issuer: moodle.issuer, clientId: moodle.clientId, deployments: [moodle.deploymentId], authUrl: moodle.urls.auth, tokenUrl: moodle.urls.token, jwksUrl: moodle.urls.jwks },
  );
  if (!saved.ok) throw new Error(saved.message);
  await server.services.store.lti.setStatus(saved.registration.id, 'active');
  moodleContext = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  moodleGuard = new BrowserGuard(moodleContext);
  await moodleGuard.install();
}, 120_000);

afterAll(async () => {
  await context?.close();
  await moodleContext?.close();
  await browser?.close();
  await toolServer?.close();
  await labServer?.close();
  await moodle?.close();
  await server?.stop();
});

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** axe-core's serious and critical violations on the page as it is now. */
async function axeViolations(page: Page): Promise<AxeViolation[]> {
  // The page's CSP admits only its own nonced script (page.addScriptTag is refused, as any injected script
  // should be), so axe goes in through the DevTools protocol, which the CSP does not govern.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  const results = await page.evaluate(async () => (window as unknown as { axe: { run: () => Promise<{ violations: AxeViolation[] }> } }).axe.run());
  return results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

const NARROW = 420;
const WIDE = 1280;

/** No horizontal overflow at 420 px and, the same page widened, at 1280 px; then back to 420 px. */
async function noHorizontalOverflow(page: Page, widths: readonly number[] = [NARROW, WIDE, NARROW]): Promise<void> {
  for (const width of widths) {
    await page.setViewportSize({ width, height: 900 });
    const { scroll, client } = await page.evaluate(
      () =>
        new Promise<{ scroll: number; client: number }>((resolve) =>
          // Two frames: the resize's layout has run before the page is measured.
          requestAnimationFrame(() => requestAnimationFrame(() => resolve({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }))),
        ),
    );
    expect(scroll, `horizontal overflow at ${width} px`).toBeLessThanOrEqual(client);
  }
}

/** A fresh Deep Linking request of the teacher, through the LMS and the service's login, to the tool's tree. */
async function openPicker(page: Page): Promise<void> {
  await page.goto((await lms.deepLink(courseId, teacher)).url);
  await shows(page.locator('h1'), 'Choose a tool');
  await page.getByRole('button', { name: 'Maths Practice' }).click();
  await shows(page.locator('h1'), 'Maths Practice');
}

const count = (page: Page, group: string) => page.locator('li.group', { has: page.locator(`> details > summary .group-label:text-is("${group}")`) }).locator('> details > summary .count');
const groupBox = (page: Page, group: string) => page.getByRole('checkbox', { name: `Every activity in ${group}` });

describe(`the picker at ${NARROW} and ${WIDE} px`, () => {
  const shot = screenshots(String(NARROW), join(REPO_ROOT, 'test-artifacts', 'picker'));
  let page: Page;
  beforeAll(async () => {
    page = await context.newPage();
    await page.setViewportSize({ width: NARROW, height: 900 });
  });
  afterAll(async () => {
    await page?.close();
  });

  it('the tools, then the tree: groups collapsed with their descriptions, nothing chosen explained, no serious axe violation', async () => {
    onTestFailed(failureShots(context, 'picker'));
    await page.goto((await lms.deepLink(courseId, teacher)).url);
    await shows(page.locator('h1'), 'Choose a tool');
    await noHorizontalOverflow(page);
    expect(await axeViolations(page)).toEqual([]);
    await shot(page, 'tools');
    await page.getByRole('button', { name: 'Maths Practice' }).click();
    await shows(page.locator('h1'), 'Maths Practice');

    // Top-level locations open, groups collapsed; descriptions show while collapsed (contract, LOC-30).
    await expect.poll(() => page.getByLabel(/Welcome to the course/).isVisible()).toBe(true);
    expect(await page.getByLabel(/Beta practice/).isVisible()).toBe(false);
    expect(await page.getByText('Fractions: a practice set and a graded test').isVisible()).toBe(true);
    expect(await page.getByText('Numbers and counting').isVisible()).toBe(true);
    await shows(count(page, 'Unit Beta'), '0 of 3 chosen');
    await shows(count(page, 'Unit Gamma'), '0 of 0 chosen');
    await shows(page.locator('#chosen'), 'Nothing chosen yet');
    await noHorizontalOverflow(page);
    expect(await axeViolations(page)).toEqual([]);
    await shot(page, 'collapsed');

    // Add with nothing chosen: the page says so and keeps the teacher here.
    await page.getByRole('button', { name: 'Add the chosen activities' }).click();
    await shows(page.getByRole('alert'), 'Tick at least one activity to add, or choose Cancel.');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('pick-error');
    expect(page.url()).toBe(`${server.url}/lti/deep-linking`);
    await shows(page.locator('h1'), 'Maths Practice');
    await shot(page, 'nothing-chosen');
  });

  it('by keyboard: a group opens, ticks count per group (LOC-24), the group checkbox takes and releases its subtree (LOC-25)', async () => {
    onTestFailed(failureShots(context, 'picker'));
    const beta = page.locator('summary', { hasText: 'Unit Beta' });
    await beta.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByLabel(/Beta practice/).isVisible()).toBe(true);
    await page.getByLabel(/Beta practice/).focus();
    await page.keyboard.press('Space');
    await shows(count(page, 'Unit Beta'), '1 of 3 chosen');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.value)).toBe('beta-test');
    await page.keyboard.press('Space');
    await shows(count(page, 'Unit Beta'), '2 of 3 chosen');
    await shows(page.locator('#chosen'), '2 chosen');
    expect(await page.getByRole('alert').isVisible()).toBe(false);
    expect(await groupBox(page, 'Unit Beta').evaluate((box: HTMLInputElement) => box.indeterminate)).toBe(true);
    await shot(page, 'two-ticked');

    await groupBox(page, 'Unit Beta').check();
    await shows(count(page, 'Unit Beta'), '3 of 3 chosen');
    await shows(count(page, 'Extra work'), '1 of 1 chosen');
    expect(await page.getByLabel(/Beta extra problems/).isChecked()).toBe(true);
    await groupBox(page, 'Unit Beta').uncheck();
    await shows(count(page, 'Unit Beta'), '0 of 3 chosen');
    expect(await page.getByLabel(/Beta practice/).isChecked()).toBe(false);
    await page.getByLabel(/Beta test/).check();
    await shows(count(page, 'Unit Beta'), '1 of 3 chosen');
    await noHorizontalOverflow(page);
    expect(await axeViolations(page)).toEqual([]);
    await shot(page, 'open');
  });

  it('Add: the confirmation says what was added, then the response reaches the LMS, which makes the links', async () => {
    onTestFailed(failureShots(context, 'picker'));
    await page.locator('summary', { hasText: 'Unit Alpha' }).click();
    await page.getByLabel(/Alpha quiz/).check();
    const before = (await lms.course(courseId)).resource_links.length;
    await page.getByRole('button', { name: 'Add the chosen activities' }).click();
    await shows(page.locator('h1'), 'Added to your course');
    await shot(page, 'confirmation');
    expect(await page.locator('ul.added li').allTextContents()).toEqual(['Alpha quiz Graded · 10 points', 'Beta test Graded · 25 points']);
    // At 420 px only: the confirmation returns to the LMS by itself after 1.5 s, too soon to widen it safely.
    await noHorizontalOverflow(page, [NARROW]);
    await shows(page.locator('h1'), 'Content added');
    // The reference LMS names each link it made after its title (what to launch next, issue 29).
    const made = await page.locator('#created li').allTextContents();
    expect(made.map((item) => item.replace(/ \(resource link [^)]+\)$/, ''))).toEqual(['Alpha quiz', 'Beta test']);
    expect((await lms.course(courseId)).resource_links.length).toBe(before + 2);
    placedLink = (await page.locator('#created li').nth(1).getAttribute('data-resource-link')) ?? '';
    expect(placedLink).not.toBe('');
    // The LMS's page says what to do next with what was placed (issue 29).
    await shows(page.locator('#next'), /^Next: launch an item .*\/controls\/launches/);
    expect(await page.locator('#next').textContent()).toContain(`/controls/courses/${courseId}/gradebook`);
  });

  it('Cancel: the LMS gets a response with no item and closes the choice; nothing is made', async () => {
    onTestFailed(failureShots(context, 'picker'));
    await openPicker(page);
    await page.getByLabel(/Welcome to the course/).check();
    const before = (await lms.course(courseId)).resource_links.length;
    await page.getByRole('button', { name: 'Cancel' }).click();
    await shows(page.locator('h1'), 'Nothing added');
    expect(page.url()).toBe(`${server.url}/lms/deep-linking/return`);
    expect(await page.locator('#created li').count()).toBe(0);
    expect((await lms.course(courseId)).resource_links.length).toBe(before);
    expect(guard.consoleErrors).toEqual([]);
    expect(guard.foreignRequests).toEqual([]);
  });
});

describe('the picker in the LMS frame', () => {
  it('framed at 420 px with platform storage: the tree fits the frame, and Cancel reaches the LMS from inside it', async () => {
    onTestFailed(failureShots(context, 'picker-framed'));
    const page = await context.newPage();
    await page.setViewportSize({ width: 420, height: 900 });
    await lms.settings({ platform_storage: true });
    try {
      await page.goto((await lms.deepLink(courseId, teacher)).url);
      const frame = page.frameLocator('iframe[name=tool]');
      await shows(frame.locator('h1'), 'Choose a tool');
      await frame.getByRole('button', { name: 'Maths Practice' }).click();
      await shows(frame.locator('h1'), 'Maths Practice');
      await frame.locator('summary', { hasText: 'Unit Beta' }).click();
      await frame.getByLabel(/Beta test/).check();
      await shows(frame.locator('li.group', { has: frame.locator('> details > summary .group-label:text-is("Unit Beta")') }).locator('> details > summary .count'), '1 of 3 chosen');
      const inner = page.frame({ name: 'tool' });
      const widths = await inner?.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
      expect(widths?.client).toBeLessThan(420);
      expect(widths?.scroll).toBeLessThanOrEqual(widths?.client ?? 0);
      await screenshots('framed', join(REPO_ROOT, 'test-artifacts', 'picker'))(page, 'framed-open');
      await frame.getByRole('button', { name: 'Cancel' }).click();
      await shows(frame.locator('h1'), 'Nothing added');
      expect(guard.consoleErrors).toEqual([]);
    } finally {
      await lms.settings({ platform_storage: false });
      await page.close();
    }
  });
});

describe("a student's launch of the link the LMS made", () => {
  it("reaches the tool's callback, then again with platform storage, the LMS framing the service; the LMS's root says what it is", async () => {
    onTestFailed(failureShots(context, 'picker-launch'));
    expect(placedLink).not.toBe('');
    const launched = (): number => toolServer.to('/launch').filter((r) => r.method === 'POST').length;
    const before = launched();
    const page = await context.newPage();
    try {
      // The LMS's own root says what it is, rather than 404.
      await page.goto(`${server.services.sandboxLms.issuer()}/`);
      await shows(page.locator('h1'), 'Reference LMS');
      expect(await page.locator('body').textContent()).toContain('/.well-known/openid-configuration');

      await page.goto((await lms.launch(placedLink, student)).url);
      await shows(page.locator('p'), 'launched');
      expect(launched()).toBe(before + 1);

      // Platform storage: the LMS opens the service in a frame and keeps the login state for it.
      await lms.settings({ platform_storage: true });
      await page.goto((await lms.launch(placedLink, student)).url);
      await shows(page.frameLocator('iframe[name=tool]').locator('p'), 'launched');
      expect(launched()).toBe(before + 2);
      expect(guard.consoleErrors).toEqual([]);
      expect(guard.foreignRequests).toEqual([]);
    } finally {
      await lms.settings({ platform_storage: false });
      await page.close();
    }
  });
});

async function openCourse(launch: string): Promise<Page> {
  const page = await moodleContext.newPage();
  await page.goto(`${moodle.origin}/course?launch=${launch}`);
  await page.getByRole('button', { name: 'Open' }).click();
  return page;
}

describe('LTI in Chromium from a Moodle-shaped LMS page', () => {
  it('an instructor adds an activity through Deep Linking, and a student opens it in the tool', async () => {
    onTestFailed(failureShots(moodleContext, 'lti-launch'));
    const page = await openCourse('pick');
    await shows(page.locator('h1'), 'Choose a tool');
    await screenshot(page, 'tools');
    await page.getByRole('button', { name: 'Statistics Lab' }).click();
    await shows(page.locator('h1'), 'Statistics Lab');
    await page.getByLabel(/Week 1 quiz/).check();
    await page.getByRole('button', { name: /Add the chosen/ }).click();
    await shows(page.locator('h1'), 'Content added');
    await shows(page.locator('li'), 'Week 1 quiz');
    expect(moodle.deepLinkingResponses).toHaveLength(1);
    const payload = JSON.parse(Buffer.from((moodle.deepLinkingResponses[0] ?? '').split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    const items = payload['https://purl.imsglobal.org/spec/lti-dl/claim/content_items'] as Array<{ custom: { tis_placement: string } }>;
    placementLink = items[0]?.custom.tis_placement ?? '';
    expect(placementLink).not.toBe('');
    await page.close();

    const student = await openCourse('open');
    await shows(student.locator('h1'), 'Statistics Lab is open');
    await screenshot(student, 'tool');
    const delivered = labServer.to('/launch').filter((r) => r.method === 'POST');
    expect(delivered).toHaveLength(1);
    const claims = JSON.parse(Buffer.from((delivered[0]?.form.get('launch_data') ?? '').split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      user: { groups: string[] };
      course: { name: string };
      grade: { submit: string | null };
    };
    expect(claims.user.groups).toEqual(['student']);
    expect(claims.grade.submit).not.toBeNull();
    expect(moodleGuard.consoleErrors).toEqual([]);
    expect(moodleGuard.foreignRequests).toEqual([]);
  });

  it('platform storage: the tool framed in the LMS, the state cookie dropped, the state kept through lti.put_data and lti.get_data', async () => {
    onTestFailed(failureShots(moodleContext, 'lti-launch'));
    expect(placementLink).not.toBe('');
    // A browser that keeps the framed service's cookie from it (third-party cookies blocked): the login's
    // state cookie is gone by the time the LMS's auth endpoint answers, so the id_token post comes without
    // it. The requests themselves go on over the network unchanged.
    const dropCookies = async (route: Route): Promise<void> => {
      await moodleContext.clearCookies();
      await route.continue();
    };
    const authRoute = `${moodle.urls.auth}?**`;
    await moodleContext.route(authRoute, dropCookies);
    try {
      const before = labServer.to('/launch').filter((r) => r.method === 'POST').length;
      const page = await moodleContext.newPage();
      await page.goto(`${moodle.origin}/course-framed?launch=open`);
      await page.getByRole('button', { name: 'Open' }).click();
      await shows(page.frameLocator('iframe[name=tool]').locator('h1'), 'Statistics Lab is open');
      await screenshot(page, 'platform-storage');
      const log = (await page.evaluate(() => (window as unknown as { lmsStorageLog: Array<{ subject: string; key: string; origin: string }> }).lmsStorageLog)) ?? [];
      expect(log.map((m) => m.subject)).toEqual(['lti.put_data', 'lti.get_data']);
      expect(log[0]?.key).toMatch(/^state_/);
      expect(log[1]?.key).toBe(log[0]?.key);
      expect(log.every((m) => m.origin === server.url)).toBe(true);
      expect(labServer.to('/launch').filter((r) => r.method === 'POST')).toHaveLength(before + 1);
      expect(moodleGuard.consoleErrors).toEqual([]);
      expect(moodleGuard.foreignRequests).toEqual([]);
    } finally {
      await moodleContext.unroute(authRoute, dropCookies);
    }
  });
});
