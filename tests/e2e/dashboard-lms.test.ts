/**
 * The web dashboard's LMS registrations page at 420 px and 1280 px wide, in Chromium (issue 13; decisions
 * LTI-06, LTI-07, LTI-62): a Moodle-shaped LMS registers itself (Dynamic Registration) and shows pending,
 * the platform team activates and deactivates it from the page, registers a Blackboard-shaped LMS by hand
 * (a refused URL shows the service's message), adds an institution's deployment, and every step is checked
 * for sideways overflow (layout.ts); the Sandbox's own registration is shown apart with no Deactivate (LTI-100);
 * a refused launch's report ID is listed on the registration and found by the search (issue 28). Screenshots:
 * test-artifacts/e2e/dashboard-lms/.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { ensureSandboxRegistration } from '../../server/sandbox/lms-registration.ts';
import { startServer, type TestServer } from '../server/harness.ts';
import { ROLES, startLms, type LmsFixture } from '../server/lti/lms-fixture.ts';
import { login, postIdToken } from '../server/lti/support.ts';
import { overflowProblems } from './layout.ts';
import { BrowserGuard, failureShots, launchChromium, screenshots, shows } from './support.ts';

const WIDTHS = [420, 1280] as const;

let server: TestServer;
let browser: Browser;
let platformToken: string;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, lmsAutoActivate: false, logLevel: 'warn' } });
  platformToken = readFileSync(join(server.dataDir, 'platform-token'), 'utf8').trim();
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

for (const width of WIDTHS) {
  describe(`LMS registrations page at ${width} px`, () => {
    let context: BrowserContext;
    let guard: BrowserGuard;
    let moodle: LmsFixture;
    const shot = screenshots(`dashboard-lms/${width}`);

    beforeAll(async () => {
      // Each width's own Moodle, registered through Dynamic Registration: it arrives pending.
      moodle = await startLms('moodle');
      moodle.connect(server.url);
      const registered = await fetch(`${server.url}/lti/register?${new URLSearchParams({ openid_configuration: moodle.urls.openidConfiguration, registration_token: 'reg-token-1' })}`);
      expect(registered.status).toBe(200);
      await registered.text();
      context = await browser.newContext({ viewport: { width, height: 900 } });
      guard = new BrowserGuard(context);
      await guard.install();
    });
    afterAll(async () => {
      await context?.close();
      await moodle?.close();
    });

    async function looksRight(page: Page, name: string): Promise<void> {
      await shot(page, name);
      expect(await overflowProblems(page), `${name} at ${width} px`).toEqual([]);
    }

    it('lists, shows, activates, deactivates, registers by hand and adds a deployment', async () => {
      onTestFailed(failureShots(context, `dashboard-lms/${width}`));
      const page = await context.newPage();
      await page.goto(`${server.url}/dashboard/`);
      await page.locator('#sign-in-token').fill(platformToken);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await shows(page.locator('#identity-name'), 'Platform team');
      await page.getByRole('link', { name: 'LMS registrations' }).click();

      // The service's URLs for the LMS administrator.
      await shows(page.locator('#lms-urls dd').first().locator('code'), `${server.url}/lti/register`);
      const moodleRow = page.locator('#lms-list tbody tr').filter({ hasText: moodle.clientId });
      await shows(moodleRow.locator('.badge'), 'pending');
      await shows(moodleRow.locator('td').nth(4), 'dynamic');
      await looksRight(page, 'list');

      // Show, activate, deactivate: the status follows on the row and in the detail.
      await moodleRow.getByRole('button', { name: /^Show/ }).click();
      await page.locator('#lms-detail').waitFor({ state: 'visible' });
      await shows(page.locator('#lms-deployments li'), moodle.deploymentId);
      expect(await page.locator('#lms-deployment-form').isHidden()).toBe(true);
      expect(await page.locator('#lms-deactivate').isHidden()).toBe(true);
      await looksRight(page, 'pending');
      await page.locator('#lms-activate').click();
      await shows(page.locator('#lms-detail-status .badge'), 'active');
      await shows(moodleRow.locator('.badge'), 'active');
      expect(await page.locator('#lms-activate').isHidden()).toBe(true);
      const id = (await page.locator('#lms-detail').getAttribute('data-registration')) ?? '';
      expect((await server.services.store.lti.getRegistration(id))?.status).toBe('active');
      await looksRight(page, 'active');

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
      await looksRight(page, 'refusals');
      await page.locator('#lms-deactivate').click();
      await shows(page.locator('#lms-detail-status .badge'), 'inactive');
      expect((await server.services.store.lti.getRegistration(id))?.status).toBe('inactive');

      // By hand: a URL against the rules is refused with the service's words, then a Blackboard-shaped one.
      const clientId = `bb-global-${width}-6f1c2e0a-9d4b-4c7e-8a51-2b3c4d5e6f70`;
      const form = page.locator('#lms-form');
      await form.locator('input[name=issuer]').fill('https://blackboard.com');
      await form.locator('input[name=client_id]').fill(clientId);
      await form.locator('textarea[name=deployments]').fill('c1f0e5a2-7b3d-4e9f-a6c8-1d2e3f4a5b6c');
      await form.locator('input[name=auth_url]').fill(`${moodle.origin}/api/v1/gateway/oidcauth`);
      await form.locator('input[name=token_url]').fill('http://10.0.0.5/api/v1/gateway/oauth2/jwttoken');
      await form.locator('input[name=jwks_url]').fill(`${moodle.origin}/api/v1/management/applications/${clientId}/jwks.json`);
      await form.locator('input[name=title]').fill(`Northwind Learn ${width}`);
      await guard.expectingRefusals([422], async () => {
        await form.getByRole('button', { name: 'Register LMS' }).click();
        await shows(page.locator('#lms-form-error'), 'token_url must be an absolute https:// URL');
      });
      await form.locator('input[name=token_url]').fill(`${moodle.origin}/api/v1/gateway/oauth2/jwttoken`);
      await form.getByRole('button', { name: 'Register LMS' }).click();
      await shows(page.locator('#lms-form-status'), `Saved: Northwind Learn ${width} is pending.`);
      await shows(page.locator('#lms-detail-title'), `Northwind Learn ${width}`);
      const bbRow = page.locator('#lms-list tbody tr').filter({ hasText: clientId });
      await shows(bbRow.locator('td').nth(4), 'manual');
      await looksRight(page, 'manual');

      // A second institution on Blackboard's one client: a deployment added to the same registration.
      await page.locator('#lms-deployment-form input[name=deployment]').fill('9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d');
      await page.locator('#lms-deployment-form').getByRole('button', { name: 'Add deployment' }).click();
      await shows(page.locator('#lms-deployments li').nth(1), '9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d');
      await shows(bbRow.locator('td').nth(3), '2');
      const stored = await server.services.store.lti.findRegistration('https://blackboard.com', clientId);
      expect(stored).toMatchObject({ status: 'pending', method: 'manual', deployments: ['c1f0e5a2-7b3d-4e9f-a6c8-1d2e3f4a5b6c', '9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d'] });
      await looksRight(page, 'deployments');

      expect(guard.foreignRequests).toEqual([]);
      expect(guard.consoleErrors).toEqual([]);
    }, 120_000);
  });
}

describe("the Sandbox's own registration on the page (decision LTI-100)", () => {
  it('is shown apart from the schools, and its detail offers no Deactivate but says why', async () => {
    const own = await ensureSandboxRegistration(server.services);
    const context = await browser.newContext({ viewport: { width: 420, height: 900 } });
    const guard = new BrowserGuard(context);
    await guard.install();
    onTestFailed(failureShots(context, 'dashboard-lms/sandbox'));
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/dashboard/`);
      await page.locator('#sign-in-token').fill(platformToken);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('link', { name: 'LMS registrations' }).click();
      await shows(page.locator('#lms-sandbox'), /^Sandbox LMS \(built into this service\) lreg_.*active/);
      expect(await page.locator('#lms-list tbody tr').filter({ hasText: own.id }).count()).toBe(0);
      await page.locator('#lms-sandbox').getByRole('button', { name: /^Show/ }).click();
      await page.locator('#lms-detail').waitFor({ state: 'visible' });
      await shows(page.locator('#lms-detail-title'), 'Sandbox LMS (built into this service)');
      expect(await page.locator('#lms-deactivate').isHidden()).toBe(true);
      expect(await page.locator('#lms-sandbox-note').isVisible()).toBe(true);
      await screenshots('dashboard-lms/sandbox')(page, 'detail');
      expect(await overflowProblems(page)).toEqual([]);
      expect(guard.consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);
});
