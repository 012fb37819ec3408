/**
 * The Sandbox operations (tag Sandbox): thin readers of the request around `server/sandbox/`, which does
 * the work on the real picker, placements, provisioning, launch tickets and gradebook.
 */
import type { operations } from '../../generated/dashboard/types.js';
import { recordAction } from '../audit/index.js';
import { Problem } from '../http/problem.js';
import type { GuardContext, Handlers } from '../http/registry.js';
import { withGuard } from '../http/registry.js';
import {
  assertSandboxOpen,
  copySandboxCourse,
  listSandboxPlacements,
  openSandboxPicker,
  placeInSandbox,
  readSandbox,
  readSandboxGrades,
  resetSandbox,
  sandboxContext,
  sandboxCourseJson,
  sandboxLaunch,
  setSandboxLineItemScope,
} from '../sandbox/index.js';
import type { AppGuarded } from './guard.js';
import { appGuard } from './guard.js';
import { queryString } from './lists.js';

export const SANDBOX_OPERATION_IDS = [
  'getSandbox',
  'putSandboxSchool',
  'openSandboxPicker',
  'listSandboxPlacements',
  'createSandboxPlacement',
  'createSandboxLaunch',
  'createSandboxCopy',
  'resetSandbox',
  'getSandboxGradebook',
] as const;

export type SandboxOperationId = (typeof SANDBOX_OPERATION_IDS)[number];

/** The placement is part of the URL: 404 in the guard, before the validator judges the body (GAP-23). */
async function sandboxPlacementGuard(ctx: GuardContext<operations['createSandboxLaunch']>): Promise<AppGuarded> {
  const guarded = await appGuard<operations['createSandboxLaunch']>()(ctx);
  const { app } = guarded;
  const placementId = ctx.params.placement_id;
  const placement = await ctx.services.store.placements.get(placementId);
  const context = placement && placement.appId === app.id ? await ctx.services.store.contexts.get(placement.contextId) : null;
  if (!context || context.sandboxAppId !== app.id) {
    throw new Problem(404, 'placement_not_found', `placement ${placementId} is not in the Sandbox of app ${app.id}`);
  }
  return guarded;
}

export const sandboxHandlers: Pick<Handlers<operations>, SandboxOperationId> = {
  getSandbox: withGuard(appGuard<operations['getSandbox']>(), async (ctx) => {
    assertSandboxOpen(ctx.guarded.app);
    return { status: 200, body: await readSandbox(ctx.services, ctx.guarded.app) };
  }),

  putSandboxSchool: withGuard(appGuard<operations['putSandboxSchool']>(), async (ctx) => {
    const grants = ctx.body.grants_line_item_scope;
    const app = ctx.guarded.app;
    assertSandboxOpen(app);
    const school = await setSandboxLineItemScope(ctx.services, app, grants);
    ctx.log.info('sandbox school changed', { app: app.id, grants_line_item_scope: school.grants_line_item_scope });
    return { status: 200, body: school };
  }),

  openSandboxPicker: withGuard(appGuard<operations['openSandboxPicker']>(), async (ctx) => {
    const picker = await openSandboxPicker(ctx.services, ctx.guarded.app, ctx.body?.context_id);
    return { status: 200, body: picker };
  }),

  listSandboxPlacements: withGuard(appGuard<operations['listSandboxPlacements']>(), async (ctx) => {
    const app = ctx.guarded.app;
    const placements = await listSandboxPlacements(ctx.services, app, queryString(ctx.req, 'context_id'));
    return { status: 200, body: { placements } };
  }),

  createSandboxPlacement: withGuard(appGuard<operations['createSandboxPlacement']>(), async (ctx) => {
    const { extid, label, context_id: contextId } = ctx.body;
    const app = ctx.guarded.app;
    const placement = await placeInSandbox(ctx.services, app, {
      extid,
      ...(label !== undefined ? { label } : {}),
      ...(contextId !== undefined ? { contextId } : {}),
    });
    ctx.log.info('sandbox placement made', { app: app.id, placement: placement.id, provisioning: placement.provisioning });
    return {
      status: 201,
      body: placement,
      headers: { Location: `/dashboard/v1/apps/${app.id}/sandbox/placements?context_id=${encodeURIComponent(placement.context_id)}` },
    };
  }),

  createSandboxLaunch: withGuard(sandboxPlacementGuard, async (ctx) => {
    const { app } = ctx.guarded;
    const placementId = ctx.params.placement_id;
    const role = ctx.body.as;
    const link = await sandboxLaunch(ctx.services, app, placementId, role);
    ctx.log.info('sandbox launch link issued', { app: app.id, placement: placementId, as: role });
    return { status: 201, body: { launch_url: link.launchUrl, expires: link.expires }, headers: { 'Cache-Control': 'no-store' } };
  }),

  createSandboxCopy: withGuard(appGuard<operations['createSandboxCopy']>(), async (ctx) => {
    const app = ctx.guarded.app;
    const course = ctx.body?.course;
    const parent = ctx.body?.parent_context;
    await sandboxContext(ctx.services, app, parent);
    assertSandboxOpen(app);
    const copy = await copySandboxCourse(ctx.services, app, {
      ...(parent !== undefined ? { parentContextId: parent } : {}),
      ...(course !== undefined ? { course } : {}),
    });
    ctx.log.info('sandbox course copied', { app: app.id, context: copy.id, parent: copy.parentContextId });
    return { status: 201, body: await sandboxCourseJson(ctx.services, app, copy) };
  }),

  resetSandbox: withGuard(appGuard<operations['resetSandbox']>(), async (ctx) => {
    assertSandboxOpen(ctx.guarded.app);
    await resetSandbox(ctx.services, ctx.guarded.app);
    await recordAction(ctx.services.store, ctx.guarded, { action: 'sandbox.reset', target: ctx.guarded.app.id, appId: ctx.guarded.app.id });
    return { status: 204 };
  }),

  getSandboxGradebook: withGuard(appGuard<operations['getSandboxGradebook']>(), async (ctx) => {
    const app = ctx.guarded.app;
    return { status: 200, body: await readSandboxGrades(ctx.services, app, queryString(ctx.req, 'context_id')) };
  }),
};
