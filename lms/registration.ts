/**
 * LTI Dynamic Registration 1.0, platform side. The administrator's step is `initiateRegistration`: a
 * registration token and the URL to open, `{tool registration URL}?openid_configuration=…&registration_token=…`.
 * The tool reads the OpenID configuration and POSTs its client registration to the registration endpoint
 * with that token; the LMS answers with a new client ID and the registration's first deployment
 * (decision LTI-33).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearer, escapeHtml, isObject, LmsError, readJson, sendHtml, sendJson } from './http.js';
import type { Platform } from './platform.js';
import { ALL_AGS_SCOPES, PATHS, PLATFORM_CONFIGURATION, TOOL_CONFIGURATION, urlOf } from './platform.js';
import type { DeploymentRow, RegistrationRow } from './store.js';

/** A registration token lives an hour: the administrator's window may sit open a while. */
const REGISTRATION_TOKEN_TTL_MS = 3600_000;

/** The substitution variables the LMS resolves in custom parameters (see `launch.ts`). */
export const SUPPORTED_VARIABLES = [
  'Context.id',
  'Context.title',
  'Context.label',
  'Context.id.history',
  'ResourceLink.id',
  'ResourceLink.title',
  'User.id',
  'Person.name.given',
  'Person.name.family',
  'Person.email.primary',
] as const;

