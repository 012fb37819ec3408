/**
 * The Deep Linking picker as a teacher meets it (issue 28; decisions LTI-110 to LTI-114), in Chromium at
 * 420 px (an LMS modal, a phone) and 1280 px, driven through the reference LMS's Deep Linking flow: the
 * tree with groups collapsed and their descriptions showing, counts of ticked items that follow the ticks
 * and the group checkbox, keyboard use, "nothing chosen" explained before any post, Cancel reaching the
 * LMS as a response with no item, the confirmation of what was added, axe-core with no serious or critical
 * violation, and no horizontal overflow. Screenshots: test-artifacts/picker/<width>/.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { SandboxLmsClient } from '../../server/sandbox/lms-client.ts';
import type { TestServer, Tool } from '../server/harness.ts';
import { createTool, startServer } from '../server/harness.ts';
import type { ToolServer } from '../server/outbound/fixtures.ts';
import { answer, setUrls, startToolServer } from '../server/outbound/fixtures.ts';
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
}, 120_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await toolServer?.close();
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

async function noHorizontalOverflow(page: Page): Promise<void> {
  const { scroll, client } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
  expect(scroll, 'horizontal overflow').toBeLessThanOrEqual(client);
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

for (const width of [420, 1280]) {
  describe(`the picker at ${width} px`, () => {
    const shot = screenshots(String(width), join(REPO_ROOT, 'test-artifacts', 'picker'));
    let page: Page;
    beforeAll(async () => {
      page = await context.newPage();
      await page.setViewportSize({ width, height: 900 });
    });
    afterAll(async () => {
      await page?.close();
    });

    it('the tools, then the tree: groups collapsed with their descriptions, nothing chosen explained, no serious axe violation', async () => {
      onTestFailed(failureShots(context, `picker-${width}`));
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
      onTestFailed(failureShots(context, `picker-${width}`));
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
      onTestFailed(failureShots(context, `picker-${width}`));
      await page.locator('summary', { hasText: 'Unit Alpha' }).click();
      await page.getByLabel(/Alpha quiz/).check();
      const before = (await lms.course(courseId)).resource_links.length;
      await page.getByRole('button', { name: 'Add the chosen activities' }).click();
      await shows(page.locator('h1'), 'Added to your course');
      await shot(page, 'confirmation');
      expect(await page.locator('ul.added li').allTextContents()).toEqual(['Alpha quiz Graded · 10 points', 'Beta test Graded · 25 points']);
      await noHorizontalOverflow(page);
      await shows(page.locator('h1'), 'Content added');
      // The reference LMS names each link it made after its title (what to launch next, issue 29).
      const made = await page.locator('#created li').allTextContents();
      expect(made.map((item) => item.replace(/ \(resource link [^)]+\)$/, ''))).toEqual(['Alpha quiz', 'Beta test']);
      expect((await lms.course(courseId)).resource_links.length).toBe(before + 2);
    });

    it('Cancel: the LMS gets a response with no item and closes the choice; nothing is made', async () => {
      onTestFailed(failureShots(context, `picker-${width}`));
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
}

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
