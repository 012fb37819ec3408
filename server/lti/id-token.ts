/**
 * The id_token an LMS posts to `/lti/launch`, judged before any claim is trusted (decision LTI-09), in
 * this order: the login its `state` names (used up here, so neither a good nor a bad token can be posted
 * twice), the browser binding, the header, the key, the signature, `iss`, `aud`/`azp`, `exp`/`iat`, the
 * single-use `nonce`, the version, the message type and the deployment.
 */
import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import type { Clock, LtiLoginRecord, LtiRegistrationRecord, Store } from '../store/index.js';
import { hasStateCookie, MAX_DEPLOYMENT_ID_LENGTH } from './login.js';
import type { PlatformKeys } from './platform-keys.js';
import type { LtiRefusal } from './refusals.js';
import { refuse } from './refusals.js';
import type { LtiUrls } from './urls.js';
import { CLAIMS, LTI_VERSION, MESSAGE_TYPES } from './vocabulary.js';

/** At most this much clock difference with the LMS, either way. */
export const CLOCK_SKEW_SECONDS = 5;
/** A used nonce is remembered this long past the token's expiry (the token is refused by then anyway). */
const NONCE_MEMORY_MS = 10 * 60_000;

export type MessageType = (typeof MESSAGE_TYPES)['resourceLink'] | (typeof MESSAGE_TYPES)['deepLinking'];

export interface VerifiedLaunch {
  registration: LtiRegistrationRecord;
  claims: JWTPayload & Record<string, unknown>;
  messageType: MessageType;
  deploymentId: string;
}

export type LaunchPost = { id_token?: string | undefined; state?: string | undefined; lti_storage_value?: string | undefined };

export type Judgement =
  | { ok: true; launch: VerifiedLaunch }
  | { ok: false; refusal: LtiRefusal }
  /** A platform-storage login whose browser has no cookie: the page must ask the storage frame first. */
  | { ok: 'ask_storage'; login: LtiLoginRecord };

export interface IdTokenDeps {
  store: Pick<Store, 'lti'>;
  clock: Clock;
  keys: PlatformKeys;
  urls: LtiUrls;
}

export async function judgeIdToken(deps: IdTokenDeps, post: LaunchPost, cookieHeader: string | undefined): Promise<Judgement> {
  const { id_token: idToken, state } = post;
  if (!state) return { ok: false, refusal: refuse(400, 'no_state', 'launch without state') };
  if (!idToken) return { ok: false, refusal: refuse(400, 'no_id_token', 'launch without id_token') };
  const cookie = hasStateCookie(cookieHeader, state);
  if (!cookie && post.lti_storage_value === undefined) {
    const pending = await deps.store.lti.getLogin(state);
    if (pending?.storageTarget) return { ok: 'ask_storage', login: pending };
  }
  const login = await deps.store.lti.consumeLogin(state);
  if (!login) return { ok: false, refusal: refuse(400, 'unknown_state', 'state names no open login (unknown, used or expired)') };
  if (!cookie && !(login.storageTarget !== null && post.lti_storage_value === login.state)) {
    return { ok: false, refusal: refuse(400, 'state_not_bound', "the browser did not carry the login's state cookie") };
  }
  const registration = await deps.store.lti.getRegistration(login.registrationId);
  if (!registration) return { ok: false, refusal: refuse(400, 'unknown_registration', 'the login names a registration that is gone') };
  if (registration.status !== 'active') {
    return { ok: false, refusal: refuse(403, 'registration_not_active', `registration ${registration.id} is ${registration.status}`) };
  }

  let header;
  try {
    header = decodeProtectedHeader(idToken);
  } catch {
    return { ok: false, refusal: refuse(400, 'malformed_token', 'id_token is not a JWS') };
  }
  if (header.alg !== 'RS256') return { ok: false, refusal: refuse(401, 'bad_alg', `id_token alg ${String(header.alg)} is not RS256`) };
  if (typeof header.kid !== 'string' || header.kid === '') return { ok: false, refusal: refuse(401, 'no_kid', 'id_token header has no kid') };
  const key = await deps.keys.key(registration, header.kid);
  if (!key.ok) return { ok: false, refusal: refuse(401, 'unknown_kid', key.reason) };

  let claims: JWTPayload & Record<string, unknown>;
  try {
    const verified = await jwtVerify(idToken, key.key, {
      algorithms: ['RS256'],
      issuer: registration.issuer,
      audience: registration.clientId,
      clockTolerance: CLOCK_SKEW_SECONDS,
      currentDate: new Date(deps.clock.nowMs()),
      requiredClaims: ['exp', 'iat', 'nonce'],
    });
    claims = verified.payload as JWTPayload & Record<string, unknown>;
  } catch (err) {
    return { ok: false, refusal: verifyRefusal(err) };
  }
  const nowSeconds = deps.clock.nowMs() / 1000;
  if (typeof claims.iat !== 'number' || claims.iat > nowSeconds + CLOCK_SKEW_SECONDS) {
    return { ok: false, refusal: refuse(401, 'iat_in_future', 'id_token iat is in the future') };
  }
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  const azp = claims['azp'];
  if ((audiences.length > 1 || azp !== undefined) && azp !== registration.clientId) {
    return { ok: false, refusal: refuse(401, 'bad_azp', 'id_token azp is not the client') };
  }
  if (claims['nonce'] !== login.nonce) return { ok: false, refusal: refuse(401, 'nonce_mismatch', "id_token nonce is not the login's") };
  const fresh = await deps.store.lti.useNonce(registration.id, login.nonce, deps.clock.nowMs() + NONCE_MEMORY_MS);
  if (!fresh) return { ok: false, refusal: refuse(401, 'nonce_replayed', 'id_token nonce was used before') };
  if (claims[CLAIMS.version] !== LTI_VERSION) {
    return { ok: false, refusal: refuse(400, 'bad_version', `LTI version ${String(claims[CLAIMS.version])} is not ${LTI_VERSION}`) };
  }
  const messageType = claims[CLAIMS.messageType];
  if (messageType !== MESSAGE_TYPES.resourceLink && messageType !== MESSAGE_TYPES.deepLinking) {
    return { ok: false, refusal: refuse(400, 'bad_message_type', `message type ${String(messageType)} is not served`) };
  }
  const deploymentId = claims[CLAIMS.deploymentId];
  if (typeof deploymentId !== 'string' || deploymentId === '' || deploymentId.length > MAX_DEPLOYMENT_ID_LENGTH) {
    return { ok: false, refusal: refuse(400, 'no_deployment', 'id_token has no deployment_id') };
  }
  if (login.deploymentId !== null && deploymentId !== login.deploymentId) {
    return { ok: false, refusal: refuse(400, 'deployment_mismatch', "id_token deployment_id is not the one the login named") };
  }
  // The LMS says where it meant to send the person; a token meant for another tool is not used here (LTI-60).
  const target = claims[CLAIMS.targetLinkUri];
  if (typeof target !== 'string' || !deps.urls.isOwn(target)) {
    return { ok: false, refusal: refuse(400, 'foreign_target', 'id_token target_link_uri is missing or not on this service') };
  }
  return { ok: true, launch: { registration, claims, messageType, deploymentId } };
}

function verifyRefusal(err: unknown): LtiRefusal {
  if (err instanceof joseErrors.JWTExpired) return refuse(401, 'expired', 'id_token has expired');
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return refuse(401, 'bad_signature', 'id_token signature does not verify');
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    return refuse(401, `bad_${err.claim}`, `id_token ${err.claim} check failed: ${err.reason}`);
  }
  return refuse(401, 'invalid_token', 'id_token could not be verified');
}
