/**
 * A school's LMS on loopback, as the service's LMS-facing side meets it (issue 13): an LTI 1.3 platform
 * with an OpenID configuration and a registration endpoint (Dynamic Registration), a JWKS, an auth
 * endpoint the tests read the authentication request from, a token endpoint that checks the service's
 * client assertions against its JWKS, and AGS line items that take scores and refuse out-of-order ones with
 * 409. It signs id_tokens with jose. Four shapes, with the claim and ID patterns of the real products
 * (../shared/lti/reference.md): Canvas (shared issuer `https://canvas.instructure.com`, numeric client ID,
 * `N:hash` deployments, a registration entered by hand), Moodle (issuer = site URL, small-integer
 * deployments, line items with `?type_id=N`, Dynamic Registration), Blackboard Learn (issuer
 * `https://blackboard.com`, one global UUID client for every institution on central gateway endpoints,
 * the deployment UUID is the institution, line items `…/lineItems/_N_1`) and D2L Brightspace (issuer =
 * the school's host, UUID client and deployments, a JWKS without `alg`, a token endpoint at
 * `auth.brightspace.com` whose client assertion `aud` must be the single string
 * `https://api.brightspace.com/auth/token`, line items under `/d2l/api/lti/ags/2.0/deployment/…`).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import type { JWTPayload } from 'jose';

export type LmsFamily = 'canvas' | 'moodle' | 'blackboard' | 'brightspace';

/** Brightspace's client assertion audience, which is not its token URL. */
export const BRIGHTSPACE_TOKEN_AUDIENCE = 'https://api.brightspace.com/auth/token';

export interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface ScoreReceived {
  lineItem: string;
  score: Record<string, unknown>;
  status: number;
}

export interface LmsFixture {
  family: LmsFamily;
  origin: string;
  issuer: string;
  clientId: string;
  deploymentId: string;
  kid: string;
  requests: Recorded[];
  to(path: string): Recorded[];
  /** URLs of the platform's endpoints. */
  urls: { openidConfiguration: string; registration: string; auth: string; token: string; jwks: string; lineItems: string; lineItem(n: number): string };
  /** Signs an id_token as this LMS (override any claim, or the header's kid / the key). */
  idToken(claims: Record<string, unknown>, options?: { kid?: string; foreignKey?: boolean; alg?: string }): Promise<string>;
  /** Resource-link launch claims of the family's shape. */
  resourceLinkClaims(input: LaunchInput): Record<string, unknown>;
  deepLinkingClaims(input: LaunchInput & { data?: string; returnUrl?: string }): Record<string, unknown>;
  /**
   * What the LMS knows of the service as a tool: its origin gives the JWKS the token endpoint verifies
   * assertions with and the `target_link_uri` every id_token carries.
   */
  connect(serviceUrl: string): void;
  /** The `target_link_uri` claim of the id_tokens this LMS signs. */
  targetLinkUri: string;
  /**
   * Browser pages, for tests in Chromium: `/course?launch=<hint>` posts the login initiation to `loginUrl`;
   * the auth endpoint (GET, as the browser follows the service's redirect) signs the id_token that
   * `browserClaims` makes for the hint and form-posts it to the redirect URI; `/deep_linking_return` takes
   * the Deep Linking response. `/course-framed?launch=<hint>` is the same course page with the tool in
   * an iframe and `lti_storage_target=_parent`: the page answers the platform-storage postMessages
   * (`lti.put_data`, `lti.get_data`, per sender origin) and lists every message it took in
   * `window.lmsStorageLog`.
   */
  browser: { loginUrl: string; targetLinkUri: string; claims: ((hint: string, nonce: string) => Record<string, unknown>) | null };
  deepLinkingResponses: string[];
  /** What the registration endpoint answers (default 200 with client_id and deployment). */
  registration: { refuseToken: boolean; issuerOverride: string | null; body: Record<string, unknown> | null };
  /** Token endpoint behaviour; `drop` closes the connection without an answer. */
  token: { grantLineItem: boolean; expiresIn: number; drop: boolean };
  /** Line items made through the AGS container (POST), in order; `delayMs` holds each POST's answer. */
  created: Array<{ url: string; body: Record<string, unknown> }>;
  containerDelayMs: number;
  /** The client assertions the token endpoint accepted (their payloads). */
  assertions: JWTPayload[];
  scores: ScoreReceived[];
  /** Scores accepted per line item and user (the last timestamp). */
  gradebook: Map<string, { timestamp: string; scoreGiven: unknown }>;
  close(): Promise<void>;
}

