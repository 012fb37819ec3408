/**
 * The platform team's LMS registrations in the dashboard API (tag LMS registrations; decisions LTI-06,
 * LTI-07): list, show, add by hand, activate, deactivate; the Sandbox's own registration apart (LTI-100);
 * the refusals kept per registration and by report ID (LTI-126). Registered in `server/dashboard/mount.ts`.
 */
import { responses, schemas } from '../../generated/dashboard/schemas.js';
import type { components, operations } from '../../generated/dashboard/types.js';
import type { Services } from '../http/services.js';
import { Problem } from '../http/problem.js';
import type { Handlers } from '../http/registry.js';
import { withGuard } from '../http/registry.js';
import { dashboardGuard } from '../dashboard/guard.js';
import type { LtiRefusalRecord, LtiRegistrationRecord } from '../store/index.js';
import { isoFromMs } from '../store/index.js';
import { createsLineItems, grantsScores } from './line-items.js';
import { registerManually } from './registration.js';
import { fillMessage } from '../../rules/messages.js';

type RegistrationJson = components['schemas']['LmsRegistration'];
type RefusalJson = components['schemas']['LmsRefusal'];

const GRADES_MESSAGES = schemas.LmsGrades['x-messages'];

/** Whether grades reach the LMS, and why not (LTI-121), in the spec's words. */
export function gradesJson(r: Pick<LtiRegistrationRecord, 'scopes'>): RegistrationJson['grades'] {
  const publishable = grantsScores(r);
  const creates = createsLineItems(r);
  return {
    publishable,
    creates_line_items: creates,
    explanation: !publishable ? GRADES_MESSAGES.no_score_scope : creates ? GRADES_MESSAGES.all_granted : GRADES_MESSAGES.no_line_item_scope,
  };
}

export function refusalJson(r: LtiRefusalRecord): RefusalJson {
  return {
    report_id: r.reportId,
    registration_id: r.registrationId,
    issuer: r.issuer,
    client_id: r.clientId,
    deployment_id: r.deploymentId,
    message: r.message,
    code: r.code,
    status: r.status,
    reason: r.reason,
    advice: r.advice,
    detail: r.detail,
    created: isoFromMs(r.createdAt),
  };
}

export const LMS_REGISTRATION_OPERATION_IDS = [
  'listLmsRegistrations',
  'addLmsRegistration',
  'getLmsRegistration',
  'activateLmsRegistration',
  'deactivateLmsRegistration',
  'listLmsRefusals',
  'getLmsRefusal',
] as const;

type LmsRegistrationOperationId = (typeof LMS_REGISTRATION_OPERATION_IDS)[number];

/**
 * The Sandbox's own registration is told by its issuer, `{PUBLIC_URL}/lms` (decision LTI-100): an issuer under
 * the service's own origin, which no school's LMS can have, and the same in a store made before this rule, so
 * no stored name is trusted (it was the reference LMS's product family code, as `npm run lms` registers).
 */
export function isSandboxRegistration(r: Pick<LtiRegistrationRecord, 'issuer'>, services: Pick<Services, 'sandboxLms'>): boolean {
  return r.issuer === services.sandboxLms.issuer();
}

export function registrationJson(r: LtiRegistrationRecord, services: Pick<Services, 'sandboxLms'>): RegistrationJson {
  const sandbox = isSandboxRegistration(r, services);
  return {
    id: r.id,
    issuer: r.issuer,
    client_id: r.clientId,
    deployments: r.deployments,
    auth_url: r.authUrl,
    token_url: r.tokenUrl,
    jwks_url: r.jwksUrl,
    token_audience: r.tokenAudience,
    title: sandbox ? schemas.LmsRegistration['x-messages'].sandbox_title : r.title,
    product_family_code: r.productFamilyCode,
    scopes: r.scopes,
    grades: gradesJson(r),
    status: r.status,
    method: r.method,
    sandbox,
    created: isoFromMs(r.createdAt),
    updated: isoFromMs(r.updatedAt),
  };
}

function notFound(id: string): Problem {
  return new Problem(404, 'lms_registration_not_found', `lms registration ${id} not found`);
}

