/**
 * What the web dashboard shows when things are not fine, in Chromium: the picker's exact error when the
 * tool's locations URL fails (a real misbehaving HTTP endpoint on loopback), a picker with only a message
 * (markup gone, line breaks kept), a suspended tool's closed Sandbox, a hosted tool's settings, and the
 * platform team's view of registration. Each refused call must log exactly the console error its status
 * makes Chromium log, and nothing else; no request may leave loopback.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed } from 'vitest';
import { createDashboardClient, type DashboardClient } from '../../client/index.ts';
import { locationsResponse } from '../../client/tool/index.ts';
import { startServer, type TestServer } from '../server/harness.ts';
import { answer, startToolServer, type ToolServer } from '../server/outbound/fixtures.ts';
import { BrowserGuard, failureShots, launchChromium, screenshots, shows } from './support.ts';

const screenshot = screenshots('dashboard-states');

let server: TestServer;
let toolServer: ToolServer;
let browser: Browser;
let context: BrowserContext;
let guard: BrowserGuard;
let platformToken: string;
let builderToken: string;
let builder: DashboardClient;
let platform: DashboardClient;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, logLevel: 'warn' } });
  toolServer = await startToolServer();
  platformToken = readFileSync(join(server.dataDir, 'platform-token'), 'utf8').trim();
  platform = createDashboardClient({ baseUrl: server.url, token: platformToken });
  const created = await platform.POST('/dashboard/v1/builders', { body: { name: 'Kim Builder', email: 'kim@northwind.example' } });
  if (created.error) throw new Error(created.error.detail);
  builderToken = created.data.token;
  builder = createDashboardClient({ baseUrl: server.url, token: builderToken });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  guard = new BrowserGuard(context);
  await guard.install();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await toolServer?.close();
  await server?.stop();
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

describe('web dashboard states', () => {
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
  }, 60_000);

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
  }, 60_000);
});
