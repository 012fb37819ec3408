/**
 * The signed launch of a Sandbox placement as data (decision OPS-01), for tool teams' own tests: the same
 * ticket and the same launch-page logic a browser goes through, answered as the form the page would POST
 * instead of the page. Whatever would stop the page answers 409 with the page's words.
 */
import type { operations } from '../../generated/dashboard/types.js';
import { Problem } from '../http/problem.js';
import type { GuardContext, Handlers } from '../http/registry.js';
import { withGuard } from '../http/registry.js';
import { deliverLaunch } from '../launch-page/launch.js';
import { sandboxLaunchTicket } from '../sandbox/index.js';
import { isoFromMs } from '../store/index.js';
import type { AppGuarded } from './guard.js';
import { appGuard } from './guard.js';

type Op = operations['createSandboxSignedLaunch'];

export const SIGNED_LAUNCH_OPERATION_IDS = ['createSandboxSignedLaunch'] as const;

/** The placement is part of the URL: 404 in the guard, before the body is judged (GAP-23). */
async function placementGuard(ctx: GuardContext<Op>): Promise<AppGuarded> {
  const guarded = await appGuard<Op>()(ctx);
  const placement = await ctx.services.store.placements.get(ctx.params.placement_id);
  const context = placement && placement.appId === guarded.app.id ? await ctx.services.store.contexts.get(placement.contextId) : null;
  if (!context || context.sandboxAppId !== guarded.app.id) {
    throw new Problem(404, 'placement_not_found', `placement ${ctx.params.placement_id} is not in the Sandbox of app ${guarded.app.id}`);
  }
  return guarded;
}

export const signedLaunchHandlers: Pick<Handlers<operations>, (typeof SIGNED_LAUNCH_OPERATION_IDS)[number]> = {
  createSandboxSignedLaunch: withGuard(placementGuard, async (ctx) => {
    const { app } = ctx.guarded;
    const placementId = ctx.params.placement_id;
    const ticket = await sandboxLaunchTicket(ctx.services, app, placementId, ctx.body.as);
    const outcome = await deliverLaunch(ctx.services, ticket.ticket, { requestId: ctx.requestId, log: ctx.log });
    if ('page' in outcome) {
      const { page } = outcome;
      // The ticket was issued a moment ago for a placement the guard found, so only the tool's state or
      // the launch's conditions (callback URL, provisioning) can stop it: a conflict, in the page's words.
      throw new Problem(409, `launch_${page.kind}`, page.message ?? `the launch cannot happen now (${page.kind})`);
    }
    const { launch } = outcome;
    ctx.log.info('sandbox signed launch issued', { app: app.id, placement: placementId, as: ctx.body.as });
    return {
      status: 201,
      body: { url: launch.callbackUrl, fields: { launch_data: launch.launchData }, expires: isoFromMs(launch.exp * 1000) },
      headers: { 'Cache-Control': 'no-store' },
    };
  }),
};
