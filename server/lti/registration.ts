/**
 * How an LMS becomes known to the service (decisions LTI-03, LTI-05, LTI-06, LTI-07): LTI Dynamic
 * Registration 1.0 from the one URL an administrator pastes, manual registration for LMSes without it, and
 * the Canvas developer-key JSON. A registration arrives pending unless `LMS_AUTO_ACTIVATE` is on.
 */
import type { Config } from '../config.js';
import type { LtiRegistrationRecord, LtiRegistrationStatus, Store } from '../store/index.js';
import type { LmsHttp } from './http.js';
import { parseObject } from './http.js';
import { LtiUrls } from './urls.js';
import {
  ALL_AGS_SCOPES,
  CUSTOM_PARAMETERS,
  MESSAGE_TYPES,
  PLATFORM_CONFIGURATION,
  TOOL_CONFIGURATION,
} from './vocabulary.js';

export const CLIENT_NAME = 'Tool Integration Service';

export interface RegistrationDeps {
  store: Pick<Store, 'lti'>;
  config: Pick<Config, 'publicUrl' | 'lmsAutoActivate'>;
  lms: LmsHttp;
}

export type DynamicRegistrationOutcome =
  | { ok: true; registration: LtiRegistrationRecord }
  /** Nothing was stored. `status` is the page's: 400 for what the LMS handed over, 502 for its answers. */
  | { ok: false; status: 400 | 502; reason: string };

function arrivalStatus(config: Pick<Config, 'lmsAutoActivate'>): LtiRegistrationStatus {
  return config.lmsAutoActivate ? 'active' : 'pending';
}

/** The issuer must prefix the configuration's URL: same origin, and the URL's path starts with the issuer's. */
export function issuerPrefixes(issuer: string, configurationUrl: string): boolean {
  let iss: URL;
  let conf: URL;
  try {
    iss = new URL(issuer);
    conf = new URL(configurationUrl);
  } catch {
    return false;
  }
  if (iss.origin !== conf.origin || iss.search !== '' || iss.hash !== '') return false;
  const path = iss.pathname.replace(/\/+$/, '');
  return conf.pathname === path || conf.pathname.startsWith(`${path}/`);
}

function stringField(o: Record<string, unknown>, name: string): string | null {
  const value = o[name];
  return typeof value === 'string' && value.trim() !== '' ? value : null;
}

/** The client registration the service posts (LTI Dynamic Registration 1.0 §3.3). */
export function clientRegistration(publicUrl: string, scopes: readonly string[]): Record<string, unknown> {
  const urls = new LtiUrls(publicUrl);
  return {
    application_type: 'web',
    response_types: ['id_token'],
    grant_types: ['implicit', 'client_credentials'],
    initiate_login_uri: urls.login(),
    redirect_uris: [urls.launch()],
    client_name: CLIENT_NAME,
    jwks_uri: urls.jwks(),
    token_endpoint_auth_method: 'private_key_jwt',
    scope: scopes.join(' '),
    [TOOL_CONFIGURATION]: {
      domain: new URL(publicUrl).host,
      target_link_uri: urls.launch(),
      custom_parameters: { ...CUSTOM_PARAMETERS },
      claims: ['iss', 'sub', 'name', 'given_name', 'family_name', 'email'],
      messages: [
        { type: MESSAGE_TYPES.resourceLink, target_link_uri: urls.launch() },
        {
          type: MESSAGE_TYPES.deepLinking,
          target_link_uri: urls.launch(),
          label: CLIENT_NAME,
          placements: ['link_selection', 'assignment_selection', 'editor_button'],
        },
      ],
    },
  };
}

