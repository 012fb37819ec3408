/**
 * The reference LMS in a real browser (Chromium): the administrator's Dynamic Registration window that
 * frames the tool and hears its close message, and launches through the OIDC round trip up to the tool's
 * redirect URI, with and without platform storage (`lti_storage_target`, `_parent` and Canvas's named frame).
 * The tool here is a small loopback server playing the tool's browser pages.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify } from 'jose';
import type { Browser, Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReferenceLms } from '../../lms/app.ts';
import type { RunningLms } from '../../lms/app.ts';
import type { LmsProfileName } from '../../lms/profiles.ts';
import { BrowserGuard, launchChromium, shows } from '../e2e/support.ts';

const TOOL_CONFIGURATION = 'https://purl.imsglobal.org/spec/lti-tool-configuration';

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><html><head><meta charset="utf-8"><title>Tool</title></head><body>${body}</body></html>`);
}

/** The tool's browser-facing pages: registration, OIDC login (with platform storage) and the launch. */
class BrowserTool {
  url = '';
  clientId: string | null = null;
  private server: Server | null = null;
  private readonly logins = new Map<string, { nonce: string; issuer: string; target: string | null }>();
  private jwks: { keys: object[] } = { keys: [] };

  async start(): Promise<void> {
    const { publicKey } = await generateKeyPair('RS256', { extractable: true });
    this.jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'browser-tool', alg: 'RS256', use: 'sig' }] };
    this.server = createServer((req, res) => {
      this.route(req, res).catch((err: unknown) => {
        res.writeHead(500).end(String(err));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    if (url.pathname === '/jwks') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(this.jwks));
      return;
    }
    if (url.pathname === '/lti/register') {
      const configUrl = url.searchParams.get('openid_configuration') ?? '';
      const config = (await (await fetch(configUrl)).json()) as { registration_endpoint: string };
      const answer = await fetch(config.registration_endpoint, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${url.searchParams.get('registration_token') ?? ''}` },
        body: JSON.stringify({
          application_type: 'web',
          response_types: ['id_token'],
          grant_types: ['implicit', 'client_credentials'],
          initiate_login_uri: `${this.url}/lti/login`,
          redirect_uris: [`${this.url}/lti/launch`],
          client_name: 'Browser tool',
          jwks_uri: `${this.url}/jwks`,
          token_endpoint_auth_method: 'private_key_jwt',
          scope: 'https://purl.imsglobal.org/spec/lti-ags/scope/score',
          [TOOL_CONFIGURATION]: {
            domain: new URL(this.url).host,
            target_link_uri: `${this.url}/lti/launch`,
            claims: ['sub', 'name'],
            messages: [{ type: 'LtiResourceLinkRequest' }],
          },
        }),
      });
      const registration = (await answer.json()) as { client_id: string };
      this.clientId = registration.client_id;
      page(res, `<p id="registered">Registered as ${escape(registration.client_id)}</p><script>(window.opener||window.parent).postMessage({subject:"org.imsglobal.lti.close"},"*");</script>`);
      return;
    }
    if (url.pathname === '/lti/login') {
      const issuer = url.searchParams.get('iss') ?? '';
      const config = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { authorization_endpoint: string };
      const state = randomBytes(12).toString('hex');
      const nonce = randomBytes(12).toString('hex');
      const target = url.searchParams.get('lti_storage_target');
      this.logins.set(state, { nonce, issuer, target });
      const auth = new URL(config.authorization_endpoint);
      for (const [k, v] of Object.entries({
        scope: 'openid',
        response_type: 'id_token',
        response_mode: 'form_post',
        prompt: 'none',
        client_id: url.searchParams.get('client_id') ?? '',
        redirect_uri: `${this.url}/lti/launch`,
        login_hint: url.searchParams.get('login_hint') ?? '',
        lti_message_hint: url.searchParams.get('lti_message_hint') ?? '',
        state,
        nonce,
      })) {
        auth.searchParams.set(k, v);
      }
      if (!target) {
        res.writeHead(302, { Location: auth.toString() }).end();
        return;
      }
      // Platform storage: the nonce goes to the LMS's frame, then the browser goes on to the auth endpoint.
      page(
        res,
        `<p id="login">Storing the launch state…</p><script>
          var target = ${JSON.stringify(target)} === "_parent" ? window.parent : window.parent.frames[${JSON.stringify(target)}];
          window.addEventListener("message", function (e) {
            if (e.data && e.data.subject === "lti.put_data.response" && e.data.message_id === "put-1") location.href = ${JSON.stringify(auth.toString())};
          });
          target.postMessage({ subject: "lti.put_data", message_id: "put-1", key: "state_${state}", value: "${nonce}" }, ${JSON.stringify(new URL(auth).origin)});
        </script>`,
      );
      return;
    }
    if (url.pathname === '/lti/launch' && req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const state = form.get('state') ?? '';
      const login = this.logins.get(state);
      if (!login) {
        page(res, '<p id="error">unknown state</p>');
        return;
      }
      this.logins.delete(state);
      const { payload } = await jwtVerify(form.get('id_token') ?? '', createRemoteJWKSet(new URL(`${login.issuer}/jwks`)), {
        issuer: login.issuer,
        audience: this.clientId ?? '',
      });
      const verdict = payload['nonce'] === login.nonce ? 'verified' : 'nonce mismatch';
      page(
        res,
        `<p id="who">${escape(String(payload['name']))}</p><p id="verdict">${verdict}</p><p id="stored"></p><script>
          var name = ${JSON.stringify(login.target)};
          var target = name === null ? null : name === "_parent" ? window.parent : window.parent.frames[name];
          if (target) {
            window.addEventListener("message", function (e) {
              if (e.data && e.data.subject === "lti.get_data.response") document.getElementById("stored").textContent = e.data.value === ${JSON.stringify(login.nonce)} ? "storage matches" : "storage differs";
            });
            target.postMessage({ subject: "lti.get_data", message_id: "get-1", key: "state_${state}" }, ${JSON.stringify(new URL(login.issuer).origin)});
          }
        </script>`,
      );
      return;
    }
    res.writeHead(404).end();
  }
}

async function control<T>(lms: RunningLms, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${lms.url}/controls${path}`, {
    method,
    headers: { Authorization: `Bearer ${lms.controlToken}`, 'Content-Type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}

describe('reference LMS in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser.close();
  });

  async function world(profile: LmsProfileName): Promise<{ lms: RunningLms; tool: BrowserTool; tab: Page; guard: BrowserGuard; stop: () => Promise<void> }> {
    const lms = await startReferenceLms({ profile });
    const tool = new BrowserTool();
    await tool.start();
    const context = await browser.newContext();
    const guard = new BrowserGuard(context);
    await guard.install();
    const tab = await context.newPage();
    return {
      lms,
      tool,
      tab,
      guard,
      stop: async () => {
        await context.close();
        await tool.stop();
        await lms.stop();
      },
    };
  }

  async function launchable(lms: RunningLms, clientId: string): Promise<{ linkId: string; sub: string }> {
    const reg = await control<{ deployments: { deployment_id: string }[] }>(lms, 'GET', `/registrations/${clientId}`);
    const user = await control<{ sub: string }>(lms, 'POST', '/users', { given_name: 'Irene', family_name: 'Instructor', email: 'irene@school.example' });
    const course = await control<{ id: string }>(lms, 'POST', '/courses', { deployment_id: reg.deployments[0]?.deployment_id, title: 'Biology', label: 'BIO' });
    await control(lms, 'PUT', `/courses/${course.id}/enrolments/${user.sub}`, { roles: ['instructor'] });
    const link = await control<{ id: string }>(lms, 'POST', `/courses/${course.id}/links`, { title: 'Quiz', line_item: null });
    return { linkId: link.id, sub: user.sub };
  }

  async function toolFrame(tab: Page): Promise<Frame> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const frame = tab.frames().find((f) => f.url().includes('/lti/launch') || f.name() === 'tool');
      if (frame) return frame;
      if (Date.now() > deadline) throw new Error('the tool frame never appeared');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  for (const profile of ['reference', 'canvas'] as const) {
    it(`${profile}: registers a tool through the administrator's window, then launches it with and without platform storage`, async () => {
      const w = await world(profile);
      try {
        const initiated = await control<{ page_url: string }>(w.lms, 'POST', '/registrations/initiate', { tool_url: `${w.tool.url}/lti/register` });
        await w.tab.goto(initiated.page_url);
        await shows(w.tab.locator('#status'), 'Registration finished.');
        expect(w.tool.clientId).toEqual(expect.any(String));

        const plain = await launchable(w.lms, w.tool.clientId ?? '');
        const first = await control<{ url: string }>(w.lms, 'POST', '/launches', { resource_link_id: plain.linkId, sub: plain.sub });
        await w.tab.goto(first.url);
        await shows(w.tab.locator('#verdict'), 'verified');
        await shows(w.tab.locator('#who'), 'Irene Instructor');

        await control(w.lms, 'PATCH', '/settings', { platform_storage: true });
        const stored = await control<{ url: string }>(w.lms, 'POST', '/launches', { resource_link_id: plain.linkId, sub: plain.sub });
        await w.tab.goto(stored.url);
        const frame = await toolFrame(w.tab);
        await shows(frame.locator('#verdict'), 'verified');
        await shows(frame.locator('#stored'), 'storage matches');
        expect(w.guard.consoleErrors).toEqual([]);
        expect(w.guard.foreignRequests).toEqual([]);
      } finally {
        await w.stop();
      }
    });
  }
});
