/**
 * The tool's side of the LTI conversation, as a test plays it against the reference LMS: its own keys
 * and JWKS on a loopback server, Dynamic Registration, the login/authentication round trip that ends on
 * the id_token, client assertions for the token endpoint, and Deep Linking responses. Everything is
 * plain HTTP and `jose`, so the LMS is judged only by what it answers on the wire.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import type { JWK, JWTPayload, CryptoKey } from 'jose';
import { startReferenceLms } from '../../lms/app.ts';
import type { RunningLms } from '../../lms/app.ts';
import type { LmsProfileName } from '../../lms/profiles.ts';
import type { LmsStoreLocation } from '../../lms/store.ts';
import type { LmsClock } from '../../lms/platform.ts';

export const LTI = 'https://purl.imsglobal.org/spec/lti/claim/';
export const AGS_CLAIM = 'https://purl.imsglobal.org/spec/lti-ags/claim/endpoint';
export const DL = 'https://purl.imsglobal.org/spec/lti-dl/claim/';
export const SCOPES = {
  lineItem: 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem',
  lineItemReadonly: 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly',
  resultReadonly: 'https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly',
  score: 'https://purl.imsglobal.org/spec/lti-ags/scope/score',
};
export const ALL_SCOPES = Object.values(SCOPES);

let keyPair: ReturnType<typeof generateKeyPair> | null = null;

/**
 * One RSA key pair for every test tool of a file, each under a `kid` of its own (decision CI-57): a key
 * generation took about a third of a second of CPU, and a file starts some twenty tools. The LMS finds a
 * tool's key by its registered JWKS and the `kid`, so a `kid` another tool published is still unknown to it.
 */
function toolKeyPair(): ReturnType<typeof generateKeyPair> {
  keyPair ??= generateKeyPair('RS256', { extractable: true });
  return keyPair;
}

export class TestTool {
  readonly kid = `tool-${randomBytes(4).toString('hex')}`;
  private constructor(
    readonly url: string,
    private readonly server: Server,
    private readonly privateKey: CryptoKey,
    readonly jwks: { keys: JWK[] },
  ) {}

  static async start(): Promise<TestTool> {
    const { privateKey, publicKey } = await toolKeyPair();
    const holder: { tool?: TestTool } = {};
    const server = createServer((req, res) => {
      if (req.url === '/jwks') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(holder.tool?.jwks ?? { keys: [] }));
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as AddressInfo;
    const jwk = await exportJWK(publicKey);
    const tool = new TestTool(`http://127.0.0.1:${port}`, server, privateKey, { keys: [] });
    tool.jwks.keys.push({ ...jwk, kid: tool.kid, alg: 'RS256', use: 'sig' });
    holder.tool = tool;
    return tool;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  registration(scope = ALL_SCOPES.join(' ')): Record<string, unknown> {
    return {
      application_type: 'web',
      response_types: ['id_token'],
      grant_types: ['implicit', 'client_credentials'],
      initiate_login_uri: `${this.url}/lti/login`,
      redirect_uris: [`${this.url}/lti/launch`],
      client_name: 'Test tool',
      jwks_uri: `${this.url}/jwks`,
      token_endpoint_auth_method: 'private_key_jwt',
      scope,
      'https://purl.imsglobal.org/spec/lti-tool-configuration': {
        domain: new URL(this.url).host,
        target_link_uri: `${this.url}/lti/launch`,
        custom_parameters: { context_history: '$Context.id.history', canvas_previous_context_ids: '$Canvas.course.previousContextIds' },
        claims: ['iss', 'sub', 'name', 'given_name', 'family_name', 'email'],
        messages: [{ type: 'LtiResourceLinkRequest' }, { type: 'LtiDeepLinkingRequest', target_link_uri: `${this.url}/lti/launch` }],
      },
    };
  }

  sign(payload: JWTPayload, kid = this.kid): Promise<string> {
    return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(this.privateKey);
  }

  assertion(clientId: string, tokenUrl: string, overrides: JWTPayload = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return this.sign({ iss: clientId, sub: clientId, aud: tokenUrl, iat: now, exp: now + 60, jti: randomBytes(8).toString('hex'), ...overrides });
  }
}

/** The hidden inputs of an auto-submitting form page, and where it posts. */
export function formOf(html: string): { action: string; fields: Record<string, string> } {
  const action = /<form[^>]*action="([^"]*)"/.exec(html)?.[1] ?? '';
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) {
    fields[unescape(m[1] ?? '')] = unescape(m[2] ?? '');
  }
  return { action: unescape(action), fields };
}

