/**
 * The Sandbox operations (tag Sandbox): thin readers of the request around `server/sandbox/`, which does
 * the work on the real picker, placements, provisioning, launch tickets and gradebook.
 */
import type { operations } from '../../generated/dashboard/types.js';
import { Problem } from '../http/problem.js';
import type { Handlers } from '../http/registry.js';
import { withGuard } from '../http/registry.js';
import type { SandboxRole } from '../sandbox/index.js';
import {
  assertSandboxOpen,
  copySandboxCourse,
  ensureSandbox,
  listSandboxPlacements,
  openSandboxPicker,
  placeInSandbox,
  readSandbox,
  readSandboxGrades,
  resetSandbox,
  SANDBOX_ROLES,
  sandboxContext,
  sandboxCourseJson,
  sandboxLaunchTicket,
} from '../sandbox/index.js';
import { setSandboxSchoolGrantsLineItemScope } from '../sandbox-lms/school.js';
import type { JsonObject } from './bodies.js';
import { enumField, ID_PATTERN, objectBody, refuseUnknown, textField, unprocessable } from './bodies.js';
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

/** A course ID from a body or the query; one that no ID can be names no Sandbox course. */
function contextIdOf(value: unknown, appId: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) {
    throw new Problem(404, 'sandbox_context_not_found', `context ${String(value)} is not a Sandbox course of app ${appId}`);
  }
  return value;
}

function copyCourse(input: JsonObject): { name: string; label?: string | null } | undefined {
  if (!('course' in input)) return undefined;
  const course = input['course'];
  if (typeof course !== 'object' || course === null || Array.isArray(course)) throw unprocessable('invalid_type', 'course must be an object');
  const fields = course as JsonObject;
  refuseUnknown(fields, ['name', 'label'], 'course.');
  const name = textField(fields, 'name', { required: true, max: 200, label: 'course.name' }) as string;
  if (!('label' in fields)) return { name };
  const label = fields['label'];
  if (label !== null && (typeof label !== 'string' || [...label].length > 200)) {
    throw unprocessable('invalid_type', 'course.label must be a string of at most 200 characters or null');
  }
  return { name, label: label as string | null };
}

export const sandboxHandlers: Pick<Handlers<operations>, SandboxOperationId> = {
  getSandbox: withGuard(appGuard<operations['getSandbox']>(), async (ctx) => {
    assertSandboxOpen(ctx.guarded.app);
    return { status: 200, body: await readSandbox(ctx.services, ctx.guarded.app) };
  }),

  putSandboxSchool: withGuard(appGuard<operations['putSandboxSchool']>(), async (ctx) => {
    const input = objectBody(ctx.body);
    refuseUnknown(input, ['grants_line_item_scope']);
    const grants = input['grants_line_item_scope'];
    if (typeof grants !== 'boolean') throw unprocessable('invalid_type', 'grants_line_item_scope must be a boolean');
    const app = ctx.guarded.app;
    assertSandboxOpen(app);
    await ensureSandbox(ctx.services, app.id);
    const school = await setSandboxSchoolGrantsLineItemScope(ctx.services.store, app.id, ctx.services.config.publicUrl, grants);
    ctx.log.info('sandbox school changed', { app: app.id, grants_line_item_scope: school.grants_line_item_scope });
    return { status: 200, body: school };
  }),

  openSandboxPicker: withGuard(appGuard<operations['openSandboxPicker']>(), async (ctx) => {
    const input = objectBody(ctx.body, { optional: true });
    refuseUnknown(input, ['context_id']);
    const app = ctx.guarded.app;
    const picker = await openSandboxPicker(ctx.services, app, contextIdOf(input['context_id'], app.id));
    return { status: 200, body: picker };
  }),

  listSandboxPlacements: withGuard(appGuard<operations['listSandboxPlacements']>(), async (ctx) => {
    const app = ctx.guarded.app;
    const placements = await listSandboxPlacements(ctx.services, app, contextIdOf(queryString(ctx.req, 'context_id'), app.id));
    return { status: 200, body: { placements } };
  }),

  createSandboxPlacement: withGuard(appGuard<operations['createSandboxPlacement']>(), async (ctx) => {
    const input = objectBody(ctx.body);
    refuseUnknown(input, ['extid', 'label', 'context_id']);
    const extid = textField(input, 'extid', { required: true, max: 128 }) as string;
    const label = textField(input, 'label', { required: false, max: 200 });
    const app = ctx.guarded.app;
    const placement = await placeInSandbox(ctx.services, app, {
      extid,
      ...(label !== undefined ? { label } : {}),
      ...(input['context_id'] !== undefined ? { contextId: contextIdOf(input['context_id'], app.id) as string } : {}),
    });
    ctx.log.info('sandbox placement made', { app: app.id, placement: placement.id, provisioning: placement.provisioning });
    return {
      status: 201,
      body: placement,
      headers: { Location: `/dashboard/v1/apps/${app.id}/sandbox/placements?context_id=${encodeURIComponent(placement.context_id)}` },
    };
  }),

  createSandboxLaunch: withGuard(appGuard<operations['createSandboxLaunch']>(), async (ctx) => {
    const app = ctx.guarded.app;
    const placementId = ctx.params.placement_id;
    // The placement is part of the URL: 404 before the body is judged (GAP-23).
    const placement = await ctx.services.store.placements.get(placementId);
    const context = placement && placement.appId === app.id ? await ctx.services.store.contexts.get(placement.contextId) : null;
    if (!context || context.sandboxAppId !== app.id) {
      throw new Problem(404, 'placement_not_found', `placement ${placementId} is not in the Sandbox of app ${app.id}`);
    }
    const input = objectBody(ctx.body);
    refuseUnknown(input, ['as']);
    const role = enumField(input, 'as', SANDBOX_ROLES, { required: true }) as SandboxRole;
    const ticket = await sandboxLaunchTicket(ctx.services, app, placementId, role);
    ctx.log.info('sandbox launch ticket issued', { app: app.id, placement: placementId, as: role });
    return { status: 201, body: { launch_url: ticket.launchUrl, expires: ticket.expires }, headers: { 'Cache-Control': 'no-store' } };
  }),

  createSandboxCopy: withGuard(appGuard<operations['createSandboxCopy']>(), async (ctx) => {
    const input = objectBody(ctx.body, { optional: true });
    refuseUnknown(input, ['parent_context', 'course']);
    const app = ctx.guarded.app;
    const course = copyCourse(input);
    const parent = contextIdOf(input['parent_context'], app.id);
    await sandboxContext(ctx.services, app, parent);
    assertSandboxOpen(app);
    const copy = await copySandboxCourse(ctx.services, app, {
      ...(parent !== undefined ? { parentContextId: parent } : {}),
      ...(course !== undefined ? { course } : {}),
    });
    const { school } = await ensureSandbox(ctx.services, app.id);
    ctx.log.info('sandbox course copied', { app: app.id, context: copy.id, parent: copy.parentContextId });
    return { status: 201, body: await sandboxCourseJson(ctx.services, app, school, copy) };
  }),

  resetSandbox: withGuard(appGuard<operations['resetSandbox']>(), async (ctx) => {
    assertSandboxOpen(ctx.guarded.app);
    await resetSandbox(ctx.services, ctx.guarded.app);
    return { status: 204 };
  }),

  getSandboxGradebook: withGuard(appGuard<operations['getSandboxGradebook']>(), async (ctx) => {
    const app = ctx.guarded.app;
    return { status: 200, body: await readSandboxGrades(ctx.services, app, contextIdOf(queryString(ctx.req, 'context_id'), app.id)) };
  }),
};
