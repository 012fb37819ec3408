/**
 * Launches, platform side (LTI Core 1.3 §5, the Security Framework's third-party initiated login):
 * a launch URL (`/launch/{hint}`, issued by a control for one person and one resource link or one Deep
 * Linking request) sends the browser to the tool's `initiate_login_uri`; the tool sends it back to the
 * authorization endpoint, which answers a signed id_token by form_post to the tool's redirect URI. The
 * message hint is single use: the id_token is made once (decision LTI-34).
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { LmsError, redirect, sendFormPost, sendHtml, escapeHtml } from './http.js';
import type { Platform } from './platform.js';
import { effectiveSettings, scopesIn } from './deployment-settings.js';
import { AGS_CLAIM, askedScopes, DL_CLAIM, LTI_CLAIM, PATHS, settingsOf, urlOf } from './platform.js';
import type { CourseRow, MessageRow, RegistrationRow, ResourceLinkRow, UserRow } from './store.js';
import { courseOf, deploymentOf, enrolmentRoles, registrationOf, resourceLinkOf, userOf } from './store.js';

export interface IssuedLaunch {
  url: string;
  expires: string;
}

async function registrationOfCourse(platform: Platform, course: CourseRow): Promise<{ registration: RegistrationRow; deploymentId: string }> {
  const deployment = await deploymentOf(platform.db, course.deployment_id);
  const registration = deployment ? await registrationOf(platform.db, deployment.client_id) : null;
  if (!deployment || !registration) throw new LmsError(409, 'invalid_request', `course ${course.id} has no tool deployment`);
  return { registration, deploymentId: deployment.deployment_id };
}

async function enrolledUser(platform: Platform, course: CourseRow, sub: string): Promise<UserRow> {
  const user = await userOf(platform.db, sub);
  if (!user) throw new LmsError(404, 'not_found', `user ${sub} not found`);
  if (!(await enrolmentRoles(platform.db, course.id, sub))) throw new LmsError(403, 'not_enrolled', `user ${sub} is not enrolled in course ${course.id}`);
  return user;
}

async function storeMessage(platform: Platform, message: Omit<MessageRow, 'hint' | 'expires'>): Promise<IssuedLaunch> {
  const hint = randomBytes(32).toString('base64url');
  // The deployment's own lifetime when it has one (decision LTI-71).
  const expires = platform.clock.nowMs() + (await effectiveSettings(platform, message.deployment_id)).launch_ttl_seconds * 1000;
  await platform.db.run(
    `INSERT INTO lms_messages (hint, kind, client_id, deployment_id, course_id, resource_link_id, sub, target_link_uri, storage_target, return_url, data, expires)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      hint,
      message.kind,
      message.client_id,
      message.deployment_id,
      message.course_id,
      message.resource_link_id,
      message.sub,
      message.target_link_uri,
      message.storage_target,
      message.return_url,
      message.data,
      expires,
    ],
  );
  return { url: urlOf(platform, `${PATHS.launch}${hint}`), expires: new Date(expires).toISOString() };
}

/** A resource link launch for one enrolled person. */
export async function issueResourceLinkLaunch(platform: Platform, input: { resourceLinkId: string; sub: string; returnUrl?: string }): Promise<IssuedLaunch> {
  const link = await resourceLinkOf(platform.db, input.resourceLinkId);
  const course = link ? await courseOf(platform.db, link.course_id) : null;
  if (!link || !course) throw new LmsError(404, 'not_found', `resource link ${input.resourceLinkId} not found`);
  await enrolledUser(platform, course, input.sub);
  const { registration, deploymentId } = await registrationOfCourse(platform, course);
  return storeMessage(platform, {
    kind: 'LtiResourceLinkRequest',
    client_id: registration.client_id,
    deployment_id: deploymentId,
    course_id: course.id,
    resource_link_id: link.id,
    sub: input.sub,
    target_link_uri: link.url ?? registration.target_link_uri,
    storage_target: await storageTargetOf(platform),
    return_url: input.returnUrl ?? null,
    data: null,
  });
}

