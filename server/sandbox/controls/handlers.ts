/**
 * The dashboard operations of the Sandbox LMS's controls (decisions LTI-66 to LTI-69): thin readers of
 * the request around `lms-controls.ts`. The tool's controls take its team's or the platform team's
 * credential, like every Sandbox operation; the LMS-wide ones (token lifetimes, the registration's
 * line-item scope) only the platform team's.
 */
import type { operations } from '../../../generated/dashboard/types.js';
import { recordAction } from '../../audit/index.js';
import { appGuard, dashboardGuard } from '../../dashboard/guard.js';
import type { Handlers } from '../../http/registry.js';
import { withGuard } from '../../http/registry.js';
import {
  addToolLink,
  copyToolCourse,
  createToolCourse,
  createToolSchool,
  createToolUser,
  enrolInToolCourse,
  launchInToolLms,
  readToolCourse,
  readToolLms,
  refuseScores,
  setLmsLifetimes,
  setLmsLineItemScope,
  updateToolCourse,
} from './lms-controls.js';
import { listToolCourses, listToolPeople } from './lists.js';
import { readSchoolSettings, setSchoolSettings } from './school-settings.js';

export type SandboxLmsControlOperationId =
  | 'getSandboxLms'
  | 'createSandboxLmsSchool'
  | 'createSandboxLmsCourse'
  | 'getSandboxLmsCourse'
  | 'updateSandboxLmsCourse'
  | 'copySandboxLmsCourse'
  | 'createSandboxLmsUser'
  | 'putSandboxLmsEnrolment'
  | 'deleteSandboxLmsEnrolment'
  | 'createSandboxLmsLink'
  | 'updateSandboxLmsLineItem'
  | 'createSandboxLmsLaunch'
  | 'updateSandboxLmsSettings'
  | 'resetSandboxLmsSettings'
  | 'updateSandboxLmsRegistration'
  | 'getSandboxLmsSchoolSettings'
  | 'updateSandboxLmsSchoolSettings'
  | 'resetSandboxLmsSchoolSettings'
  | 'listSandboxLmsCourses'
  | 'listSandboxLmsUsers';

