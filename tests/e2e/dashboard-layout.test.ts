/**
 * The web dashboard at 420 px and 1280 px wide, in Chromium (issue 17 §3, §4): a fresh install's platform team
 * creates the first builder and an operator from the web page (tokens shown once, with a copy button that
 * really copies), the builder registers a tool (the API key's copy button), sets its URLs, places a location
 * (the provisioning labels follow the state without a reload), a launch scores, and the Grades tab and the
 * audit log show it. At every step: nothing overflows or is clipped sideways (layout.ts), times are the
 * viewer's local time (the browser runs in Asia/Kolkata), IDs are shortened with a copy button, and a tool
 * offers only the status moves its status allows. Screenshots: test-artifacts/e2e/dashboard-layout/.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { createDashboardClient } from '../../client/index.ts';
import { startServer, type TestServer } from '../server/harness.ts';
import { answer, startToolServer, type ToolServer } from '../server/outbound/fixtures.ts';
import { accessibilityProblems, overflowProblems } from './layout.ts';
import { BrowserGuard, failureShots, launchChromium, screenshots, shows } from './support.ts';

const TIME_ZONE = 'Asia/Kolkata';
const LOCALE = 'en-GB';
const WIDTHS = [420, 1280] as const;

let server: TestServer;
let tool: ToolServer;
let browser: Browser;
let bootstrap: string;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, logLevel: 'warn', locationsTimeoutMs: 3000, provisionTimeoutMs: 3000 } });
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
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await tool?.close();
  await server?.stop();
});

/** The text the page must show for an ISO time: the viewer's zone and locale. */
function local(iso: string): string {
  return new Date(iso).toLocaleString(LOCALE, { dateStyle: 'medium', timeStyle: 'medium', timeZone: TIME_ZONE });
}

async function signIn(page: Page, token: string, who: string | RegExp): Promise<void> {
  await page.goto(`${server.url}/dashboard/`);
  await page.locator('#sign-in-token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await shows(page.locator('#identity-name'), who);
}

async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.locator('#sign-in').waitFor({ state: 'visible' });
}

async function clipboard(page: Page): Promise<string> {
  return page.evaluate(() => navigator.clipboard.readText());
}

for (const width of WIDTHS) {
  describe(`web dashboard at ${width} px`, () => {
    let context: BrowserContext;
    let guard: BrowserGuard;
    const shot = screenshots(`dashboard-layout/${width}`);

    beforeAll(async () => {
      // bypassCSP: axe-core is injected as a script the page's own policy (script-src 'self') would refuse.
      context = await browser.newContext({ viewport: { width, height: 900 }, timezoneId: TIME_ZONE, locale: LOCALE, bypassCSP: true });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
      guard = new BrowserGuard(context);
      await guard.install();
    });
    afterAll(async () => {
      await context?.close();
    });

    /**
     * A screenshot, then the layout check (a person sees the screenshot, the test sees the numbers), then
     * axe-core: no serious or critical accessibility violation (issue 29).
     */
    async function looksRight(page: Page, name: string): Promise<void> {
      await shot(page, name);
      expect(await overflowProblems(page), `${name} at ${width} px`).toEqual([]);
      expect(await accessibilityProblems(page), `${name} at ${width} px`).toEqual([]);
    }

    it('platform team: the first builder and an operator from the web page, tokens copied once', async () => {
      onTestFailed(failureShots(context, `dashboard-layout/${width}`));
      const page = await context.newPage();
      await signIn(page, bootstrap, 'Platform team');
      await shows(page.locator('#register-platform-note'), /Create a builder/);
      await looksRight(page, 'platform-home');

      await page.getByRole('link', { name: 'Builders' }).click();
      await page.locator('#builder-form input[name=name]').fill(`Ana Ruiz ${width}`);
      await page.locator('#builder-form input[name=email]').fill(`ana.${width}@northwind.example`);
      await page.getByRole('button', { name: 'Create builder' }).click();
      await page.locator('#builder-secret').waitFor({ state: 'visible' });
      const token = await page.locator('#builder-secret-value').inputValue();
      expect(token).toMatch(/^tisb_[A-Za-z0-9_-]{43}$/);
      await page.locator('#builder-secret-copy').getByRole('button', { name: 'Copy it' }).click();
      await shows(page.locator('#builder-secret-copy button'), 'Copied');
      expect(await clipboard(page)).toBe(token);
      const row = page.locator('#builder-list tbody tr').filter({ hasText: `Ana Ruiz ${width}` });
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
      await page.locator('#operator-form input[name=email]').fill(`kofi.${width}@northwind.example`);
      await page.getByRole('button', { name: 'Create operator' }).click();
      await page.locator('#operator-secret').waitFor({ state: 'visible' });
      const operatorToken = await page.locator('#operator-secret-value').inputValue();
      expect(operatorToken).toMatch(/^tiso_/);
      await looksRight(page, 'operators');
      await signOut(page);

      // The builder signs in with the copied token and registers a tool: its key is copied once.
      await signIn(page, token, `Ana Ruiz ${width} <ana.${width}@northwind.example>`);
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

      // Sandbox: place an assessment; the labels follow provisioning to its end without a reload.
      await page.getByRole('tab', { name: 'Sandbox' }).click();
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
}
