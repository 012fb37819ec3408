/**
 * The LMS side of a launch as a browser would carry it, over real HTTP: the OIDC login at the service,
 * the authentication request it redirects to (read, not followed: the fixture LMS signs the id_token the
 * test chooses), and the form POST of the id_token back with the state cookie.
 */
import { expect } from 'vitest';
import type { TestServer } from '../harness.js';
import type { LmsFixture } from './lms-fixture.js';

export interface LoginResult {
  status: number;
  location: string;
  cookie: string;
  /** The whole Set-Cookie header, attributes included. */
  setCookie: string;
  state: string;
  nonce: string;
  auth: URL;
}

export async function login(server: TestServer, lms: LmsFixture, extra: Record<string, string> = {}, method: 'GET' | 'POST' = 'GET'): Promise<LoginResult> {
  const params = new URLSearchParams({
    iss: lms.issuer,
    login_hint: 'hint-1',
    target_link_uri: `${server.url}/lti/launch`,
    lti_message_hint: 'message-hint-1',
    client_id: lms.clientId,
    lti_deployment_id: lms.deploymentId,
    ...extra,
  });
  const res =
    method === 'GET'
      ? await fetch(`${server.url}/lti/login?${params.toString()}`, { redirect: 'manual' })
      : await fetch(`${server.url}/lti/login`, {
          method: 'POST',
          redirect: 'manual',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: params.toString(),
        });
  const location = res.headers.get('location') ?? '';
  const setCookie = res.headers.get('set-cookie') ?? '';
  await res.text();
  const auth = new URL(location || 'http://none.invalid/');
  return {
    status: res.status,
    location,
    cookie: setCookie.split(';')[0] ?? '',
    setCookie,
    state: auth.searchParams.get('state') ?? '',
    nonce: auth.searchParams.get('nonce') ?? '',
    auth,
  };
}

export async function postIdToken(server: TestServer, idToken: string, state: string, cookie: string | null): Promise<Response> {
  return fetch(`${server.url}/lti/launch`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...(cookie ? { Cookie: cookie } : {}) },
    body: new URLSearchParams({ id_token: idToken, state }).toString(),
  });
}

/** A refusal as issue 13 asks: a 4xx HTML page with the report ID, no stack and no token text. */
export async function expectRefusalPage(res: Response, status: number, idToken?: string): Promise<string> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  const html = await res.text();
  expect(html).toContain('Report ID');
  expect(html).not.toMatch(/at .*\.ts:\d+/);
  if (idToken) {
    expect(html).not.toContain(idToken);
    expect(html).not.toContain(idToken.split('.')[1] as string);
  }
  return html;
}

/** The log line of the last refusal. */
export function lastRefusal(server: TestServer): Record<string, unknown> | undefined {
  return [...server.logs].reverse().find((l) => l['msg'] === 'lti request refused');
}
