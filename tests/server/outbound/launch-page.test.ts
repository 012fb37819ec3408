/**
 * The launch page, `GET /launch/{ticket}` (decision S-10), over real HTTP: every status with its page,
 * the auto-submitting form (its action, its `launch_data` verified against the JWKS with jose and its
 * claims against the spec's LaunchClaims), single use, the headers, escaping, and provisioning held
 * behind the Provisioning and not-set-up pages.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueLaunchTicket } from '../../../server/launch-page/index.js';
import type { PlacementOutcome } from '../../../server/placements/index.js';
import { openPicker, placeFromPicker } from '../../../server/placements/index.js';
import type { AppSettingsPatch, ContextRecord, MemberGroup } from '../../../server/store/index.js';
import { claimErrors } from '../core/claims-schema.js';
import type { TestServer, Tool } from '../harness.js';
import { createTool, startServer } from '../harness.js';
import type { Route, ToolServer } from './fixtures.js';
import { answer, memberOf, placeFromSandboxPicker, realCourse, sandboxCourse, setUrls, startToolServer, TestClock, verifyToken } from './fixtures.js';

const clock = new TestClock();
let server: TestServer;
let toolServer: ToolServer;
let provisionRoute: Route = answer.status(204);

beforeAll(async () => {
  server = await startServer({ clock, config: { allowLoopbackTools: true, provisionTimeoutMs: 500 } });
  toolServer = await startToolServer();
  toolServer.route('/locations', answer.json({
    locations: {
      'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 20 },
      'reading-1': { type: 'content', label: 'Week 1 <em>reading</em>' },
    },
  }));
  toolServer.route('/launch', answer.text('<p>Welcome</p>', 200, 'text/html'));
  toolServer.route('/provision', (req, res, recorded) => provisionRoute(req, res, recorded));
});
afterAll(async () => {
  await toolServer?.close();
  await server?.stop();
});

interface Setup {
  tool: Tool;
  course: ContextRecord;
  placed: PlacementOutcome;
}

async function setup(options: { status?: 'draft' | 'active'; real?: boolean; extid?: string; settings?: AppSettingsPatch; name?: string } = {}): Promise<Setup> {
  const tool = await createTool(server, { status: options.status ?? 'draft', ...(options.name ? { name: options.name } : {}) });
  await setUrls(server, tool.app.id, {
    locationsUrl: toolServer.url('/locations'),
    callbackUrl: toolServer.url('/launch'),
    provisionUrl: null,
    ...options.settings,
  });
  const course = options.real ? await realCourse(server) : await sandboxCourse(server, tool.app.id);
  await openPicker(server.services, { appId: tool.app.id, contextId: course.id });
  const placed = await placeFromSandboxPicker(server, { appId: tool.app.id, contextId: course.id, extid: options.extid ?? 'quiz-1' });
  return { tool, course, placed };
}

async function ticketFor(s: Setup, groups: MemberGroup[] = ['student']): Promise<{ url: string; ticket: string; memberId: string }> {
  const { member } = await memberOf(server, s.course, groups);
  const issued = await issueLaunchTicket(server.services, { placementId: s.placed.placement.id, memberId: member.id });
  expect(issued.launchUrl).toBe(`${server.url}/launch/${issued.ticket}`);
  expect(issued.ticket).toMatch(/^[A-Za-z0-9_-]{43}$/);
  return { url: issued.launchUrl, ticket: issued.ticket, memberId: member.id };
}

interface Page {
  status: number;
  headers: Headers;
  html: string;
}

async function open(url: string): Promise<Page> {
  const response = await fetch(url, { redirect: 'manual' });
  return { status: response.status, headers: response.headers, html: await response.text() };
}

function expectPageHeaders(page: Page): void {
  expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(page.headers.get('cache-control')).toBe('no-store');
  expect(page.headers.get('referrer-policy')).toBe('no-referrer');
  expect(page.headers.get('content-security-policy')).toMatch(/^default-src 'none'; /);
  expect(page.html.startsWith('<!DOCTYPE html>')).toBe(true);
}

/** An error page: the report ID is the response's Request-Id. */
function expectErrorPage(page: Page, status: number, heading: string): void {
  expect(page.status).toBe(status);
  expectPageHeaders(page);
  const requestId = page.headers.get('request-id');
  expect(requestId).toMatch(/^req_/);
  expect(page.html).toContain(`<p class="report">Report ID: <code>${requestId}</code></p>`);
  expect(page.html).toContain(`<h1>${heading}</h1>`);
  expect(page.html).not.toContain('launch_data');
  expect(page.headers.get('content-security-policy')).toContain("form-action 'none'");
}

