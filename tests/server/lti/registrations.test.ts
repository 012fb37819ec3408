/**
 * LMS registrations through the dashboard API and `tis lms` (decisions LTI-06, LTI-07): add by hand
 * (pending; URL rules with the field's name), list, show, activate, deactivate, platform team only; and
 * `LMS_AUTO_ACTIVATE=1` activating a Dynamic Registration on arrival; the Sandbox's own registration listed
 * apart and never deactivated (LTI-100).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../../bin/tis.js';
import { ensureSandboxRegistration } from '../../../server/sandbox/lms-registration.js';
import type { TestServer } from '../harness.js';
import { startServer } from '../harness.js';
import type { LmsFixture } from './lms-fixture.js';
import { ROLES, startLms } from './lms-fixture.js';
import { expectRefusalPage, login, postIdToken } from './support.js';

let server: TestServer;
let lms: LmsFixture;
let token: string;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, lmsAutoActivate: true } });
  lms = await startLms('moodle');
  token = readFileSync(join(server.dataDir, 'platform-token'), 'utf8').trim();
}, 60_000);

afterAll(async () => {
  await lms?.close();
  await server?.stop();
});

async function tis(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(argv, { TIS_URL: server.url, TIS_TOKEN: token }, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

function api(path: string, init: RequestInit & { bearer?: string } = {}): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${init.bearer ?? token}`, ...(init.body ? { 'Content-Type': 'application/json' } : {}) },
  });
}

describe('manual registration', () => {
  it('tis lms add stores a pending registration even with LMS_AUTO_ACTIVATE=0; list, show, activate, deactivate', async () => {
    const off = await startServer({ config: { allowLoopbackTools: true, lmsAutoActivate: false } });
    try {
      const offToken = readFileSync(join(off.dataDir, 'platform-token'), 'utf8').trim();
      const cli = async (...argv: string[]): Promise<{ code: number; out: string }> => {
        const out: string[] = [];
        const code = await run(argv, { TIS_URL: off.url, TIS_TOKEN: offToken }, { out: (l) => out.push(l), err: (l) => out.push(l) });
        return { code, out: out.join('\n') };
      };
      const added = await cli(
        'lms', 'add', '--json',
        '--issuer', 'https://canvas.instructure.com',
        '--client-id', '10000000000042',
        '--deployment', '12:8865aa05b4b79b64a91a86042e43af5ea8ae79eb',
        '--deployment', '13:abc',
        '--auth-url', lms.urls.auth,
        '--token-url', lms.urls.token,
        '--jwks-url', lms.urls.jwks,
        '--title', 'Northwind Canvas',
      );
      expect(added.code).toBe(0);
      const registration = JSON.parse(added.out) as { id: string; status: string; deployments: string[]; method: string };
      expect(registration).toMatchObject({ status: 'pending', method: 'manual', deployments: ['12:8865aa05b4b79b64a91a86042e43af5ea8ae79eb', '13:abc'] });
      expect((await cli('lms', 'list')).out).toMatch(new RegExp(`^ID +STATUS +METHOD +ISSUER +CLIENT +DEPLOYMENTS\\n${registration.id} +pending +manual +https://canvas.instructure.com +10000000000042 +2$`));
      expect((await cli('lms', 'show', registration.id)).out).toContain('deployments: 12:8865aa05b4b79b64a91a86042e43af5ea8ae79eb, 13:abc');
      expect((await cli('lms', 'activate', registration.id)).out).toBe(`${registration.id} is active`);
      expect((await cli('lms', 'deactivate', registration.id)).out).toBe(`${registration.id} is inactive`);
      const missing = await cli('lms', 'show', 'lreg_nothere');
      expect(missing.code).toBe(1);
      expect(missing.out).toContain('lms registration lreg_nothere not found (HTTP 404)');
      const incomplete = await cli('lms', 'add', '--issuer', 'https://x.example');
      expect(incomplete.code).toBe(2);
      expect(incomplete.out).toContain('lms add needs --client-id, --auth-url, --token-url, --jwks-url');
      expect((await cli('lms', 'list', '--issuer', 'https://x.example')).code).toBe(2);
    } finally {
      await off.stop();
    }
  });

  it('refuses an LMS URL that breaks the URL rules, naming the field; stores nothing', async () => {
    const res = await api('/dashboard/v1/lms', {
      method: 'POST',
      body: JSON.stringify({
        issuer: 'https://blackboard.com',
        client_id: 'global-client',
        deployments: ['inst-1'],
        auth_url: lms.urls.auth,
        token_url: 'http://10.0.0.5/token',
        jwks_url: lms.urls.jwks,
      }),
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: string }).detail).toBe('token_url must be an absolute https:// URL');
    expect(((await (await api('/dashboard/v1/lms')).json()) as { registrations: unknown[] }).registrations).toHaveLength(0);
  });

  it('is the platform team\'s alone', async () => {
    const res = await api('/dashboard/v1/lms', { bearer: 'tisb_notaplatformtokenatallxxxxxxxxxxxxxxxxxxxxx' });
    expect(res.status).toBe(401);
  });
});

describe('tis lms help', () => {
  it('tis --help and tis lms --help list every lms command and every option of lms add', async () => {
    for (const argv of [['--help'], ['lms', '--help']]) {
      const help = await tis(...argv);
      expect(help.code).toBe(0);
      for (const command of ['lms list', 'lms show <registration_id>', 'lms activate <registration_id>', 'lms deactivate <registration_id>', 'lms add', 'lms refusals <registration_id>', 'lms refusal <report_id>']) expect(help.out).toContain(command);
      for (const option of ['--issuer <url>', '--client-id <id>', '--deployment <id> ...', '--auth-url <url>', '--token-url <url>', '--jwks-url <url>', '--token-audience <aud>', '--title <text>']) {
        expect(help.out).toContain(option);
      }
    }
    const own = await tis('lms', 'add', '--help');
    expect(own.out).toContain('Usage: tis lms add');
    expect(own.out).toContain('repeat for several');
  });
});

describe('LMS_AUTO_ACTIVATE=1', () => {
  it('a Dynamic Registration arrives active, and its LMS can log in at once', async () => {
    const res = await fetch(`${server.url}/lti/register?${new URLSearchParams({ openid_configuration: lms.urls.openidConfiguration, registration_token: 'reg-token-1' })}`);
    expect(res.status).toBe(200);
    const list = (await (await api('/dashboard/v1/lms')).json()) as { registrations: Array<{ status: string; method: string; client_id: string }> };
    expect(list.registrations).toEqual([expect.objectContaining({ status: 'active', method: 'dynamic', client_id: lms.clientId })]);
    const login = await fetch(
      `${server.url}/lti/login?${new URLSearchParams({ iss: lms.issuer, client_id: lms.clientId, login_hint: 'h', target_link_uri: `${server.url}/lti/launch` })}`,
      { redirect: 'manual' },
    );
    expect(login.status).toBe(302);
  });
});

describe("the Sandbox's own registration in tis lms (decision LTI-100)", () => {
  it('is listed apart from the schools, named as the Sandbox LMS, and tis lms deactivate refuses it with the consequence', async () => {
    const own = await ensureSandboxRegistration(server.services);
    const list = await tis('lms', 'list');
    expect(list.code).toBe(0);
    const [table, apart] = list.out.split('\n\n');
    expect(table).not.toContain(own.id);
    expect(apart).toBe(`Sandbox LMS (built into this service): ${own.id} active, issuer ${server.url}/lms (not a school; cannot be deactivated)`);
    const refused = await tis('lms', 'deactivate', own.id);
    expect(refused.code).not.toBe(0);
    expect(refused.err).toContain("this is the Sandbox's own LMS registration; deactivating it would stop every Sandbox launch and score");
    expect((await server.services.store.lti.getRegistration(own.id))?.status).toBe('active');
    expect((await tis('lms', 'show', own.id)).out).toContain("the Sandbox's own LMS registration");
  });
});

describe('refused launches, explained (issue 28)', () => {
  interface Refusal { report_id: string; registration_id: string | null; issuer: string | null; message: string; code: string; reason: string; advice: string; detail: string }

  function reportIdOf(html: string): string {
    return /Report ID: <code>([^<]+)<\/code>/.exec(html)?.[1] ?? '';
  }

  it("a forged launch's report ID, read off its page, finds the reason and what to change through the API and tis; an unknown issuer's too", async () => {
    lms.connect(server.url);
    const registrationId = ((await (await api('/dashboard/v1/lms')).json()) as { registrations: Array<{ id: string; client_id: string }> }).registrations.find((r) => r.client_id === lms.clientId)?.id ?? '';
    expect(registrationId).toMatch(/^lreg_/);

    // Forged: signed with a key the LMS never published.
    const started = await login(server, lms);
    const forged = await lms.idToken(lms.resourceLinkClaims({ nonce: started.nonce, sub: 's', roles: [ROLES.learner], contextId: 'c' }), { foreignKey: true });
    const forgedReport = reportIdOf(await expectRefusalPage(await postIdToken(server, forged, started.state, started.cookie), 401, forged));
    // The commonest real failure: the LMS frames the tool and the browser drops the state cookie.
    const framed = await login(server, lms);
    const cookieless = await lms.idToken(lms.resourceLinkClaims({ nonce: framed.nonce, sub: 's', roles: [ROLES.learner], contextId: 'c' }));
    const cookieReport = reportIdOf(await expectRefusalPage(await postIdToken(server, cookieless, framed.state, null), 400, cookieless));
    // A login from an issuer with no registration.
    const stranger = await fetch(`${server.url}/lti/login?${new URLSearchParams({ iss: 'https://unknown-lms.example', client_id: 'who', login_hint: 'h', target_link_uri: `${server.url}/lti/launch` })}`, { redirect: 'manual' });
    const strangerReport = reportIdOf(await expectRefusalPage(stranger, 400));

    const listed = ((await (await api(`/dashboard/v1/lms/${registrationId}/refusals`)).json()) as { refusals: Refusal[] }).refusals;
    expect(listed.map((r) => r.report_id)).toEqual(expect.arrayContaining([forgedReport, cookieReport]));
    const byForged = listed.find((r) => r.report_id === forgedReport);
    expect(byForged).toMatchObject({ registration_id: registrationId, message: 'launch', code: 'bad_signature', reason: "The id_token's signature does not verify with the LMS's public key." });
    const byCookie = listed.find((r) => r.report_id === cookieReport);
    expect(byCookie?.reason).toContain('your LMS opens the tool in a frame and the browser blocks');
    expect(byCookie?.advice).toContain('Open the tool in a new window');
    // Never the token, whole or in part.
    expect(JSON.stringify(listed)).not.toContain(forged.split('.')[1] as string);

    const found = await api(`/dashboard/v1/lms-refusals/${strangerReport}`);
    expect(found.status).toBe(200);
    expect(await found.json()).toMatchObject({ registration_id: null, issuer: 'https://unknown-lms.example', client_id: 'who', message: 'login', code: 'unknown_registration' });
    const missing = await api('/dashboard/v1/lms-refusals/req_nothing_here');
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { code: string }).code).toBe('lms_refusal_not_found');

    const listedByCli = await tis('lms', 'refusals', registrationId);
    expect(listedByCli.code).toBe(0);
    expect(listedByCli.out).toContain(`${forgedReport} `);
    expect(listedByCli.out).toContain("reason: The id_token's signature does not verify with the LMS's public key.");
    const one = await tis('lms', 'refusal', cookieReport);
    expect(one.code).toBe(0);
    expect(one.out).toMatch(new RegExp(`^${cookieReport} \\S+ launch refused \\(state_not_bound, HTTP 400\\)`));
    expect(one.out).toContain('what to change: Open the tool in a new window');
    expect((await tis('lms', 'refusal', 'req_nothing_here')).code).toBe(1);
  });

  it('a flood of forged logins answers every one and keeps no more than the per-second cap', async () => {
    const before = await server.services.store.driver.get<{ n: number | string }>('SELECT count(*) AS n FROM lti_refusals');
    const pages = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        fetch(`${server.url}/lti/login?${new URLSearchParams({ iss: `https://flood-${i}.example`, login_hint: 'h', target_link_uri: `${server.url}/lti/launch` })}`, { redirect: 'manual' }).then(async (r) => {
          await r.text();
          return r.status;
        }),
      ),
    );
    expect(pages.every((status) => status === 400)).toBe(true);
    const after = await server.services.store.driver.get<{ n: number | string }>('SELECT count(*) AS n FROM lti_refusals');
    // 20 per second: a burst that straddles a second boundary keeps at most twice that.
    expect(Number(after?.n) - Number(before?.n)).toBeLessThanOrEqual(40);
  });
});