/** Dynamic Registration (LTI-05): read the platform's configuration, post the client registration, store. */
export async function registerDynamically(
  deps: RegistrationDeps,
  input: { openidConfiguration: string | undefined; registrationToken: string | undefined },
): Promise<DynamicRegistrationOutcome> {
  const configurationUrl = input.openidConfiguration?.trim() ?? '';
  if (configurationUrl === '') return { ok: false, status: 400, reason: 'openid_configuration is required' };
  const fetched = await deps.lms.getJson(configurationUrl, 'openid_configuration');
  if (!fetched.ok) return { ok: false, status: 502, reason: fetched.reason };
  const platform = fetched.value;
  const issuer = stringField(platform, 'issuer');
  if (issuer === null) return { ok: false, status: 502, reason: 'the OpenID configuration has no issuer' };
  if (!issuerPrefixes(issuer, configurationUrl)) {
    return { ok: false, status: 400, reason: `the OpenID configuration's issuer ${issuer} does not prefix its URL` };
  }
  const registrationEndpoint = stringField(platform, 'registration_endpoint');
  const authUrl = stringField(platform, 'authorization_endpoint');
  const tokenUrl = stringField(platform, 'token_endpoint');
  const jwksUrl = stringField(platform, 'jwks_uri');
  const missing = [
    ['registration_endpoint', registrationEndpoint],
    ['authorization_endpoint', authUrl],
    ['token_endpoint', tokenUrl],
    ['jwks_uri', jwksUrl],
  ].find(([, value]) => value === null);
  if (missing || !registrationEndpoint || !authUrl || !tokenUrl || !jwksUrl) {
    return { ok: false, status: 502, reason: `the OpenID configuration has no ${missing?.[0] ?? 'endpoint'}` };
  }
  // The URLs the service will call later pass the rules now, so a registration never stores one it cannot use.
  for (const [field, url] of [['authorization_endpoint', authUrl], ['token_endpoint', tokenUrl], ['jwks_uri', jwksUrl]] as const) {
    const check = await deps.lms.check(url, field);
    if (!check.ok) return { ok: false, status: 502, reason: check.message };
  }
  const supported = Array.isArray(platform['scopes_supported']) ? platform['scopes_supported'].filter((s): s is string => typeof s === 'string') : [];
  const asked = supported.length === 0 ? [...ALL_AGS_SCOPES] : ALL_AGS_SCOPES.filter((s) => supported.includes(s));
  const posted = await deps.lms.request({
    method: 'POST',
    url: registrationEndpoint,
    field: 'registration_endpoint',
    headers: {
      'Content-Type': 'application/json',
      ...(input.registrationToken ? { Authorization: `Bearer ${input.registrationToken}` } : {}),
    },
    body: JSON.stringify(clientRegistration(deps.config.publicUrl, asked)),
  });
  if (!posted.ok) return { ok: false, status: 502, reason: posted.reason };
  if (posted.status < 200 || posted.status > 299) {
    return { ok: false, status: 502, reason: `the LMS refused the registration (HTTP ${posted.status})${briefReason(posted.body)}` };
  }
  const answer = parseObject(posted.body);
  const clientId = answer ? stringField(answer, 'client_id') : null;
  if (!answer || clientId === null) return { ok: false, status: 502, reason: 'the LMS answered the registration without a client_id' };
  const toolConfiguration = answer[TOOL_CONFIGURATION];
  const deployment =
    typeof toolConfiguration === 'object' && toolConfiguration !== null
      ? stringField(toolConfiguration as Record<string, unknown>, 'deployment_id')
      : null;
  const granted = typeof answer['scope'] === 'string' ? answer['scope'].split(/\s+/).filter((s) => s !== '') : asked;
  const platformConfiguration = platform[PLATFORM_CONFIGURATION];
  const productFamily =
    typeof platformConfiguration === 'object' && platformConfiguration !== null
      ? stringField(platformConfiguration as Record<string, unknown>, 'product_family_code')
      : null;
  const { registration } = await deps.store.lti.saveRegistration({
    issuer,
    clientId,
    authUrl,
    tokenUrl,
    jwksUrl,
    tokenAudience: stringField(platform, 'authorization_server'),
    title: productFamily ?? new URL(issuer).host,
    productFamilyCode: productFamily,
    scopes: granted,
    status: arrivalStatus(deps.config),
    method: 'dynamic',
    deployments: deployment !== null ? [deployment] : [],
  });
  return { ok: true, registration };
}

function briefReason(body: string): string {
  const text = body.trim().replace(/\s+/g, ' ');
  if (text === '') return '';
  return `: ${text.length > 200 ? `${text.slice(0, 200)}…` : text}`;
}

export interface ManualRegistrationInput {
  issuer: string;
  clientId: string;
  deployments: readonly string[];
  authUrl: string;
  tokenUrl: string;
  jwksUrl: string;
  tokenAudience?: string | null;
  title?: string | null;
  scopes?: readonly string[];
}

export type ManualRegistrationOutcome =
  | { ok: true; registration: LtiRegistrationRecord; created: boolean }
  | { ok: false; field: string; message: string };

/** Manual registration (LTI-06): every LMS URL passes the URL rules before anything is stored. */
export async function registerManually(deps: RegistrationDeps, input: ManualRegistrationInput): Promise<ManualRegistrationOutcome> {
  let issuerUrl: URL;
  try {
    issuerUrl = new URL(input.issuer);
  } catch {
    return { ok: false, field: 'issuer', message: 'issuer must be an absolute URL' };
  }
  for (const [field, url, rule] of [
    ['auth_url', input.authUrl, 'authorization_endpoint'],
    ['token_url', input.tokenUrl, 'token_endpoint'],
    ['jwks_url', input.jwksUrl, 'jwks_uri'],
  ] as const) {
    const check = await deps.lms.check(url, rule);
    if (!check.ok) return { ok: false, field, message: check.message.replace(rule, field) };
  }
  const saved = await deps.store.lti.saveRegistration({
    issuer: input.issuer,
    clientId: input.clientId,
    authUrl: input.authUrl,
    tokenUrl: input.tokenUrl,
    jwksUrl: input.jwksUrl,
    tokenAudience: input.tokenAudience ?? null,
    title: input.title?.trim() || issuerUrl.host,
    productFamilyCode: null,
    scopes: input.scopes ?? [...ALL_AGS_SCOPES],
    status: arrivalStatus(deps.config),
    method: 'manual',
    deployments: input.deployments,
  });
  return { ok: true, ...saved };
}

/** The Canvas developer-key JSON configuration (LTI-06), served at `/lti/canvas.json`. */
export function canvasConfiguration(publicUrl: string): Record<string, unknown> {
  const urls = new LtiUrls(publicUrl);
  const deepLinking = (placement: string): Record<string, unknown> => ({
    placement,
    message_type: MESSAGE_TYPES.deepLinking,
    target_link_uri: urls.launch(),
    text: CLIENT_NAME,
  });
  return {
    title: CLIENT_NAME,
    description: 'Tools for your courses, placed through the Tool Integration Service picker.',
    oidc_initiation_url: urls.login(),
    target_link_uri: urls.launch(),
    public_jwk_url: urls.jwks(),
    scopes: [...ALL_AGS_SCOPES],
    custom_fields: { ...CUSTOM_PARAMETERS },
    extensions: [
      {
        domain: new URL(publicUrl).host,
        platform: 'canvas.instructure.com',
        privacy_level: 'public',
        settings: {
          text: CLIENT_NAME,
          placements: [deepLinking('link_selection'), deepLinking('assignment_selection'), deepLinking('editor_button')],
        },
      },
    ],
  };
}