function formOf(html: string): { action: string; launchData: string; nonce: string } {
  const action = /<form id="launch" method="post" action="([^"]+)" enctype="application\/x-www-form-urlencoded">/.exec(html)?.[1];
  const launchData = /<input type="hidden" name="launch_data" value="([^"]+)">/.exec(html)?.[1];
  const nonce = /<script nonce="([^"]+)">document\.getElementById\('launch'\)\.submit\(\);<\/script>/.exec(html)?.[1];
  if (!action || !launchData || !nonce) throw new Error(`not a launch form:\n${html}`);
  return { action, launchData, nonce };
}

describe('200: the auto-submitting form', () => {
  it('POSTs a verifiable launch_data to the callback URL, once', async () => {
    const s = await setup();
    const { url, memberId } = await ticketFor(s, ['student']);
    const page = await open(url);
    expect(page.status).toBe(200);
    expectPageHeaders(page);
    const form = formOf(page.html);
    expect(form.action).toBe(toolServer.url('/launch'));
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain(`script-src 'nonce-${form.nonce}'`);
    expect(csp).toContain(`form-action ${toolServer.origin}`);
    expect(csp).toContain("base-uri 'none'");
    expect(page.html).toContain('<noscript><button type="submit">Continue to ');

    const claims = await verifyToken(server, form.launchData, s.tool.app.id);
    expect(claimErrors('LaunchClaims', claims)).toEqual([]);
    expect(claims).toMatchObject({
      app: s.tool.app.id,
      context: s.course.id,
      location: { id: s.placed.location.id, extid: 'quiz-1', type: 'assessment', label: 'Week 1 quiz' },
      resource_link: s.placed.placement.resourceLink,
      user: { member: memberId, groups: ['student'], email: null },
    });
    expect((claims['grade'] as { submit: string | null }).submit).toBe(
      server.services.launches.urls.score(s.course.id, s.tool.app.id, s.placed.location.id, memberId),
    );
    const apiToken = (claims['api'] as { token: string }).token;
    const row = await fetch((claims['storage'] as { member: string }).member, { headers: { Authorization: `Bearer ${apiToken}` } });
    expect(row.status).toBe(200);

    // What the browser does with the form: a urlencoded POST of the one field to the action.
    const before = toolServer.to('/launch').length;
    const posted = await fetch(form.action, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ launch_data: form.launchData }),
    });
    expect(posted.status).toBe(200);
    expect(toolServer.to('/launch').slice(before)[0]?.form.get('launch_data')).toBe(form.launchData);

    const again = await open(url);
    expectErrorPage(again, 410, 'This launch link has already been used');
  });

  it('an instructor launch carries name and email; a content placement launches with grade.submit null', async () => {
    const s = await setup({ extid: 'reading-1', status: 'active', real: true });
    const { url } = await ticketFor(s, ['instructor']);
    const page = await open(url);
    expect(page.status).toBe(200);
    const claims = await verifyToken(server, formOf(page.html).launchData, s.tool.app.id);
    expect(claimErrors('LaunchClaims', claims)).toEqual([]);
    expect(claims).toMatchObject({
      location: { extid: 'reading-1', type: 'content', label: 'Week 1 reading' },
      grade: { submit: null },
      user: { groups: ['instructor'], given_name: 'Maria', email: 'maria@northwind.example' },
    });
  });

  it('two opens of one ticket at once launch once', async () => {
    const s = await setup();
    const { url } = await ticketFor(s);
    const pages = await Promise.all([open(url), open(url), open(url)]);
    expect(pages.map((p) => p.status).sort()).toEqual([200, 410, 410]);
  });

  it('the access log names the route, never the ticket', async () => {
    const s = await setup();
    const { url, ticket } = await ticketFor(s);
    await open(url);
    await open(url);
    const lines = JSON.stringify(server.logs);
    expect(lines).not.toContain(ticket);
    expect(server.logs.some((l) => l['path'] === '/launch/{ticket}' && l['operation'] === 'openLaunchPage')).toBe(true);
  });
});

