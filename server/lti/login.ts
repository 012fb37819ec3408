/**
 * OIDC third-party initiated login (decision LTI-08): the LMS names itself and the person; the service
 * answers with the authentication request to the LMS's auth endpoint, after binding a fresh `state` and
 * `nonce` to this browser (a `SameSite=None; Secure` cookie, and the platform's storage frame when the LMS
 * offers one).
 */
import { randomBytes } from 'node:crypto';
import type { Clock, LtiRegistrationRecord, Store } from '../store/index.js';
import type { LtiRefusal } from './refusals.js';
import { refuse } from './refusals.js';
import type { LtiUrls } from './urls.js';

/** How long a login waits for the LMS to post the id_token back. */
export const LOGIN_TTL_SECONDS = 600;
export const STATE_COOKIE_PREFIX = 'lti_state_';
/** A deployment ID is the LMS's opaque string; the organization record keeps up to this many characters. */
export const MAX_DEPLOYMENT_ID_LENGTH = 255;

export interface LoginParams {
  iss?: string | undefined;
  login_hint?: string | undefined;
  target_link_uri?: string | undefined;
  lti_message_hint?: string | undefined;
  lti_deployment_id?: string | undefined;
  client_id?: string | undefined;
  lti_storage_target?: string | undefined;
}

export type LoginOutcome =
  | {
      ok: true;
      /** The authentication request URL. */
      location: string;
      cookie: string;
      registration: LtiRegistrationRecord;
      state: string;
      /** Set when the LMS offers platform storage: the page stores state first, then navigates. */
      storageTarget: string | null;
    }
  | { ok: false; refusal: LtiRefusal };

export function stateCookie(state: string): string {
  return `${STATE_COOKIE_PREFIX}${state}=1; Path=/lti/; Max-Age=${LOGIN_TTL_SECONDS}; HttpOnly; Secure; SameSite=None; Partitioned`;
}

/** Finds the registration a login or launch names: by client when given, else the issuer's only one. */
export async function findRegistration(
  store: Pick<Store, 'lti'>,
  issuer: string,
  clientId: string | undefined,
): Promise<LtiRegistrationRecord | null> {
  if (clientId !== undefined && clientId !== '') return store.lti.findRegistration(issuer, clientId);
  const all = await store.lti.listRegistrationsByIssuer(issuer);
  return all.length === 1 ? (all[0] ?? null) : null;
}

export async function startLogin(
  deps: { store: Pick<Store, 'lti'>; clock: Clock; urls: LtiUrls },
  params: LoginParams,
): Promise<LoginOutcome> {
  const { iss, login_hint: loginHint, target_link_uri: target } = params;
  if (!iss || !loginHint || !target) {
    const missing = [!iss && 'iss', !loginHint && 'login_hint', !target && 'target_link_uri'].filter(Boolean).join(', ');
    return { ok: false, refusal: refuse(400, 'login_incomplete', `login request without ${missing}`) };
  }
  const registration = await findRegistration(deps.store, iss, params.client_id);
  if (!registration) {
    return { ok: false, refusal: refuse(400, 'unknown_registration', `no registration for issuer ${iss} and client ${params.client_id ?? '(none given)'}`) };
  }
  if (registration.status !== 'active') {
    return { ok: false, refusal: refuse(403, 'registration_not_active', `registration ${registration.id} is ${registration.status}`) };
  }
  if (!deps.urls.isOwn(target)) {
    return { ok: false, refusal: refuse(400, 'foreign_target', 'target_link_uri is not on this service') };
  }
  // A deployment the registration has not seen is a new school (LTI-10), so it is not refused here; it is
  // kept with the login so the id_token must name the same one (LTI-60).
  const deploymentId = params.lti_deployment_id;
  if (deploymentId !== undefined && (deploymentId.trim() === '' || deploymentId.length > MAX_DEPLOYMENT_ID_LENGTH)) {
    return { ok: false, refusal: refuse(400, 'bad_deployment', 'lti_deployment_id is empty or longer than 255 characters') };
  }
  const state = randomBytes(32).toString('base64url');
  const nonce = randomBytes(32).toString('base64url');
  const storageTarget = params.lti_storage_target?.trim() || null;
  await deps.store.lti.createLogin({
    state,
    nonce,
    registrationId: registration.id,
    storageTarget,
    deploymentId: deploymentId ?? null,
    expiresAt: deps.clock.nowMs() + LOGIN_TTL_SECONDS * 1000,
  });
  const auth = new URL(registration.authUrl);
  const query: Record<string, string> = {
    scope: 'openid',
    response_type: 'id_token',
    response_mode: 'form_post',
    prompt: 'none',
    client_id: registration.clientId,
    redirect_uri: deps.urls.launch(),
    login_hint: loginHint,
    state,
    nonce,
  };
  if (params.lti_message_hint !== undefined) query['lti_message_hint'] = params.lti_message_hint;
  for (const [name, value] of Object.entries(query)) auth.searchParams.set(name, value);
  return { ok: true, location: auth.toString(), cookie: stateCookie(state), registration, state, storageTarget };
}

/** Reads `lti_state_<state>` from a Cookie header. */
export function hasStateCookie(cookieHeader: string | undefined, state: string): boolean {
  if (!cookieHeader) return false;
  const name = `${STATE_COOKIE_PREFIX}${state}`;
  return cookieHeader.split(';').some((part) => part.trim().split('=')[0] === name);
}