export const lmsRegistrationHandlers: Handlers<Pick<operations, LmsRegistrationOperationId>> = {
  listLmsRegistrations: withGuard(dashboardGuard<operations['listLmsRegistrations']>('platform'), async (ctx) => {
    const all = (await ctx.services.store.lti.listRegistrations()).map((r) => registrationJson(r, ctx.services));
    // Shown apart (LTI-100). One at most: the Sandbox LMS's store keeps one registration of the service, and
    // one of an earlier client it lost is inactive (LTI-41); the active one, else the newest, is shown.
    const own = all.filter((r) => r.sandbox);
    const sandbox = own.find((r) => r.status === 'active') ?? own.at(-1) ?? null;
    return { status: 200, body: { registrations: all.filter((r) => !r.sandbox), sandbox } };
  }),

  getLmsRegistration: withGuard(dashboardGuard<operations['getLmsRegistration']>('platform'), async (ctx) => {
    const found = await ctx.services.store.lti.getRegistration(ctx.params.registration_id);
    if (!found) throw notFound(ctx.params.registration_id);
    return { status: 200, body: registrationJson(found, ctx.services) };
  }),

  addLmsRegistration: withGuard(dashboardGuard<operations['addLmsRegistration']>('platform'), async (ctx) => {
    const body = ctx.body;
    const saved = await registerManually(
      { store: ctx.services.store, config: ctx.services.config, lms: ctx.services.lti.lms },
      {
        issuer: body.issuer,
        clientId: body.client_id,
        deployments: body.deployments,
        authUrl: body.auth_url,
        tokenUrl: body.token_url,
        jwksUrl: body.jwks_url,
        ...(body.token_audience !== undefined ? { tokenAudience: body.token_audience } : {}),
        ...(body.title !== undefined ? { title: body.title } : {}),
        ...(body.scopes !== undefined ? { scopes: body.scopes } : {}),
      },
    );
    if (!saved.ok) throw new Problem(422, 'invalid_field', saved.message);
    ctx.log.info('lms registration stored by hand', { registration: saved.registration.id, created: saved.created });
    return { status: saved.created ? 201 : 200, body: registrationJson(saved.registration, ctx.services) };
  }),

  activateLmsRegistration: withGuard(dashboardGuard<operations['activateLmsRegistration']>('platform'), async (ctx) => {
    const updated = await ctx.services.store.lti.setStatus(ctx.params.registration_id, 'active');
    if (!updated) throw notFound(ctx.params.registration_id);
    ctx.log.info('lms registration activated', { registration: updated.id });
    return { status: 200, body: registrationJson(updated, ctx.services) };
  }),

  deactivateLmsRegistration: withGuard(dashboardGuard<operations['deactivateLmsRegistration']>('platform'), async (ctx) => {
    const found = await ctx.services.store.lti.getRegistration(ctx.params.registration_id);
    if (!found) throw notFound(ctx.params.registration_id);
    // Every Sandbox launch and score goes through it, and this process keeps using the one it found (LTI-44, LTI-100).
    if (isSandboxRegistration(found, ctx.services)) {
      throw new Problem(409, 'sandbox_lms_registration', responses.SandboxLmsRegistrationKept['x-messages'].deactivate);
    }
    const updated = await ctx.services.store.lti.setStatus(found.id, 'inactive');
    if (!updated) throw notFound(ctx.params.registration_id);
    ctx.log.info('lms registration deactivated', { registration: updated.id });
    return { status: 200, body: registrationJson(updated, ctx.services) };
  }),

  listLmsRefusals: withGuard(dashboardGuard<operations['listLmsRefusals']>('platform'), async (ctx) => {
    const found = await ctx.services.store.lti.getRegistration(ctx.params.registration_id);
    if (!found) throw notFound(ctx.params.registration_id);
    return { status: 200, body: { refusals: (await ctx.services.store.ltiRefusals.listForRegistration(found.id)).map(refusalJson) } };
  }),

  getLmsRefusal: withGuard(dashboardGuard<operations['getLmsRefusal']>('platform'), async (ctx) => {
    const found = await ctx.services.store.ltiRefusals.get(ctx.params.report_id);
    if (!found) {
      throw new Problem(404, 'lms_refusal_not_found', fillMessage(responses.LmsRefusalNotFound['x-messages'].not_found, { report_id: ctx.params.report_id }));
    }
    return { status: 200, body: refusalJson(found) };
  }),
};