describe('held for provisioning (GAP-16 to GAP-18)', () => {
  it('202 the Provisioning page while the tool sets up; the ticket stays valid; 200 once it has PUT', async () => {
    provisionRoute = answer.status(204);
    const s = await setup({ settings: { provisionUrl: toolServer.url('/provision') } });
    // The placement asked; the tool answered 204 and has not PUT yet.
    expect(s.placed.provisioning).toMatchObject({ context: { state: 'pending' }, location: { state: 'pending' } });
    const asked = toolServer.to('/provision');
    const { url } = await ticketFor(s);
    const page = await open(url);
    expect(page.status).toBe(202);
    expectPageHeaders(page);
    expect(page.html).toContain('<meta http-equiv="refresh" content="3">');
    expect(page.html).toContain(`<p class="report">Report ID: <code>${page.headers.get('request-id')}</code></p>`);
    // Within 60 s of the last request, nothing is sent again.
    expect(toolServer.to('/provision')).toHaveLength(asked.length);

    for (const request of asked.slice(-2)) {
      const claims = await verifyToken(server, request.form.get('launch_data') ?? '', s.tool.app.id);
      const token = (claims['api'] as { token: string }).token;
      const provision = claims['provision'] as { context: string; location: string | null };
      const put = await fetch(provision.location ?? provision.context, { method: 'PUT', headers: { Authorization: `Bearer ${token}` } });
      expect(put.status).toBe(204);
    }
    const after = await open(url);
    expect(after.status).toBe(200);
    formOf(after.html);
  });

  it('503 the not-set-up page when the request failed, Retry-After 60; a reload asks again', async () => {
    provisionRoute = answer.text('down', 500);
    const s = await setup({ settings: { provisionUrl: toolServer.url('/provision') } });
    expect(s.placed.provisioning.error).toBe('app failed to accept the provision request (HTTP 500)');
    const { url } = await ticketFor(s);
    const before = toolServer.to('/provision').length;
    const page = await open(url);
    expectErrorPage(page, 503, `${s.tool.app.name} is not set up for this course yet`);
    expect(page.headers.get('retry-after')).toBe('60');
    expect(page.html).toContain('<meta http-equiv="refresh" content="60">');
    expect(toolServer.to('/provision').length).toBeGreaterThan(before);

    provisionRoute = answer.status(204);
    const reload = await open(url);
    expect(reload.status).toBe(202);
  });

  it('an unprovisioned course of a tool with no provision_url launches at once (GAP-17)', async () => {
    const s = await setup();
    await server.services.store.provisioning.resetContext(s.tool.app.id, s.course.id);
    const { url } = await ticketFor(s);
    expect((await open(url)).status).toBe(200);
  });
});

