/**
 * The signed launch of a Sandbox placement as data (decisions OPS-01, LTI-90): the trial user's launch
 * through the Sandbox LMS, its OIDC login and the service's id_token validation, as a browser's launch
 * link goes, answered as the form the launch page would POST instead of the page
 * (`server/sandbox/signed-launch.ts`). Whatever would stop the launch answers 409 with the page's words.
 */
import type { operations } from '../../generated/dashboard/types.js';
import type { GuardContext, Handlers } from '../http/registry.js';
import { withGuard } from '../http/registry.js';
import { sandboxPlacement } from '../sandbox/flow.js';
import { signedSandboxLaunch } from '../sandbox/signed-launch.js';
import { isoFromMs } from '../store/index.js';
import type { AppGuarded } from './guard.js';
import { appGuard } from './guard.js';

type Op = operations['createSandboxSignedLaunch'];

export const SIGNED_LAUNCH_OPERATION_IDS = ['createSandboxSignedLaunch'] as const;

/** The placement is part of the URL: 404 in the guard, before the body is judged (GAP-23). */
async function placementGuard(ctx: GuardContext<Op>): Promise<AppGuarded> {
  const guarded = await appGuard<Op>()(ctx);
  await sandboxPlacement(ctx.services, guarded.app, ctx.params.placement_id);
  return guarded;
}

export const signedLaunchHandlers: Pick<Handlers<operations>, (typeof SIGNED_LAUNCH_OPERATION_IDS)[number]> = {
  createSandboxSignedLaunch: withGuard(placementGuard, async (ctx) => {
    const { app } = ctx.guarded;
    const placementId = ctx.params.placement_id;
    const launch = await signedSandboxLaunch(ctx.services, app, placementId, ctx.body.as, { requestId: ctx.requestId, log: ctx.log });
    ctx.log.info('sandbox signed launch issued', { app: app.id, placement: placementId, as: ctx.body.as });
    return {
      status: 201,
      body: { url: launch.callbackUrl, fields: { launch_data: launch.launchData }, expires: isoFromMs(launch.exp * 1000) },
      headers: { 'Cache-Control': 'no-store' },
    };
  }),
};
