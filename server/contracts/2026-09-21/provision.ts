/**
 * The tool's provision PUTs (decisions L-04, NS-09, GAP-02): 204, idempotent, body empty or a JSON
 * object that is ignored. Only the provision token of a request that named the level may call them.
 */
import type { operations } from '../../../generated/2026-09-21/types.js';
import { locationInContext, toolInContext } from '../../auth/permissions.js';
import type { Principal } from '../../auth/principal.js';
import { Problem } from '../../http/problem.js';
import type { Guard, Handlers } from '../../http/registry.js';
import { withGuard } from '../../http/registry.js';
import type { ProvisioningLevel } from '../../store/index.js';

type ProvisionParams = { context_id: string; app_id: string; location_id?: string };

export const PROVISION_MESSAGES = {
  noApp: (contextId: string, appId: string) => `context ${contextId} has no app ${appId}`,
  noLocation: (contextId: string, appId: string, locationId: string) =>
    `context ${contextId} has no location ${locationId} of app ${appId}`,
  forbiddenContext: (contextId: string) => `this token may not provision context ${contextId}`,
  forbiddenLocation: (locationId: string) => `this token may not provision location ${locationId}`,
} as const;

function tokenAppId(principal: Principal): string | null {
  return principal.kind === 'session' || principal.kind === 'provision' ? principal.token.appId : null;
}

/** 404 for a level that does not exist for the tool (another tool's token sees every level as absent); 403 unless named. */
function provisionGuard<Op>(level: 'context' | 'location'): Guard<Op, ProvisioningLevel> {
  return async (ctx) => {
    const params = ctx.params as unknown as ProvisionParams;
    const { context_id: contextId, app_id: appId } = params;
    const store = ctx.services.store;
    if (tokenAppId(ctx.principal) !== appId || !(await toolInContext(store, ctx.principal, appId, contextId))) {
      throw new Problem(404, 'level_not_found', PROVISION_MESSAGES.noApp(contextId, appId));
    }
    const locationId = params.location_id ?? '';
    if (level === 'location' && !(await locationInContext(store, ctx.principal, appId, contextId, locationId))) {
      throw new Problem(404, 'level_not_found', PROVISION_MESSAGES.noLocation(contextId, appId, locationId));
    }
    const p = ctx.principal;
    const named =
      p.kind === 'provision' &&
      p.token.contextId === contextId &&
      p.token.provisionLevels.includes(level) &&
      (level === 'context' || p.token.locationId === locationId);
    if (!named) {
      throw level === 'context'
        ? new Problem(403, 'provision_not_allowed', PROVISION_MESSAGES.forbiddenContext(contextId))
        : new Problem(403, 'provision_not_allowed', PROVISION_MESSAGES.forbiddenLocation(locationId));
    }
    return level === 'context' ? { appId, contextId } : { appId, contextId, locationId };
  };
}

export const provisionHandlers: Pick<Handlers<operations>, 'provisionContext' | 'provisionLocation'> = {
  provisionContext: withGuard(provisionGuard<operations['provisionContext']>('context'), async (ctx) => {
    await ctx.services.store.provisioning.markProvisioned(ctx.guarded);
    ctx.log.info('level provisioned', { provisioning_level: 'context', context: ctx.guarded.contextId });
    return { status: 204 };
  }),
  provisionLocation: withGuard(provisionGuard<operations['provisionLocation']>('location'), async (ctx) => {
    await ctx.services.store.provisioning.markProvisioned(ctx.guarded);
    ctx.log.info('level provisioned', { provisioning_level: 'location', context: ctx.guarded.contextId, location: ctx.guarded.locationId });
    return { status: 204 };
  }),
};