export const sandboxLmsControlHandlers: Pick<Handlers<operations>, SandboxLmsControlOperationId> = {
  getSandboxLms: withGuard(appGuard<operations['getSandboxLms']>(), async (ctx) => ({ status: 200, body: await readToolLms(ctx.services, ctx.guarded.app) })),

  createSandboxLmsSchool: withGuard(appGuard<operations['createSandboxLmsSchool']>(), async (ctx) => {
    const { title, course } = ctx.body;
    const school = await createToolSchool(ctx.services, ctx.guarded.app, { ...(title !== undefined ? { title } : {}), ...(course !== undefined ? { course } : {}) });
    ctx.log.info('sandbox lms school made', { app: ctx.guarded.app.id, deployment: school.deployment_id });
    return { status: 201, body: school };
  }),

  createSandboxLmsCourse: withGuard(appGuard<operations['createSandboxLmsCourse']>(), async (ctx) => {
    const { school, title, label } = ctx.body;
    return { status: 201, body: await createToolCourse(ctx.services, ctx.guarded.app, { ...(school !== undefined ? { school } : {}), title, label }) };
  }),

  getSandboxLmsCourse: withGuard(appGuard<operations['getSandboxLmsCourse']>(), async (ctx) => ({
    status: 200,
    body: await readToolCourse(ctx.services, ctx.guarded.app, ctx.params.course_id),
  })),

  updateSandboxLmsCourse: withGuard(appGuard<operations['updateSandboxLmsCourse']>(), async (ctx) => {
    const { title, label } = ctx.body;
    const course = await updateToolCourse(ctx.services, ctx.guarded.app, ctx.params.course_id, { ...(title !== undefined ? { title } : {}), ...(label !== undefined ? { label } : {}) });
    return { status: 200, body: course };
  }),

  copySandboxLmsCourse: withGuard(appGuard<operations['copySandboxLmsCourse']>(), async (ctx) => {
    const { title, label, with_links: withLinks, with_enrolments: withEnrolments } = ctx.body;
    const copy = await copyToolCourse(ctx.services, ctx.guarded.app, ctx.params.course_id, {
      ...(title !== undefined ? { title } : {}),
      ...(label !== undefined ? { label } : {}),
      ...(withLinks !== undefined ? { with_links: withLinks } : {}),
      ...(withEnrolments !== undefined ? { with_enrolments: withEnrolments } : {}),
    });
    return { status: 201, body: copy };
  }),

  createSandboxLmsUser: withGuard(appGuard<operations['createSandboxLmsUser']>(), async (ctx) => ({
    status: 201,
    body: await createToolUser(ctx.services, ctx.guarded.app, ctx.body),
  })),

  putSandboxLmsEnrolment: withGuard(appGuard<operations['putSandboxLmsEnrolment']>(), async (ctx) => ({
    status: 200,
    body: await enrolInToolCourse(ctx.services, ctx.guarded.app, ctx.params.course_id, ctx.params.sub, ctx.body.roles),
  })),

  deleteSandboxLmsEnrolment: withGuard(appGuard<operations['deleteSandboxLmsEnrolment']>(), async (ctx) => ({
    status: 200,
    body: await enrolInToolCourse(ctx.services, ctx.guarded.app, ctx.params.course_id, ctx.params.sub, null),
  })),

  createSandboxLmsLink: withGuard(appGuard<operations['createSandboxLmsLink']>(), async (ctx) => {
    const { title, column } = ctx.body;
    const course = await addToolLink(ctx.services, ctx.guarded.app, ctx.params.course_id, {
      title,
      column: column === null ? null : { score_maximum: column.score_maximum, ...(column.label !== undefined ? { label: column.label } : {}) },
    });
    return { status: 201, body: course };
  }),

  updateSandboxLmsLineItem: withGuard(appGuard<operations['updateSandboxLmsLineItem']>(), async (ctx) => {
    const { course_id: courseId, line_item_id: lineItemId } = ctx.params;
    const course = await refuseScores(ctx.services, ctx.guarded.app, courseId, lineItemId, ctx.body.refuses_scores_with);
    ctx.log.info('sandbox lms column refusal set', { app: ctx.guarded.app.id, course: courseId, line_item: lineItemId, status: ctx.body.refuses_scores_with });
    return { status: 200, body: course };
  }),

  createSandboxLmsLaunch: withGuard(appGuard<operations['createSandboxLmsLaunch']>(), async (ctx) => {
    const { sub, resource_link_id: link, course_id: course } = ctx.body;
    const launch = await launchInToolLms(ctx.services, ctx.guarded.app, { sub, ...(link !== undefined ? { resource_link_id: link } : {}), ...(course !== undefined ? { course_id: course } : {}) });
    return { status: 201, body: launch, headers: { 'Cache-Control': 'no-store' } };
  }),

  updateSandboxLmsSettings: withGuard(dashboardGuard<operations['updateSandboxLmsSettings']>('platform'), async (ctx) => {
    const settings = await setLmsLifetimes(ctx.services, ctx.body);
    await recordAction(ctx.services.store, ctx.guarded, { action: 'sandbox_lms.settings', target: null, detail: { ...settings } });
    return { status: 200, body: settings };
  }),

  resetSandboxLmsSettings: withGuard(dashboardGuard<operations['resetSandboxLmsSettings']>('platform'), async (ctx) => {
    const settings = await setLmsLifetimes(ctx.services, null);
    await recordAction(ctx.services.store, ctx.guarded, { action: 'sandbox_lms.settings', target: null, detail: { ...settings } });
    return { status: 200, body: settings };
  }),

  updateSandboxLmsRegistration: withGuard(dashboardGuard<operations['updateSandboxLmsRegistration']>('platform'), async (ctx) => {
    const registration = await setLmsLineItemScope(ctx.services, ctx.body.grants_line_item_scope);
    await recordAction(ctx.services.store, ctx.guarded, {
      action: 'sandbox_lms.registration',
      target: registration.client_id,
      detail: { grants_line_item_scope: registration.grants_line_item_scope },
    });
    return { status: 200, body: registration };
  }),

  getSandboxLmsSchoolSettings: withGuard(appGuard<operations['getSandboxLmsSchoolSettings']>(), async (ctx) => ({
    status: 200,
    body: await readSchoolSettings(ctx.services, ctx.guarded.app),
  })),

  updateSandboxLmsSchoolSettings: withGuard(appGuard<operations['updateSandboxLmsSchoolSettings']>(), async (ctx) => {
    const settings = await setSchoolSettings(ctx.services, ctx.guarded.app, ctx.body);
    ctx.log.info('sandbox lms school settings set', { app: ctx.guarded.app.id, own: settings.own });
    return { status: 200, body: settings };
  }),

  resetSandboxLmsSchoolSettings: withGuard(appGuard<operations['resetSandboxLmsSchoolSettings']>(), async (ctx) => {
    const settings = await setSchoolSettings(ctx.services, ctx.guarded.app, null);
    ctx.log.info('sandbox lms school settings reset', { app: ctx.guarded.app.id });
    return { status: 200, body: settings };
  }),

  listSandboxLmsCourses: withGuard(appGuard<operations['listSandboxLmsCourses']>(), async (ctx) => ({
    status: 200,
    body: await listToolCourses(ctx.services, ctx.guarded.app, ctx.req),
  })),

  listSandboxLmsUsers: withGuard(appGuard<operations['listSandboxLmsUsers']>(), async (ctx) => ({
    status: 200,
    body: await listToolPeople(ctx.services, ctx.guarded.app, ctx.req),
  })),
};