export function openidConfiguration(platform: Platform): Record<string, unknown> {
  return {
    issuer: platform.issuer,
    authorization_endpoint: urlOf(platform, PATHS.authorization),
    registration_endpoint: urlOf(platform, PATHS.registration),
    jwks_uri: urlOf(platform, PATHS.jwks),
    token_endpoint: urlOf(platform, PATHS.token),
    token_endpoint_auth_methods_supported: ['private_key_jwt'],
    token_endpoint_auth_signing_alg_values_supported: ['RS256'],
    scopes_supported: ['openid', ...ALL_AGS_SCOPES],
    response_types_supported: ['id_token'],
    response_modes_supported: ['form_post'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    claims_supported: ['iss', 'sub', 'aud', 'iat', 'exp', 'nonce', 'name', 'given_name', 'family_name', 'email'],
    [PLATFORM_CONFIGURATION]: {
      product_family_code: platform.profile.productFamilyCode,
      version: '1.0.0',
      messages_supported: [
        { type: 'LtiResourceLinkRequest' },
        { type: 'LtiDeepLinkingRequest', placements: ['ContentArea'] },
      ],
      variables: [...SUPPORTED_VARIABLES, ...Object.keys(platform.profile.extraVariables([])).map((v) => v.slice(1))],
    },
  };
}

export interface InitiatedRegistration {
  url: string;
  page_url: string;
  registration_token: string;
  expires: string;
}

/** The administrator pastes the tool's registration URL: the LMS answers the URL its window opens. */
export async function initiateRegistration(platform: Platform, toolUrl: string): Promise<InitiatedRegistration> {
  let url: URL;
  try {
    url = new URL(toolUrl);
  } catch {
    throw new LmsError(400, 'invalid_request', 'tool_url must be an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new LmsError(400, 'invalid_request', 'tool_url must be an http(s) URL');
  const token = randomBytes(32).toString('base64url');
  const expires = platform.clock.nowMs() + REGISTRATION_TOKEN_TTL_MS;
  await platform.db.run('INSERT INTO lms_registration_tokens (token, expires) VALUES (?, ?)', [token, expires]);
  url.searchParams.set('openid_configuration', urlOf(platform, PATHS.openidConfiguration));
  url.searchParams.set('registration_token', token);
  const page = new URL(urlOf(platform, PATHS.registrationPage));
  page.searchParams.set('registration_token', token);
  page.searchParams.set('tool_url', url.toString());
  return { url: url.toString(), page_url: page.toString(), registration_token: token, expires: new Date(expires).toISOString() };
}

/**
 * The administrator's window: the tool's registration page in a frame, and the LMS listening for the
 * tool's `org.imsglobal.lti.close` message. Only a URL carrying a live registration token is framed.
 */
export async function registrationPage(platform: Platform, res: ServerResponse, query: URLSearchParams): Promise<void> {
  const token = query.get('registration_token') ?? '';
  const toolUrl = query.get('tool_url') ?? '';
  const row = await platform.db.get<{ expires: number; client_id: string | null }>('SELECT expires, client_id FROM lms_registration_tokens WHERE token = ?', [token]);
  let framed: URL | null = null;
  try {
    framed = new URL(toolUrl);
  } catch {
    framed = null;
  }
  if (!row || row.expires <= platform.clock.nowMs() || !framed || framed.searchParams.get('registration_token') !== token) {
    sendHtml(res, 404, 'Registration not found', '<h1>Registration not found</h1><p>This registration link is unknown or has expired.</p>');
    return;
  }
  sendHtml(
    res,
    200,
    'Register a tool',
    `<h1>Register a tool</h1><p id="status">Waiting for the tool to finish its registration…</p>` +
      `<iframe id="tool" title="Tool registration" src="${escapeHtml(framed.toString())}" style="width:100%;height:70vh;border:1px solid #999"></iframe>` +
      `<script>window.addEventListener("message",function(e){if(e.data&&e.data.subject==="org.imsglobal.lti.close"){` +
      `document.getElementById("status").textContent="Registration finished.";document.getElementById("tool").remove();}});</script>`,
  );
}

function invalidMetadata(description: string): LmsError {
  return new LmsError(400, 'invalid_client_metadata', description);
}

function absoluteUrl(value: unknown, name: string): string {
  if (typeof value !== 'string') throw invalidMetadata(`${name} must be a URL`);
  try {
    const url = new URL(value);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('scheme');
  } catch {
    throw invalidMetadata(`${name} must be an absolute http(s) URL`);
  }
  return value;
}

function stringList(value: unknown, name: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw invalidMetadata(`${name} must be an array of strings`);
  return value as string[];
}

/** The registration endpoint: checks the token, then the client's metadata, then makes the client. */
export async function registerClient(platform: Platform, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const token = bearer(req);
  if (!token) throw new LmsError(401, 'invalid_token', 'the registration needs the registration_token as a bearer token', { 'WWW-Authenticate': 'Bearer' });
  const tokenRow = await platform.db.get<{ expires: number; client_id: string | null }>(
    'SELECT expires, client_id FROM lms_registration_tokens WHERE token = ?',
    [token],
  );
  if (!tokenRow || tokenRow.expires <= platform.clock.nowMs()) {
    throw new LmsError(401, 'invalid_token', 'the registration token is unknown or expired', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  }
  if (tokenRow.client_id !== null) {
    throw new LmsError(401, 'invalid_token', 'the registration token was used already', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  }
  const body = await readJson(req, 'application/json');
  if (!isObject(body)) throw invalidMetadata('the client registration must be a JSON object');
  if (body['application_type'] !== 'web') throw invalidMetadata('application_type must be "web"');
  if (!stringList(body['response_types'], 'response_types').includes('id_token')) throw invalidMetadata('response_types must include id_token');
  const grants = stringList(body['grant_types'], 'grant_types');
  if (!grants.includes('implicit') || !grants.includes('client_credentials')) {
    throw invalidMetadata('grant_types must include implicit and client_credentials');
  }
  if (body['token_endpoint_auth_method'] !== 'private_key_jwt') throw invalidMetadata('token_endpoint_auth_method must be private_key_jwt');
  const initiateLoginUri = absoluteUrl(body['initiate_login_uri'], 'initiate_login_uri');
  const redirectUris = stringList(body['redirect_uris'], 'redirect_uris');
  if (redirectUris.length === 0) throw new LmsError(400, 'invalid_redirect_uri', 'redirect_uris must name at least one URL');
  for (const uri of redirectUris) absoluteUrl(uri, 'redirect_uris');
  const jwksUri = absoluteUrl(body['jwks_uri'], 'jwks_uri');
  const clientName = typeof body['client_name'] === 'string' && body['client_name'] !== '' ? body['client_name'] : 'LTI tool';
  const scopeRaw = body['scope'];
  if (scopeRaw !== undefined && typeof scopeRaw !== 'string') throw invalidMetadata('scope must be a space-separated string');
  const scopes = (scopeRaw ?? '').split(/\s+/).filter((s) => ALL_AGS_SCOPES.includes(s));
  const config = body[TOOL_CONFIGURATION];
  if (!isObject(config)) throw invalidMetadata(`${TOOL_CONFIGURATION} is required`);
  if (typeof config['domain'] !== 'string' || config['domain'] === '') throw invalidMetadata('the tool configuration needs a domain');
  const targetLinkUri = absoluteUrl(config['target_link_uri'], 'target_link_uri');
  const custom = config['custom_parameters'] ?? {};
  if (!isObject(custom) || Object.values(custom).some((v) => typeof v !== 'string')) {
    throw invalidMetadata('custom_parameters must be an object of strings');
  }
  const messages = config['messages'] ?? [];
  if (!Array.isArray(messages) || messages.some((m) => !isObject(m) || typeof m['type'] !== 'string')) {
    throw invalidMetadata('messages must be an array of objects with a type');
  }
  const claims = config['claims'] ?? [];
  const claimList = stringList(claims, 'claims');

  const clientId = await platform.profile.newClientId(platform.db);
  const now = platform.clock.nowMs();
  const deploymentId = await platform.profile.newDeploymentId(platform.db, clientId);
  const answer = {
    ...body,
    client_id: clientId,
    scope: scopes.join(' '),
    [TOOL_CONFIGURATION]: { ...config, deployment_id: deploymentId },
  };
  await platform.db.transaction(async (tx) => {
    // The token is spent first, in one conditional write: of two registrations racing with one token
    // (on one process or two), one spends it and the other stores nothing.
    const spent = await tx.run('UPDATE lms_registration_tokens SET client_id = ? WHERE token = ? AND client_id IS NULL AND expires > ?', [clientId, token, now]);
    if (spent.changes !== 1) {
      throw new LmsError(401, 'invalid_token', 'the registration token was used already', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
    }
    await tx.run(
      `INSERT INTO lms_registrations (client_id, client_name, initiate_login_uri, redirect_uris, jwks_uri, target_link_uri, domain,
         scopes, grants_line_item_scope, custom_parameters, messages, claims, document, created)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)`,
      [
        clientId,
        clientName,
        initiateLoginUri,
        JSON.stringify(redirectUris),
        jwksUri,
        targetLinkUri,
        config['domain'] as string,
        JSON.stringify(scopes),
        JSON.stringify(custom),
        JSON.stringify(messages),
        JSON.stringify(claimList),
        JSON.stringify(answer),
        now,
      ],
    );
    await tx.run('INSERT INTO lms_deployments (deployment_id, client_id, title, created) VALUES (?, ?, ?, ?)', [deploymentId, clientId, clientName, now]);
  });
  sendJson(res, 200, answer);
}

export async function registrationJson(platform: Platform, row: RegistrationRow): Promise<Record<string, unknown>> {
  const deployments = await platform.db.all<DeploymentRow>('SELECT * FROM lms_deployments WHERE client_id = ? ORDER BY created, deployment_id', [row.client_id]);
  return {
    client_id: row.client_id,
    client_name: row.client_name,
    initiate_login_uri: row.initiate_login_uri,
    redirect_uris: JSON.parse(row.redirect_uris) as string[],
    jwks_uri: row.jwks_uri,
    target_link_uri: row.target_link_uri,
    domain: row.domain,
    scopes: JSON.parse(row.scopes) as string[],
    grants_line_item_scope: row.grants_line_item_scope === 1,
    custom_parameters: JSON.parse(row.custom_parameters) as Record<string, string>,
    deployments: deployments.map((d) => ({ deployment_id: d.deployment_id, title: d.title })),
    created: new Date(row.created).toISOString(),
  };
}