describe('error pages', () => {
  it('403 a draft tool outside its Sandbox; the error page does not use up the ticket', async () => {
    // A draft tool is never offered in a real course (GAP-25), so its placement there is made directly.
    const draft = await createTool(server, { status: 'draft' });
    await setUrls(server, draft.app.id, { callbackUrl: toolServer.url('/launch') });
    const course = await realCourse(server);
    const location = (await server.services.store.locations.syncServed(draft.app.id, [{ extid: 'x', type: 'content', label: 'X' }]))[0]!;
    const placement = await server.services.launches.place({ appId: draft.app.id, contextId: course.id, locationId: location.id });
    const { member } = await memberOf(server, course, ['student']);
    const ticket = await issueLaunchTicket(server.services, { placementId: placement.id, memberId: member.id });
    const page = await open(ticket.launchUrl);
    expectErrorPage(page, 403, `${draft.app.name} is not available yet`);
    expect(page.html).toContain('can only be tried in its Sandbox');
    await server.services.store.apps.setStatus(draft.app.id, 'active');
    expect((await open(ticket.launchUrl)).status).toBe(200);
  });

  it('403 a suspended tool, even in its Sandbox', async () => {
    const s = await setup();
    const { url } = await ticketFor(s);
    await server.services.store.apps.setStatus(s.tool.app.id, 'suspended');
    expectErrorPage(await open(url), 403, `${s.tool.app.name} is unavailable`);
  });

  it('409 a hosted tool', async () => {
    const created = await server.services.store.apps.create({ name: 'Flashcards Studio', hosting: 'hosted', homeLocation: false });
    const course = await sandboxCourse(server, created.app.id);
    const location = (await server.services.store.locations.syncServed(created.app.id, [{ extid: 'deck', type: 'practice', label: 'Deck' }]))[0]!;
    const placement = await server.services.launches.place({ appId: created.app.id, contextId: course.id, locationId: location.id });
    const { member } = await memberOf(server, course, ['student']);
    const ticket = await issueLaunchTicket(server.services, { placementId: placement.id, memberId: member.id });
    const page = await open(ticket.launchUrl);
    expectErrorPage(page, 409, 'Flashcards Studio cannot be opened here');
    expect(page.html).toContain('Hosted tools are not run by this deployment.');
  });

  it('409 no callback URL', async () => {
    const s = await setup({ settings: { callbackUrl: null } });
    const { url } = await ticketFor(s);
    const page = await open(url);
    expectErrorPage(page, 409, `${s.tool.app.name} could not be reached`);
    expect(page.html).toContain('The tool has no launch address set yet.');
  });

  it('409 a callback URL failing the URL rules now, naming the rule; the tool is not called', async () => {
    const s = await setup({ settings: { callbackUrl: 'https://192.168.1.20/launch' } });
    const { url } = await ticketFor(s);
    const page = await open(url);
    expectErrorPage(page, 409, `${s.tool.app.name} could not be reached`);
    expect(page.html).toContain(
      'The tool&#39;s launch address is not valid: callback_url must resolve only to publicly routable addresses (192.168.1.20 is private).',
    );
  });

  it('404 an unknown ticket, well formed or not', async () => {
    const unknown = await open(`${server.url}/launch/${randomBytes(32).toString('base64url')}`);
    expectErrorPage(unknown, 404, 'This launch link is not valid');
    expectErrorPage(await open(`${server.url}/launch/not-a-ticket`), 404, 'This launch link is not valid');
    expectErrorPage(await open(`${server.url}/launch/%E0%A4%A`), 404, 'This launch link is not valid');
  });

  it('410 a ticket older than 120 seconds', async () => {
    const s = await setup();
    const { url } = await ticketFor(s);
    clock.advance(121_000);
    expectErrorPage(await open(url), 410, 'This launch link has expired');
  });

  it('escapes everything it writes', async () => {
    const name = `<script>alert("x")</script> & 'Co'`;
    const s = await setup({ name });
    const { url } = await ticketFor(s);
    await server.services.store.apps.setStatus(s.tool.app.id, 'suspended');
    const page = await open(url);
    expect(page.status).toBe(403);
    expect(page.html).not.toContain('<script>alert');
    expect(page.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;Co&#39; is unavailable');
  });

  it('answers 405 to anything but GET', async () => {
    const s = await setup();
    const { url } = await ticketFor(s);
    const response = await fetch(url, { method: 'POST' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
    expect((await open(url)).status).toBe(200);
  });
});