/** A Deep Linking request in a course, for one enrolled person (an instructor, usually). */
export async function issueDeepLinkingLaunch(platform: Platform, input: { courseId: string; sub: string; returnUrl?: string }): Promise<IssuedLaunch> {
  const course = await courseOf(platform.db, input.courseId);
  if (!course) throw new LmsError(404, 'not_found', `course ${input.courseId} not found`);
  await enrolledUser(platform, course, input.sub);
  const { registration, deploymentId } = await registrationOfCourse(platform, course);
  const messages = JSON.parse(registration.messages) as { type: string; target_link_uri?: string }[];
  const dl = messages.find((m) => m.type === 'LtiDeepLinkingRequest');
  if (!dl) throw new LmsError(409, 'invalid_request', `the tool of client ${registration.client_id} did not register LtiDeepLinkingRequest`);
  return storeMessage(platform, {
    kind: 'LtiDeepLinkingRequest',
    client_id: registration.client_id,
    deployment_id: deploymentId,
    course_id: course.id,
    resource_link_id: null,
    sub: input.sub,
    target_link_uri: dl.target_link_uri ?? registration.target_link_uri,
    storage_target: await storageTargetOf(platform),
    return_url: input.returnUrl ?? null,
    data: randomBytes(24).toString('base64url'),
  });
}

async function storageTargetOf(platform: Platform): Promise<string | null> {
  return (await settingsOf(platform)).platform_storage ? platform.profile.storageTarget : null;
}

/**
 * The platform side of the LTI Platform Storage spec (`lti.capabilities`, `lti.put_data`, `lti.get_data`),
 * kept per tool origin in the page's memory, which lives as long as the LMS page around the tool's frame.
 */
const STORAGE_SCRIPT =
  '(function(){var store={};window.addEventListener("message",function(e){var d=e.data;' +
  'if(!d||typeof d!=="object"||typeof d.subject!=="string"||!e.source)return;var reply;var k=e.origin+"\\n"+d.key;' +
  'if(d.subject==="lti.capabilities"){reply={subject:"lti.capabilities.response",message_id:d.message_id,' +
  'supported_messages:[{subject:"lti.put_data"},{subject:"lti.get_data"}]};}' +
  'else if(d.subject==="lti.put_data"){if(typeof d.key!=="string"){reply={subject:"lti.put_data.response",message_id:d.message_id,error:{code:"bad_request",message:"key is required"}};}' +
  'else{store[k]=d.value;reply={subject:"lti.put_data.response",message_id:d.message_id,key:d.key,value:d.value};}}' +
  'else if(d.subject==="lti.get_data"){reply={subject:"lti.get_data.response",message_id:d.message_id,key:d.key,value:store[k]};}' +
  'else{return;}e.source.postMessage(reply,e.origin);});})();';

/** `GET /platform-storage`: the named frame a Canvas-shaped launch offers beside the tool's. */
export function platformStorageFrame(res: ServerResponse): void {
  sendHtml(res, 200, 'Platform storage', `<script>${STORAGE_SCRIPT}</script>`);
}

async function liveMessage(platform: Platform, hint: string): Promise<MessageRow | null> {
  const row = await platform.db.get<MessageRow>('SELECT * FROM lms_messages WHERE hint = ?', [hint]);
  return row && row.expires > platform.clock.nowMs() ? row : null;
}

/**
 * `GET /launch/{hint}`: the browser goes to the tool's login initiation (third-party initiated login). A
 * launch offering platform storage first answers the LMS's page with the tool in a frame (`?frame=1` is
 * that frame's own request), as LMSes that offer it open tools.
 */
export async function startLaunch(platform: Platform, res: ServerResponse, hint: string, framed = false): Promise<void> {
  const message = await liveMessage(platform, hint);
  const registration = message ? await registrationOf(platform.db, message.client_id) : null;
  if (!message || !registration) {
    sendHtml(res, 404, 'Launch not found', '<h1>Launch not found</h1><p>This launch link is unknown, used or expired.</p>');
    return;
  }
  if (message.storage_target && !framed) {
    const frameUrl = urlOf(platform, `${PATHS.launch}${encodeURIComponent(hint)}?frame=1`);
    const storage =
      message.storage_target === '_parent'
        ? `<script>${STORAGE_SCRIPT}</script>`
        : `<iframe name="${escapeHtml(message.storage_target)}" src="${escapeHtml(urlOf(platform, PATHS.platformStorage))}" hidden></iframe>`;
    sendHtml(
      res,
      200,
      registration.client_name,
      `${storage}<iframe id="tool" name="tool" title="${escapeHtml(registration.client_name)}" src="${escapeHtml(frameUrl)}" style="width:100%;height:90vh;border:0"></iframe>`,
    );
    return;
  }
  const login = new URL(registration.initiate_login_uri);
  login.searchParams.set('iss', platform.issuer);
  login.searchParams.set('login_hint', message.sub);
  login.searchParams.set('target_link_uri', message.target_link_uri);
  login.searchParams.set('lti_message_hint', message.hint);
  login.searchParams.set('client_id', message.client_id);
  if (platform.profile.sendsDeploymentAtLogin) login.searchParams.set('lti_deployment_id', message.deployment_id);
  if (message.storage_target) login.searchParams.set('lti_storage_target', message.storage_target);
  redirect(res, login.toString());
}