export interface LaunchInput {
  nonce: string;
  sub: string;
  roles: string[];
  contextId: string;
  contextTitle?: string;
  contextLabel?: string;
  resourceLinkId?: string;
  custom?: Record<string, string>;
  lineItem?: string | null;
  /** An AGS claim naming only the course's line-item container (a link added by hand). */
  containerOnly?: boolean;
  deploymentId?: string;
}

export const ROLES = {
  learner: 'http://purl.imsglobal.org/vocab/lis/v2/membership#Learner',
  instructor: 'http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor',
  assistant: 'http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant',
  administrator: 'http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator',
  mentor: 'http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor',
} as const;

const LTI = 'https://purl.imsglobal.org/spec/lti/claim/';
const AGS_SCOPES = [
  'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem',
  'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly',
  'https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly',
  'https://purl.imsglobal.org/spec/lti-ags/scope/score',
];

function read(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

function escapeAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function html(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>LMS</title></head><body>${body}</body></html>`);
}

function json(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  res.writeHead(status, { 'Content-Type': type }).end(JSON.stringify(body));
}

export async function startLms(family: LmsFamily): Promise<LmsFixture> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const foreign = await generateKeyPair('RS256');
  const kid = `${family}-key-${randomBytes(4).toString('hex')}`;
  const publicJwk = { ...(await exportJWK(publicKey)), kid, use: 'sig', ...(family === 'canvas' || family === 'blackboard' ? { alg: 'RS256' } : {}) };
  const requests: Recorded[] = [];
  const scores: ScoreReceived[] = [];
  const gradebook = new Map<string, { timestamp: string; scoreGiven: unknown }>();
  const tokens = new Map<string, Set<string>>();
  let serviceJwks: ReturnType<typeof createRemoteJWKSet> | null = null;
  const sockets = new Set<Socket>();
  let origin = '';
  const clientId =
    family === 'canvas'
      ? `1000000000${Math.floor(Math.random() * 90000 + 10000)}`
      : family === 'moodle'
        ? randomBytes(8).toString('base64url')
        : randomUUID();
  const deploymentId =
    family === 'canvas'
      ? `${Math.floor(Math.random() * 900 + 100)}:${randomBytes(20).toString('hex')}`
      : family === 'moodle'
        ? String(Math.floor(Math.random() * 9 + 1))
        : randomUUID();
  const paths = {
    canvas: { conf: '/api/lti/security/openid-configuration', reg: '/api/lti/registrations', auth: '/api/lti/authorize_redirect', jwks: '/api/lti/security/jwks', token: '/login/oauth2/token', lineItems: '/lineitems' },
    moodle: { conf: '/mod/lti/openid-configuration.php', reg: '/mod/lti/openid-registration.php', auth: '/mod/lti/auth.php', jwks: '/mod/lti/certs.php', token: '/mod/lti/token.php', lineItems: '/lineitems' },
    blackboard: {
      conf: '/api/v1/gateway/openid-configuration',
      reg: '/api/v1/gateway/registrations',
      auth: '/api/v1/gateway/oidcauth',
      jwks: `/api/v1/management/applications/${clientId}/jwks.json`,
      token: '/api/v1/gateway/oauth2/jwttoken',
      lineItems: '/learn/api/v1/lti/courses/_42_1/lineItems',
    },
    brightspace: {
      conf: '/d2l/.well-known/openid-configuration',
      reg: '/d2l/lti/dynamic-registration',
      auth: '/d2l/lti/authenticate',
      jwks: '/d2l/.well-known/jwks',
      token: '/core/connect/token',
      lineItems: `/d2l/api/lti/ags/2.0/deployment/${deploymentId}/orgunit/6606/lineitems`,
    },
  }[family];

  const fixture: LmsFixture = {
    family,
    origin: '',
    issuer: '',
    clientId,
    deploymentId,
    kid,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    urls: {} as LmsFixture['urls'],
    registration: { refuseToken: false, issuerOverride: null, body: null },
    token: { grantLineItem: true, expiresIn: 3600, drop: false },
    created: [],
    containerDelayMs: 0,
    assertions: [],
    scores,
    gradebook,
    browser: { loginUrl: '', targetLinkUri: '', claims: null },
    deepLinkingResponses: [],
    targetLinkUri: '',
    connect: (serviceUrl) => {
      serviceJwks = createRemoteJWKSet(new URL('/.well-known/jwks.json', serviceUrl));
      fixture.targetLinkUri = new URL('/lti/launch', serviceUrl).toString();
    },
    async idToken(claims, options = {}) {
      const key = options.foreignKey ? foreign.privateKey : privateKey;
      return new SignJWT(claims as JWTPayload).setProtectedHeader({ alg: options.alg ?? 'RS256', kid: options.kid ?? kid, typ: 'JWT' }).sign(key);
    },
    resourceLinkClaims(input) {
      return baseClaims(input, 'LtiResourceLinkRequest', {
        [`${LTI}resource_link`]: { id: input.resourceLinkId ?? randomUUID(), title: 'Week 1 quiz', description: '' },
        ...(input.containerOnly
          ? { 'https://purl.imsglobal.org/spec/lti-ags/claim/endpoint': { scope: AGS_SCOPES, lineitems: fixture.urls.lineItems } }
          : {}),
        ...(input.lineItem
          ? {
              'https://purl.imsglobal.org/spec/lti-ags/claim/endpoint': {
                scope: AGS_SCOPES,
                lineitems: `${origin}${paths.lineItems}`,
                lineitem: input.lineItem,
              },
            }
          : {}),
      });
    },
    deepLinkingClaims(input) {
      return baseClaims(input, 'LtiDeepLinkingRequest', {
        'https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings': {
          deep_link_return_url: input.returnUrl ?? `${origin}/deep_linking_return`,
          accept_types: ['ltiResourceLink'],
          accept_presentation_document_targets: ['iframe', 'window'],
          accept_multiple: true,
          auto_create: true,
          ...(input.data !== undefined ? { data: input.data } : {}),
        },
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  function baseClaims(input: LaunchInput, messageType: string, extra: Record<string, unknown>): Record<string, unknown> {
    const now = Math.floor(Date.now() / 1000);
    const common: Record<string, unknown> = {
      iss: fixture.issuer,
      aud: family === 'moodle' ? [clientId] : clientId,
      ...(family === 'moodle' ? { azp: clientId } : {}),
      iat: now,
      exp: now + 60,
      nonce: input.nonce,
      sub: input.sub,
      given_name: 'Maria',
      family_name: 'Okafor',
      name: 'Maria Okafor',
      email: 'maria@northwind.example',
      [`${LTI}deployment_id`]: input.deploymentId ?? deploymentId,
      [`${LTI}message_type`]: messageType,
      [`${LTI}version`]: '1.3.0',
      [`${LTI}target_link_uri`]: fixture.targetLinkUri,
      [`${LTI}roles`]: input.roles,
      [`${LTI}context`]: {
        id: input.contextId,
        label: input.contextLabel ?? 'STAT 101',
        title: input.contextTitle ?? 'Introduction to Statistics',
        type: ['http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering'],
      },
      [`${LTI}tool_platform`]: {
        canvas: { guid: 'canvas-guid', name: 'Northwind University', version: 'cloud', product_family_code: 'canvas' },
        moodle: { guid: 'moodle.northwind.example', name: 'Northwind Moodle', version: '2024100700', product_family_code: 'moodle' },
        blackboard: { guid: 'b2a7c0e4f0c54f3a9d1e8b6f4a2c9e10', name: 'Northwind Learn', version: '3900.100.0-rel.35', product_family_code: 'BlackboardLearn' },
        brightspace: { guid: 'd2l-northwind-tenant', name: 'Northwind Brightspace', version: '20.24.11', product_family_code: 'desire2learn' },
      }[family],
      [`${LTI}launch_presentation`]: { document_target: 'iframe', return_url: `${origin}/return`, locale: 'en' },
      [`${LTI}custom`]: input.custom ?? {},
      ...familyClaims(input),
    };
    return { ...common, ...extra };
  }

  /** Claims only one product sends, as it sends them (the service must ignore what it does not use). */
  function familyClaims(input: LaunchInput): Record<string, unknown> {
    if (family === 'blackboard') {
      return {
        [`${LTI}roles`]: [...input.roles, 'http://purl.imsglobal.org/vocab/lis/v2/system/person#User'],
        'https://blackboard.com/lti/claim/one_time_session_token': `${randomBytes(16).toString('hex')}:${randomBytes(8).toString('hex')}`,
      };
    }
    if (family === 'brightspace') {
      return {
        'http://www.brightspace.com': { tenant_id: 'd2l-northwind-tenant', org_defined_id: 'S-1001', user_id: 1001, username: input.sub, Context_id_history: '', ResourceLink_id_history: '' },
      };
    }
    return {};
  }

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://lms.invalid');
      const body = await read(req);
      requests.push({ method: req.method ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body });
      if (url.pathname === paths.conf) {
        json(res, 200, {
          issuer: fixture.registration.issuerOverride ?? fixture.issuer,
          authorization_endpoint: fixture.urls.auth,
          registration_endpoint: fixture.urls.registration,
          jwks_uri: fixture.urls.jwks,
          token_endpoint: fixture.urls.token,
          token_endpoint_auth_methods_supported: ['private_key_jwt'],
          scopes_supported: ['openid', ...AGS_SCOPES],
          response_types_supported: ['id_token'],
          id_token_signing_alg_values_supported: ['RS256'],
          'https://purl.imsglobal.org/spec/lti-platform-configuration': {
            product_family_code: family,
            version: '1.0',
            messages_supported: [{ type: 'LtiResourceLinkRequest' }, { type: 'LtiDeepLinkingRequest' }],
          },
        });
        return;
      }
      if (url.pathname === paths.reg && req.method === 'POST') {
        if (fixture.registration.refuseToken || req.headers.authorization !== 'Bearer reg-token-1') {
          json(res, 401, { error: 'invalid_token', error_description: 'registration token expired' });
          return;
        }
        const posted = JSON.parse(body) as Record<string, unknown>;
        json(res, 200, fixture.registration.body ?? {
          ...posted,
          client_id: clientId,
          'https://purl.imsglobal.org/spec/lti-tool-configuration': {
            ...(posted['https://purl.imsglobal.org/spec/lti-tool-configuration'] as object),
            deployment_id: deploymentId,
          },
        });
        return;
      }
      if (url.pathname === '/course') {
        const fields = {
          iss: fixture.issuer,
          login_hint: 'browser-user',
          target_link_uri: fixture.browser.targetLinkUri,
          lti_message_hint: url.searchParams.get('launch') ?? '',
          client_id: clientId,
          lti_deployment_id: deploymentId,
        };
        const inputs = Object.entries(fields).map(([n, v]) => `<input type="hidden" name="${n}" value="${escapeAttr(v)}">`).join('');
        html(res, `<h1>Course page</h1><form id="f" method="post" action="${escapeAttr(fixture.browser.loginUrl)}">${inputs}<button type="submit">Open</button></form>`);
        return;
      }
      if (url.pathname === '/course-framed') {
        const fields = {
          iss: fixture.issuer,
          login_hint: 'browser-user',
          target_link_uri: fixture.browser.targetLinkUri,
          lti_message_hint: url.searchParams.get('launch') ?? '',
          client_id: clientId,
          lti_deployment_id: deploymentId,
          lti_storage_target: '_parent',
        };
        const inputs = Object.entries(fields).map(([n, v]) => `<input type="hidden" name="${n}" value="${escapeAttr(v)}">`).join('');
        // The platform side of the Platform Storage postMessage spec: one store per sender origin.
        const script = `
          window.lmsStorageLog = [];
          var store = {};
          window.addEventListener('message', function (event) {
            var d = event.data || {};
            if (d.subject !== 'lti.put_data' && d.subject !== 'lti.get_data') return;
            window.lmsStorageLog.push({ subject: d.subject, key: d.key, origin: event.origin });
            var bucket = store[event.origin] || (store[event.origin] = {});
            if (d.subject === 'lti.put_data') bucket[d.key] = d.value;
            event.source.postMessage({ subject: d.subject + '.response', message_id: d.message_id, key: d.key, value: bucket[d.key] }, event.origin);
          });`;
        html(
          res,
          `<h1>Course page</h1><form id="f" method="post" target="tool" action="${escapeAttr(fixture.browser.loginUrl)}">${inputs}<button type="submit">Open</button></form>` +
            `<iframe name="tool" title="Tool" width="900" height="400"></iframe><script>${script}</script>`,
        );
        return;
      }
      if (url.pathname === paths.auth && req.method === 'GET') {
        const make = fixture.browser.claims;
        const nonce = url.searchParams.get('nonce') ?? '';
        if (!make || url.searchParams.get('client_id') !== clientId) {
          res.writeHead(400).end();
          return;
        }
        const token = await fixture.idToken(make(url.searchParams.get('lti_message_hint') ?? '', nonce));
        html(
          res,
          `<form id="f" method="post" action="${escapeAttr(url.searchParams.get('redirect_uri') ?? '')}">` +
            `<input type="hidden" name="id_token" value="${escapeAttr(token)}"><input type="hidden" name="state" value="${escapeAttr(url.searchParams.get('state') ?? '')}"></form>` +
            `<script>document.getElementById('f').submit()</script>`,
        );
        return;
      }
      if (url.pathname === '/deep_linking_return' && req.method === 'POST') {
        const jwt = new URLSearchParams(body).get('JWT') ?? '';
        fixture.deepLinkingResponses.push(jwt);
        const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
        const items = (payload['https://purl.imsglobal.org/spec/lti-dl/claim/content_items'] as Array<{ title: string }> | undefined) ?? [];
        html(res, `<h1>Content added</h1><ul>${items.map((i) => `<li>${escapeAttr(i.title)}</li>`).join('')}</ul>`);
        return;
      }
      if (url.pathname === paths.jwks) {
        json(res, 200, { keys: [publicJwk] });
        return;
      }
      if (url.pathname === paths.token && req.method === 'POST') {
        if (fixture.token.drop) {
          req.socket.destroy();
          return;
        }
        const form = new URLSearchParams(body);
        try {
          if (!serviceJwks) throw new Error('no service JWKS');
          const audience = family === 'brightspace' ? BRIGHTSPACE_TOKEN_AUDIENCE : fixture.urls.token;
          const { payload } = await jwtVerify(form.get('client_assertion') ?? '', serviceJwks, { issuer: clientId, subject: clientId, audience });
          if (family === 'brightspace' && typeof payload.aud !== 'string') throw new Error('aud must be a single string');
          fixture.assertions.push(payload);
        } catch (err) {
          json(res, 401, { error: 'invalid_client', error_description: (err as Error).message });
          return;
        }
        const asked = (form.get('scope') ?? '').split(' ').filter(Boolean);
        if (!fixture.token.grantLineItem && asked.includes(AGS_SCOPES[0] as string)) {
          json(res, 400, { error: 'invalid_scope', error_description: 'lineitem scope not granted' });
          return;
        }
        const token = randomBytes(16).toString('hex');
        tokens.set(token, new Set(asked));
        json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: fixture.token.expiresIn, scope: asked.join(' ') });
        return;
      }
      if (url.pathname === paths.lineItems) {
        const scopes = tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
        if (!scopes?.has(AGS_SCOPES[0] as string)) {
          json(res, 401, { error: 'unauthorized' });
          return;
        }
        if (req.method === 'POST') {
          const item = JSON.parse(body) as Record<string, unknown>;
          if (fixture.containerDelayMs > 0) await new Promise((r) => setTimeout(r, fixture.containerDelayMs));
          const n = 1000 + fixture.created.length;
          const made = { url: fixture.urls.lineItem(n), body: item };
          fixture.created.push(made);
          json(res, 201, { ...item, id: made.url }, 'application/vnd.ims.lis.v2.lineitem+json');
          return;
        }
        const link = url.searchParams.get('resource_link_id');
        const listed = fixture.created.filter((c) => link === null || c.body['resourceLinkId'] === link).map((c) => ({ ...c.body, id: c.url }));
        json(res, 200, listed, 'application/vnd.ims.lis.v2.lineitemcontainer+json');
        return;
      }
      const lineItem = url.pathname.startsWith(`${paths.lineItems}/`) ? /^\/([^/]+)(\/scores)?$/.exec(url.pathname.slice(paths.lineItems.length)) : null;
      if (lineItem) {
        const bearer = (req.headers.authorization ?? '').replace(/^Bearer /, '');
        const scopes = tokens.get(bearer);
        if (!scopes) {
          json(res, 401, { error: 'unauthorized' });
          return;
        }
        const id = `${url.pathname.replace(/\/scores$/, '')}${url.search}`;
        if (lineItem[2] && req.method === 'POST') {
          const score = JSON.parse(body) as Record<string, unknown>;
          const key = `${id}\n${String(score['userId'])}`;
          const last = gradebook.get(key);
          const ts = String(score['timestamp']);
          if (last && last.timestamp >= ts) {
            scores.push({ lineItem: id, score, status: 409 });
            json(res, 409, { errors: [{ message: 'score timestamp is not after the last one' }] });
            return;
          }
          gradebook.set(key, { timestamp: ts, scoreGiven: score['scoreGiven'] });
          scores.push({ lineItem: id, score, status: 200 });
          json(res, 200, {});
          return;
        }
        if (req.method === 'GET') {
          json(res, 200, { id: `${origin}${id}`, scoreMaximum: 10, label: 'Quiz', resourceId: 'r' }, 'application/vnd.ims.lis.v2.lineitem+json');
          return;
        }
        if (req.method === 'PUT') {
          if (!scopes.has(AGS_SCOPES[0] as string)) {
            json(res, 403, { error: 'scope' });
            return;
          }
          json(res, 200, JSON.parse(body), 'application/vnd.ims.lis.v2.lineitem+json');
          return;
        }
      }
      res.writeHead(404).end();
    })();
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fixture.origin = origin;
  fixture.issuer = { canvas: 'https://canvas.instructure.com', moodle: origin, blackboard: 'https://blackboard.com', brightspace: 'https://northwind.brightspace.com' }[family];
  fixture.urls = {
    openidConfiguration: `${origin}${paths.conf}`,
    registration: `${origin}${paths.reg}`,
    auth: `${origin}${paths.auth}`,
    token: `${origin}${paths.token}`,
    jwks: `${origin}${paths.jwks}`,
    lineItems: `${origin}${paths.lineItems}`,
    lineItem: (n) =>
      family === 'moodle'
        ? `${origin}${paths.lineItems}/${n}?type_id=1`
        : family === 'blackboard'
          ? `${origin}${paths.lineItems}/_${n}_1`
          : `${origin}${paths.lineItems}/${n}`,
  };
  return fixture;
}