function unescape(text: string): string {
  return text.replace(/&#(\d+);/g, (_m, code: string) => String.fromCharCode(Number(code)));
}

export interface Registered {
  clientId: string;
  deploymentId: string;
  answer: Record<string, unknown>;
}

/** A reference LMS and a test tool registered with it through Dynamic Registration. */
export class LmsWorld {
  private constructor(
    readonly lms: RunningLms,
    readonly tool: TestTool,
    readonly reg: Registered,
  ) {}

  static async start(profile: LmsProfileName = 'reference', scope?: string, store?: LmsStoreLocation, clock?: LmsClock): Promise<LmsWorld> {
    const lms = await startReferenceLms({ profile, ...(store ? { store } : {}), ...(clock ? { clock } : {}), onError: (err) => { throw err; } });
    const tool = await TestTool.start();
    const reg = await registerThroughDynamicRegistration(lms, tool, scope);
    return new LmsWorld(lms, tool, reg);
  }

  /** A world on an LMS already running and a tool already registered (another process of a shared LMS). */
  static on(lms: RunningLms, tool: TestTool, reg: Registered): LmsWorld {
    return new LmsWorld(lms, tool, reg);
  }

  async stop(): Promise<void> {
    await this.lms.stop();
    await this.tool.stop();
  }

  control(method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(`${this.lms.url}/controls${path}`, {
      method,
      headers: { Authorization: `Bearer ${this.lms.controlToken}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }

  async controlJson<T = Record<string, unknown>>(method: string, path: string, body?: unknown, status = [200, 201]): Promise<T> {
    const res = await this.control(method, path, body);
    const text = await res.text();
    if (!status.includes(res.status)) throw new Error(`${method} /controls${path} answered ${res.status}: ${text}`);
    return (text ? JSON.parse(text) : null) as T;
  }

  /** A person, a course in the registration's first school, the person enrolled, and one assessment link. */
  async course(opts: { roles?: string[]; deploymentId?: string; lineItem?: boolean } = {}): Promise<{ sub: string; courseId: string; linkId: string; lineItemUrl: string | null }> {
    const user = await this.controlJson<{ sub: string }>('POST', '/users', { given_name: 'Ada', family_name: 'Lovelace', email: `ada${randomBytes(3).toString('hex')}@school.example` });
    const course = await this.controlJson<{ id: string }>('POST', '/courses', { deployment_id: opts.deploymentId ?? this.reg.deploymentId, title: 'Biology 101', label: 'BIO-101-2026F' });
    await this.controlJson('PUT', `/courses/${encodeURIComponent(course.id)}/enrolments/${encodeURIComponent(user.sub)}`, { roles: opts.roles ?? ['student'] }, [204]);
    const link = await this.controlJson<{ id: string; line_items: { id: string }[] }>('POST', `/courses/${encodeURIComponent(course.id)}/links`, {
      title: 'Week 1 quiz',
      custom: { quiz: 'week-1' },
      line_item: opts.lineItem === false ? null : { score_maximum: 10, resource_id: 'quiz-1' },
    });
    return { sub: user.sub, courseId: course.id, linkId: link.id, lineItemUrl: link.line_items[0]?.id ?? null };
  }

  /**
   * Opens a launch URL as a browser would up to the tool: the LMS's redirect to the tool's login, then
   * the tool's authentication request; answers the page the authorization endpoint posts back.
   */
  async loginRoundTrip(launchUrl: string, tweak: (auth: URL, login: URL) => void = () => undefined): Promise<{ login: URL; status: number; form: { action: string; fields: Record<string, string> }; nonce: string; state: string }> {
    const start = await fetch(launchUrl, { redirect: 'manual' });
    if (start.status !== 302) throw new Error(`launch URL answered ${start.status}`);
    const login = new URL(start.headers.get('location') ?? '');
    const config = (await (await fetch(`${this.lms.issuer}/.well-known/openid-configuration`)).json()) as { authorization_endpoint: string };
    const auth = new URL(config.authorization_endpoint);
    const state = randomBytes(8).toString('hex');
    const nonce = randomBytes(8).toString('hex');
    const params: Record<string, string> = {
      scope: 'openid',
      response_type: 'id_token',
      response_mode: 'form_post',
      prompt: 'none',
      client_id: login.searchParams.get('client_id') ?? '',
      redirect_uri: `${this.tool.url}/lti/launch`,
      login_hint: login.searchParams.get('login_hint') ?? '',
      lti_message_hint: login.searchParams.get('lti_message_hint') ?? '',
      state,
      nonce,
    };
    for (const [k, v] of Object.entries(params)) auth.searchParams.set(k, v);
    tweak(auth, login);
    const answer = await fetch(auth, { redirect: 'manual' });
    return { login, status: answer.status, form: formOf(await answer.text()), nonce, state };
  }

  /** A launch's verified id_token claims, checked as a tool must (signature, iss, aud, nonce). */
  async launchClaims(launchUrl: string): Promise<JWTPayload> {
    const trip = await this.loginRoundTrip(launchUrl);
    const idToken = trip.form.fields['id_token'];
    if (!idToken) throw new Error(`no id_token: ${JSON.stringify(trip.form.fields)}`);
    const { payload } = await jwtVerify(idToken, createRemoteJWKSet(new URL(`${this.lms.issuer}/jwks`)), {
      issuer: this.lms.issuer,
      audience: this.reg.clientId,
      algorithms: ['RS256'],
    });
    if (payload['nonce'] !== trip.nonce) throw new Error('nonce not echoed');
    if (trip.form.fields['state'] !== trip.state) throw new Error('state not echoed');
    return payload;
  }

  async launchUrl(linkId: string, sub: string): Promise<string> {
    return (await this.controlJson<{ url: string }>('POST', '/launches', { resource_link_id: linkId, sub })).url;
  }

  async accessToken(scopes: string[]): Promise<Response> {
    const tokenUrl = `${this.lms.issuer}/token`;
    return fetch(tokenUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: await this.tool.assertion(this.reg.clientId, tokenUrl),
        scope: scopes.join(' '),
      }),
    });
  }

  async bearer(scopes: string[] = ALL_SCOPES): Promise<string> {
    const res = await this.accessToken(scopes);
    const body = (await res.json()) as { access_token?: string };
    if (!body.access_token) throw new Error(`no access token: ${JSON.stringify(body)}`);
    return body.access_token;
  }
}

/** Step by step, as the tool's `/lti/register` page does it. */
export async function registerThroughDynamicRegistration(lms: RunningLms, tool: TestTool, scope?: string): Promise<Registered> {
  const initiated = (await (
    await fetch(`${lms.url}/controls/registrations/initiate`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${lms.controlToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ tool_url: `${tool.url}/lti/register` }),
    })
  ).json()) as { url: string };
  const opened = new URL(initiated.url);
  const configUrl = opened.searchParams.get('openid_configuration') ?? '';
  const config = (await (await fetch(configUrl)).json()) as { issuer: string; registration_endpoint: string };
  if (!configUrl.startsWith(config.issuer)) throw new Error('issuer does not prefix the configuration URL');
  const res = await fetch(config.registration_endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${opened.searchParams.get('registration_token') ?? ''}` },
    body: JSON.stringify(tool.registration(scope)),
  });
  const answer = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`registration answered ${res.status}: ${JSON.stringify(answer)}`);
  const toolConfig = answer['https://purl.imsglobal.org/spec/lti-tool-configuration'] as { deployment_id: string };
  return { clientId: answer['client_id'] as string, deploymentId: toolConfig.deployment_id, answer };
}