/** OIDC authentication request parameters (GET query or POST form). */
export type AuthParams = Record<string, string>;

/**
 * The authorization endpoint. A request naming no registered client or redirect URI gets an error page
 * (OIDC forbids redirecting to an unverified URI); any other refusal goes back to the tool as an OIDC error
 * response by form_post, with the tool's `state`.
 */
export async function authorize(platform: Platform, res: ServerResponse, params: AuthParams): Promise<void> {
  const clientId = params['client_id'] ?? '';
  const registration = clientId ? await registrationOf(platform.db, clientId) : null;
  const redirectUri = params['redirect_uri'] ?? '';
  if (!registration) {
    sendHtml(res, 400, 'Launch refused', `<h1>Launch refused</h1><p>${escapeHtml(clientId ? `client_id ${clientId} is not registered` : 'client_id is required')}</p>`);
    return;
  }
  if (!(JSON.parse(registration.redirect_uris) as string[]).includes(redirectUri)) {
    sendHtml(res, 400, 'Launch refused', '<h1>Launch refused</h1><p>redirect_uri is not one the tool registered</p>');
    return;
  }
  const refuse = (error: string, description: string): void => {
    const fields: Record<string, string> = { error, error_description: description };
    if (params['state'] !== undefined) fields['state'] = params['state'];
    sendFormPost(res, redirectUri, fields, 'Launch refused');
  };
  if (!(params['scope'] ?? '').split(' ').includes('openid')) return refuse('invalid_scope', 'scope must include openid');
  if (params['response_type'] !== 'id_token') return refuse('unsupported_response_type', 'response_type must be id_token');
  if (params['response_mode'] !== 'form_post') return refuse('invalid_request', 'response_mode must be form_post');
  if (params['prompt'] !== 'none') return refuse('invalid_request', 'prompt must be none');
  const nonce = params['nonce'];
  if (!nonce) return refuse('invalid_request', 'nonce is required');
  const message = await liveMessage(platform, params['lti_message_hint'] ?? '');
  if (!message || message.client_id !== clientId) return refuse('invalid_request', 'lti_message_hint is unknown, used or expired');
  if (params['login_hint'] !== message.sub) return refuse('login_required', 'login_hint does not name the person of this launch');
  // Single use, whichever process answers: of racing authentication requests one deletes the message.
  const taken = await platform.db.run('DELETE FROM lms_messages WHERE hint = ?', [message.hint]);
  if (taken.changes !== 1) return refuse('invalid_request', 'lti_message_hint is unknown, used or expired');

  const idToken = await platform.keys.sign(await launchClaims(platform, registration, message, nonce));
  const fields: Record<string, string> = { id_token: idToken };
  if (params['state'] !== undefined) fields['state'] = params['state'];
  sendFormPost(res, redirectUri, fields, 'Launching');
}

function resolveVariables(template: Record<string, string>, values: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(template)) {
    // An unknown variable is passed through unresolved, as LTI Core §5.4.1 asks.
    out[name] = value.startsWith('$') && values[value] !== undefined ? values[value] : value;
  }
  return out;
}

