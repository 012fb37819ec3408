/**
 * The whole LTI path in Chromium (issue 13): a Moodle-shaped LMS page on loopback starts the OIDC login,
 * the browser follows the service's redirect to the LMS's auth endpoint, which form-posts the id_token back
 * (the state cookie riding along); the instructor picks a tool and a location in the service's picker and
 * the Deep Linking response goes back to the LMS; then a student opens the placed link and the browser
 * reaches the tool's callback. Then the same link from a course page that frames the tool and offers
 * platform storage, in a browser that drops the service's cookie: the state travels through the LMS
 * page's postMessage storage instead (decisions LTI-08, LTI-09, LTI-63). No request may leave loopback.
 */
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { registerManually } from '../../server/lti/registration.ts';
import { createTool, startServer, type TestServer, type Tool } from '../server/harness.ts';
import { answer, setUrls, startToolServer, type ToolServer } from '../server/outbound/fixtures.ts';
import { ROLES, startLms, type LmsFixture } from '../server/lti/lms-fixture.ts';
import { BrowserGuard, failureShots, launchChromium, screenshots, shows } from './support.ts';

const screenshot = screenshots('lti-launch');

let server: TestServer;
let lms: LmsFixture;
let toolServer: ToolServer;
let tool: Tool;
let browser: Browser;
let context: BrowserContext;
let guard: BrowserGuard;
let placementLink = '';

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, logLevel: 'warn' } });
  lms = await startLms('moodle');
  lms.connect(server.url);
  lms.browser.loginUrl = `${server.url}/lti/login`;
  lms.browser.targetLinkUri = `${server.url}/lti/launch`;
  lms.browser.claims = (hint, nonce) => {
    if (hint === 'pick') return lms.deepLinkingClaims({ nonce, sub: 'teacher-1', roles: [ROLES.instructor], contextId: 'moodle-7', data: 'dl-data' });
    return lms.resourceLinkClaims({
      nonce,
      sub: 'student-1',
      roles: [ROLES.learner],
      contextId: 'moodle-7',
      resourceLinkId: 'moodle-link-1',
      custom: { tis_placement: placementLink },
      lineItem: lms.urls.lineItem(3),
    });
  };
  toolServer = await startToolServer();
  toolServer.route('/launch', answer.text('<!DOCTYPE html><title>Lab</title><h1>Statistics Lab is open</h1>', 200, 'text/html'));
  toolServer.route('/locations', answer.json({ locations: { 'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 10 } } }));
  tool = await createTool(server, { name: 'Statistics Lab' });
  await setUrls(server, tool.app.id, { callbackUrl: toolServer.url('/launch'), locationsUrl: toolServer.url('/locations') });
  const saved = await registerManually(
    { store: server.services.store, config: server.services.config, lms: server.services.lti.lms },
    { issuer: lms.issuer, clientId: lms.clientId, deployments: [lms.deploymentId], authUrl: lms.urls.auth, tokenUrl: lms.urls.token, jwksUrl: lms.urls.jwks },
  );
  if (!saved.ok) throw new Error(saved.message);
  await server.services.store.lti.setStatus(saved.registration.id, 'active');
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  guard = new BrowserGuard(context);
  await guard.install();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await toolServer?.close();
  await lms?.close();
  await server?.stop();
});

async function openCourse(launch: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${lms.origin}/course?launch=${launch}`);
  await page.getByRole('button', { name: 'Open' }).click();
  return page;
}

describe('LTI in Chromium', () => {
  it('an instructor adds an activity through Deep Linking, and a student opens it in the tool', async () => {
    onTestFailed(failureShots(context, 'lti-launch'));
    const page = await openCourse('pick');
    await shows(page.locator('h1'), 'Choose a tool');
    await screenshot(page, 'tools');
    await page.getByRole('button', { name: 'Statistics Lab' }).click();
    await shows(page.locator('h1'), 'Statistics Lab');
    await page.getByLabel(/Week 1 quiz/).check();
    await page.getByRole('button', { name: /Add the chosen/ }).click();
    await shows(page.locator('h1'), 'Content added');
    await shows(page.locator('li'), 'Week 1 quiz');
    expect(lms.deepLinkingResponses).toHaveLength(1);
    const payload = JSON.parse(Buffer.from((lms.deepLinkingResponses[0] ?? '').split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    const items = payload['https://purl.imsglobal.org/spec/lti-dl/claim/content_items'] as Array<{ custom: { tis_placement: string } }>;
    placementLink = items[0]?.custom.tis_placement ?? '';
    expect(placementLink).not.toBe('');
    await page.close();

    const student = await openCourse('open');
    await shows(student.locator('h1'), 'Statistics Lab is open');
    await screenshot(student, 'tool');
    const delivered = toolServer.to('/launch').filter((r) => r.method === 'POST');
    expect(delivered).toHaveLength(1);
    const claims = JSON.parse(Buffer.from((delivered[0]?.form.get('launch_data') ?? '').split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      user: { groups: string[] };
      course: { name: string };
      grade: { submit: string | null };
    };
    expect(claims.user.groups).toEqual(['student']);
    expect(claims.grade.submit).not.toBeNull();
    expect(guard.consoleErrors).toEqual([]);
    expect(guard.foreignRequests).toEqual([]);
  });

  it('platform storage: the tool framed in the LMS, the state cookie dropped, the state kept through lti.put_data and lti.get_data', async () => {
    onTestFailed(failureShots(context, 'lti-launch'));
    expect(placementLink).not.toBe('');
    // A browser that keeps the framed service's cookie from it (third-party cookies blocked): the login's
    // state cookie is gone by the time the LMS's auth endpoint answers, so the id_token post comes without
    // it. The requests themselves go on over the network unchanged.
    const dropCookies = async (route: Route): Promise<void> => {
      await context.clearCookies();
      await route.continue();
    };
    const authRoute = `${lms.urls.auth}?**`;
    await context.route(authRoute, dropCookies);
    try {
      const before = toolServer.to('/launch').filter((r) => r.method === 'POST').length;
      const page = await context.newPage();
      await page.goto(`${lms.origin}/course-framed?launch=open`);
      await page.getByRole('button', { name: 'Open' }).click();
      await shows(page.frameLocator('iframe[name=tool]').locator('h1'), 'Statistics Lab is open');
      await screenshot(page, 'platform-storage');
      const log = (await page.evaluate(() => (window as unknown as { lmsStorageLog: Array<{ subject: string; key: string; origin: string }> }).lmsStorageLog)) ?? [];
      expect(log.map((m) => m.subject)).toEqual(['lti.put_data', 'lti.get_data']);
      expect(log[0]?.key).toMatch(/^state_/);
      expect(log[1]?.key).toBe(log[0]?.key);
      expect(log.every((m) => m.origin === server.url)).toBe(true);
      expect(toolServer.to('/launch').filter((r) => r.method === 'POST')).toHaveLength(before + 1);
      expect(guard.consoleErrors).toEqual([]);
      expect(guard.foreignRequests).toEqual([]);
    } finally {
      await context.unroute(authRoute, dropCookies);
    }
  });
});
