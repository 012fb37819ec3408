/**
 * The platform team's LMS registrations in the dashboard API (tag LMS registrations; decisions LTI-06,
 * LTI-07): list, show, add by hand, activate, deactivate. Registered in `server/dashboard/mount.ts`.
 */
import type { components, operations } from '../../generated/dashboard/types.js';
import { Problem } from '../http/problem.js';
import type { Handlers } from '../http/registry.js';
import { withGuard } from '../http/registry.js';
import { dashboardGuard } from '../dashboard/guard.js';
import type { LtiRegistrationRecord } from '../store/index.js';
import { isoFromMs } from '../store/index.js';
import { registerManually } from './registration.js';

type RegistrationJson = components['schemas']['LmsRegistration'];

export const LMS_REGISTRATION_OPERATION_IDS = [
  'listLmsRegistrations',
  'addLmsRegistration',
  'getLmsRegistration',
  'activateLmsRegistration',
  'deactivateLmsRegistration',
] as const;

type LmsRegistrationOperationId = (typeof LMS_REGISTRATION_OPERATION_IDS)[number];

export function registrationJson(r: LtiRegistrationRecord): RegistrationJson {
  return {
    id: r.id,
    issuer: r.issuer,
    client_id: r.clientId,
    deployments: r.deployments,
    auth_url: r.authUrl,
    token_url: r.tokenUrl,
    jwks_url: r.jwksUrl,
    token_audience: r.tokenAudience,
    title: r.title,
    product_family_code: r.productFamilyCode,
    scopes: r.scopes,
    status: r.status,
    method: r.method,
    created: isoFromMs(r.createdAt),
    updated: isoFromMs(r.updatedAt),
  };
}

function notFound(id: string): Problem {
  return new Problem(404, 'lms_registration_not_found', `lms registration ${id} not found`);
}

export const lmsRegistrationHandlers: Handlers<Pick<operations, LmsRegistrationOperationId>> = {
  listLmsRegistrations: withGuard(dashboardGuard<operations['listLmsRegistrations']>('platform'), async (ctx) => ({
    status: 200,
    body: { registrations: (await ctx.services.store.lti.listRegistrations()).map(registrationJson) },
  })),

  getLmsRegistration: withGuard(dashboardGuard<operations['getLmsRegistration']>('platform'), async (ctx) => {
    const found = await ctx.services.store.lti.getRegistration(ctx.params.registration_id);
    if (!found) throw notFound(ctx.params.registration_id);
    return { status: 200, body: registrationJson(found) };
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
    return { status: saved.created ? 201 : 200, body: registrationJson(saved.registration) };
  }),

  activateLmsRegistration: withGuard(dashboardGuard<operations['activateLmsRegistration']>('platform'), async (ctx) => {
    const updated = await ctx.services.store.lti.setStatus(ctx.params.registration_id, 'active');
    if (!updated) throw notFound(ctx.params.registration_id);
    ctx.log.info('lms registration activated', { registration: updated.id });
    return { status: 200, body: registrationJson(updated) };
  }),

  deactivateLmsRegistration: withGuard(dashboardGuard<operations['deactivateLmsRegistration']>('platform'), async (ctx) => {
    const updated = await ctx.services.store.lti.setStatus(ctx.params.registration_id, 'inactive');
    if (!updated) throw notFound(ctx.params.registration_id);
    ctx.log.info('lms registration deactivated', { registration: updated.id });
    return { status: 200, body: registrationJson(updated) };
  }),
};