/** The id_token's claims for one message (LTI Core 1.3 §5.3, AGS §3.1, Deep Linking §4.4). */
async function launchClaims(platform: Platform, registration: RegistrationRow, message: MessageRow, nonce: string): Promise<Record<string, unknown>> {
  const course = await courseOf(platform.db, message.course_id);
  const user = await userOf(platform.db, message.sub);
  if (!course || !user) throw new LmsError(409, 'invalid_request', 'the course or person of this launch is gone');
  const link: ResourceLinkRow | null = message.resource_link_id ? await resourceLinkOf(platform.db, message.resource_link_id) : null;
  const roles = (await enrolmentRoles(platform.db, course.id, user.sub)) ?? [];
  const history = JSON.parse(course.history) as string[];
  const nowS = Math.floor(platform.clock.nowMs() / 1000);
  const settings = await effectiveSettings(platform, message.deployment_id);
  const variables: Record<string, string> = {
    '$Context.id': course.id,
    '$Context.title': course.title,
    '$Context.label': course.label,
    '$Context.id.history': history.join(','),
    '$User.id': user.sub,
    '$Person.name.given': user.given_name,
    '$Person.name.family': user.family_name,
    '$Person.email.primary': user.email,
    ...(link ? { '$ResourceLink.id': link.id, '$ResourceLink.title': link.title } : {}),
    ...platform.profile.extraVariables(history),
  };
  const custom = resolveVariables(
    { ...(JSON.parse(registration.custom_parameters) as Record<string, string>), ...(link ? (JSON.parse(link.custom) as Record<string, string>) : {}) },
    variables,
  );
  const claims: Record<string, unknown> = {
    iss: platform.issuer,
    aud: registration.client_id,
    azp: registration.client_id,
    sub: user.sub,
    iat: nowS,
    exp: nowS + settings.id_token_ttl_seconds,
    nonce,
    name: `${user.given_name} ${user.family_name}`,
    given_name: user.given_name,
    family_name: user.family_name,
    email: user.email,
    [`${LTI_CLAIM}message_type`]: message.kind,
    [`${LTI_CLAIM}version`]: '1.3.0',
    [`${LTI_CLAIM}deployment_id`]: message.deployment_id,
    [`${LTI_CLAIM}target_link_uri`]: message.target_link_uri,
    [`${LTI_CLAIM}roles`]: platform.profile.rolesClaim(roles),
    [`${LTI_CLAIM}context`]: {
      id: course.id,
      // LTI's context label is optional: a course without one sends none.
      ...(course.label !== '' ? { label: course.label } : {}),
      title: course.title,
      type: ['http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering'],
    },
    [`${LTI_CLAIM}tool_platform`]: {
      guid: `${platform.profile.productFamilyCode}:${new URL(platform.issuer).host}`,
      name: platform.profile.platformName,
      product_family_code: platform.profile.productFamilyCode,
      version: '1.0.0',
    },
    [`${LTI_CLAIM}launch_presentation`]: {
      document_target: 'iframe',
      locale: 'en',
      ...(message.return_url ? { return_url: message.return_url } : {}),
    },
    [`${LTI_CLAIM}custom`]: custom,
  };
  Object.assign(claims, platform.profile.extraClaims({ messageType: message.kind, sub: user.sub, courseId: course.id, email: user.email }));
  if (link) claims[`${LTI_CLAIM}resource_link`] = { id: link.id, title: link.title };
  const scopes = scopesIn(settings, askedScopes(registration));
  if (scopes.length > 0) {
    const ags: Record<string, unknown> = { scope: scopes, lineitems: urlOf(platform, platform.profile.lineItemsPath(course.id)) };
    if (link) {
      const items = await platform.db.all<{ id: string }>('SELECT id FROM lms_line_items WHERE resource_link_id = ? ORDER BY seq', [link.id]);
      // The `lineitem` claim names the link's column only when there is exactly one (AGS §3.1).
      if (items.length === 1 && items[0]) ags['lineitem'] = urlOf(platform, platform.profile.lineItemPath(course.id, items[0].id));
    }
    claims[AGS_CLAIM] = ags;
  }
  if (message.kind === 'LtiDeepLinkingRequest') {
    await platform.db.run('INSERT INTO lms_deep_link_requests (data, client_id, deployment_id, course_id, expires) VALUES (?, ?, ?, ?, ?)', [
      message.data,
      message.client_id,
      message.deployment_id,
      course.id,
      platform.clock.nowMs() + 3600_000,
    ]);
    claims[`${DL_CLAIM}deep_linking_settings`] = {
      deep_link_return_url: urlOf(platform, PATHS.deepLinkingReturn),
      accept_types: ['ltiResourceLink'],
      accept_presentation_document_targets: ['iframe', 'window'],
      accept_multiple: true,
      auto_create: true,
      title: course.title,
      data: message.data,
    };
  }
  return claims;
}
