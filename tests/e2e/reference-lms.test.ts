/**
 * Chromium drives the reference LMS (the Sandbox's LMS, in process under /lms) against the service: the
 * administrator's Dynamic Registration window, an instructor's Deep Linking launch through the service's
 * OIDC login into its picker and back to the LMS, and a student's launch of the new link that reaches the
 * tool's callback, with and without platform storage (the LMS frames the tool and answers lti.put_data).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { SandboxLmsClient } from '../../server/sandbox/lms-client.ts';
import type { TestServer, Tool } from '../server/harness.ts';
import { createTool, startServer } from '../server/harness.ts';
import type { ToolServer } from '../server/outbound/fixtures.ts';
import { answer, setUrls, startToolServer } from '../server/outbound/fixtures.ts';
import { BrowserGuard, launchChromium, shows } from './support.ts';

describe('reference LMS and the service in Chromium', () => {
  let server: TestServer;
  let toolServer: ToolServer;
  let tool: Tool;
  let lms: SandboxLmsClient;
  let browser: Browser;
  let context: BrowserContext;
  let guard: BrowserGuard;
  let tab: Page;
  beforeAll(async () => {
    server = await startServer({ config: { allowLoopbackTools: true, lmsAutoActivate: true } });
    toolServer = await startToolServer();
    toolServer.route('/launch', answer.text('<!doctype html><title>Quiz</title><p id="launched">Quiz tool launched</p>', 200, 'text/html'));
    toolServer.route('/locations', answer.json({ locations: { 'quiz-1': { type: 'assessment', label: 'Quiz 1', points: 10 } } }));
    tool = await createTool(server, { name: 'Week quizzes' });
    await setUrls(server, tool.app.id, { callbackUrl: toolServer.url('/launch'), locationsUrl: toolServer.url('/locations') });
    const host = server.services.sandboxLms;
    await host.ready();
    lms = new SandboxLmsClient(host.issuer(), host.controlToken, host.transport);
    browser = await launchChromium();
    context = await browser.newContext();
    guard = new BrowserGuard(context);
    await guard.install();
    tab = await context.newPage();
  });
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await toolServer?.close();
    await server?.stop();
  });

  it('registers the service, places a quiz through the picker and launches it to the tool', async () => {
    const initiated = await lms.initiateRegistration(`${server.url}/lti/register`);
    const page = new URL(`${server.services.sandboxLms.issuer()}/admin/register`);
    page.searchParams.set('registration_token', initiated.registration_token);
    page.searchParams.set('tool_url', initiated.url);
    await tab.goto(page.toString());
    await shows(tab.locator('#status'), 'Registration finished.');
    const { registrations } = await lms.registrations();
    const deploymentId = registrations[0]?.deployments[0]?.deployment_id ?? '';

    const course = await lms.createCourse({ deployment_id: deploymentId, title: 'Biology 101', label: 'BIO-101-2026F' });
    const irene = await lms.createUser({ given_name: 'Irene', family_name: 'Instructor', email: 'irene@school.example' });
    const sam = await lms.createUser({ given_name: 'Sam', family_name: 'Student', email: 'sam@school.example' });
    await lms.enrol(course.id, irene.sub, ['instructor']);
    await lms.enrol(course.id, sam.sub, ['student']);

    await tab.goto((await lms.deepLink(course.id, irene.sub)).url);
    await tab.getByRole('button', { name: 'Week quizzes' }).click();
    await tab.getByLabel(/Quiz 1/).check();
    await tab.getByRole('button', { name: /Add the chosen/ }).click();
    await shows(tab.locator('h1'), 'Content added');
    const linkId = await tab.locator('#created li').getAttribute('data-resource-link');
    expect(linkId).toBeTruthy();
    // The page says what to do next with what was placed (issue 29).
    await shows(tab.locator('#next'), /^Next: launch an item .*\/controls\/launches/);
    expect(await tab.locator('#next').textContent()).toContain(`/controls/courses/${course.id}/gradebook`);
    // The LMS's own root says what it is, rather than 404.
    await tab.goto(`${server.services.sandboxLms.issuer()}/`);
    await shows(tab.locator('h1'), 'Reference LMS');
    expect(await tab.locator('body').textContent()).toContain('/.well-known/openid-configuration');

    await tab.goto((await lms.launch(linkId ?? '', sam.sub)).url);
    await shows(tab.locator('#launched'), 'Quiz tool launched');
    expect(toolServer.to('/launch').filter((r) => r.method === 'POST')).toHaveLength(1);

    // Platform storage: the LMS opens the service in a frame and keeps the login state for it.
    await lms.settings({ platform_storage: true });
    await tab.goto((await lms.launch(linkId ?? '', sam.sub)).url);
    const deadline = Date.now() + 20_000;
    while (toolServer.to('/launch').filter((r) => r.method === 'POST').length < 2) {
      if (Date.now() > deadline) throw new Error('the framed launch never reached the tool');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(guard.consoleErrors).toEqual([]);
    expect(guard.foreignRequests).toEqual([]);
  });
});
