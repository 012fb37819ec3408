/**
 * The Sandbox LMS's controls for one tool (decisions LTI-66 to LTI-69): what an administrator or teacher
 * of a school's LMS does, done on the tool's part of the Sandbox LMS through the LMS's own controls over
 * HTTP (`lms-client.ts`), so that every effect is seen only through real launches.
 */
import { randomBytes } from 'node:crypto';
import type { Services } from '../../http/services.js';
import type { AppRecord } from '../../store/index.js';
import { ensureSandbox } from '../courses.js';
import { SANDBOX_ROLES, trialUserExternalId } from '../trial-people.js';
import { assertSandboxOpen } from '../gate.js';
import type { LmsCourseJson, SandboxLmsClient } from '../lms-client.js';
import { SandboxLmsControlError } from '../lms-client.js';
import { ensureSandboxRegistration, sandboxLmsClient } from '../lms-registration.js';
import type { LmsSandbox } from '../lms-sandbox.js';
import { TRIAL_LIS_ROLES, ensureLmsSandbox, sandboxDeploymentId } from '../lms-sandbox.js';
import { Problem } from '../../http/problem.js';
import { appPrefix, assertCourseOfApp, assertPersonOfApp, assertSchoolOfApp, isSchoolOfApp, message, throughLms } from './scope.js';

export interface LmsColumnView {
  line_item_id: string;
  url: string;
  label: string;
  score_maximum: number;
  refuses_scores_with: number | null;
}

export interface LmsCourseView {
  id: string;
  school: string;
  title: string;
  label: string;
  history: string[];
  enrolments: { sub: string; roles: string[] }[];
  resource_links: { id: string; title: string; custom: Record<string, string>; columns: LmsColumnView[] }[];
}

export interface LmsLifetimes {
  access_token_ttl_seconds: number;
  id_token_ttl_seconds: number;
  launch_ttl_seconds: number;
}

/** The LMS side of each tool's Sandbox made in this process: made once, then only read. */
const madeInProcess = new WeakMap<Services, Map<string, Promise<LmsSandbox>>>();

/** The tool's Sandbox school, trial course and trial people in the LMS, made on first need (LTI-42). */
export async function toolLms(services: Services, app: AppRecord): Promise<{ lms: SandboxLmsClient; sandbox: LmsSandbox }> {
  assertSandboxOpen(app);
  let perApp = madeInProcess.get(services);
  if (!perApp) madeInProcess.set(services, (perApp = new Map()));
  let pending = perApp.get(app.id);
  if (!pending) {
    pending = (async () => {
      const home = await ensureSandbox(services, app.id);
      return ensureLmsSandbox(services, app.id, { title: home.trial.name, label: home.trial.label ?? home.trial.name, schoolTitle: home.school.title });
    })();
    const map = perApp;
    // A need that failed (the LMS was not up) is tried again at the next need, not remembered.
    pending.catch(() => map.delete(app.id));
    perApp.set(app.id, pending);
  }
  return { lms: sandboxLmsClient(services), sandbox: await pending };
}

function newId(appId: string, kind: 'course' | 'user'): string {
  return `${appPrefix(appId)}${kind}-${randomBytes(6).toString('hex')}`;
}

async function courseView(lms: SandboxLmsClient, courseId: string): Promise<LmsCourseView> {
  const [course, book] = await Promise.all([lms.course(courseId), lms.gradebook(courseId)]);
  const columns = new Map(book.columns.map((c) => [c.id, c as typeof c & { refuses_scores_with?: number | null }]));
  return viewOf(course, columns);
}

function viewOf(course: LmsCourseJson, columns: Map<string, { line_item_id: string; refuses_scores_with?: number | null }>): LmsCourseView {
  return {
    id: course.id,
    school: course.deployment_id,
    title: course.title,
    label: course.label,
    history: course.history,
    enrolments: course.enrolments,
    resource_links: course.resource_links.map((link) => ({
      id: link.id,
      title: link.title,
      custom: link.custom,
      columns: link.line_items.map((item) => {
        const column = columns.get(item.id);
        return {
          line_item_id: column?.line_item_id ?? '',
          url: item.id,
          label: item.label,
          score_maximum: item.scoreMaximum,
          refuses_scores_with: column?.refuses_scores_with ?? null,
        };
      }),
    })),
  };
}

const ORDINALS = ['', '', 'Second', 'Third', 'Fourth', 'Fifth', 'Sixth', 'Seventh', 'Eighth', 'Ninth'];

export async function readToolLms(services: Services, app: AppRecord): Promise<{
  issuer: string;
  client_id: string;
  grants_line_item_scope: boolean;
  schools: { deployment_id: string; title: string }[];
  trial_course: string;
  people: string[];
  settings: LmsLifetimes;
}> {
  return throughLms(async () => {
    const { lms, sandbox } = await toolLms(services, app);
    const [registration, settings] = await Promise.all([lms.registration(sandbox.registration.clientId), lms.currentSettings()]);
    return {
      issuer: services.sandboxLms.issuer(),
      client_id: registration.client_id,
      grants_line_item_scope: registration.grants_line_item_scope,
      schools: registration.deployments.filter((d) => isSchoolOfApp(app.id, d.deployment_id)),
      trial_course: sandbox.courseId,
      people: SANDBOX_ROLES.map(trialUserExternalId),
      settings: lifetimesOf(settings),
    };
  });
}

/**
 * Another school (decision LTI-67): deployment `sandbox-<app_id>-<n>` (n from 2) with a course
 * `sandbox-<app_id>-<n>-course` in which the five trial people are enrolled as in the trial course.
 */
export async function createToolSchool(
  services: Services,
  app: AppRecord,
  input: { title?: string; course?: { title: string; label: string } },
): Promise<{ deployment_id: string; title: string; course: LmsCourseView }> {
  return throughLms(async () => {
    const { lms, sandbox } = await toolLms(services, app);
    const numbered = new RegExp(`^${appPrefix(app.id)}(\\d+)$`);
    const registration = await lms.registration(sandbox.registration.clientId);
    let n = Math.max(1, ...registration.deployments.map((d) => Number(numbered.exec(d.deployment_id)?.[1] ?? 0))) + 1;
    const trial = await lms.course(sandbox.courseId);
    // Two requests at once may pick the same number: the LMS's 409 sends the loser to the next one.
    for (let attempt = 0; ; attempt += 1, n += 1) {
      const deploymentId = `${appPrefix(app.id)}${n}`;
      const title = input.title ?? (ORDINALS[n] ? `${ORDINALS[n]} school` : `School ${n}`);
      try {
        await lms.createDeployment(sandbox.registration.clientId, title, deploymentId);
      } catch (err) {
        if (err instanceof SandboxLmsControlError && err.status === 409 && attempt < 10) continue;
        throw err;
      }
      const courseId = `${deploymentId}-course`;
      await lms.createCourse({ id: courseId, deployment_id: deploymentId, title: input.course?.title ?? trial.title, label: input.course?.label ?? trial.label });
      for (const role of SANDBOX_ROLES) await lms.enrol(courseId, trialUserExternalId(role), [TRIAL_LIS_ROLES[role]]);
      return { deployment_id: deploymentId, title, course: await courseView(lms, courseId) };
    }
  });
}

export async function createToolCourse(services: Services, app: AppRecord, input: { school?: string; title: string; label: string }): Promise<LmsCourseView> {
  const school = input.school ?? sandboxDeploymentId(app.id);
  assertSchoolOfApp(app.id, school);
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    const course = await lms.createCourse({ id: newId(app.id, 'course'), deployment_id: school, title: input.title, label: input.label });
    return courseView(lms, course.id);
  });
}

export async function readToolCourse(services: Services, app: AppRecord, courseId: string): Promise<LmsCourseView> {
  assertCourseOfApp(app.id, courseId);
  return throughLms(async () => courseView((await toolLms(services, app)).lms, courseId));
}

/** Rename and re-term: the next launch's `course.name` and `course.label` follow. */
export async function updateToolCourse(services: Services, app: AppRecord, courseId: string, input: { title?: string; label?: string }): Promise<LmsCourseView> {
  assertCourseOfApp(app.id, courseId);
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    await lms.updateCourse(courseId, input);
    return courseView(lms, courseId);
  });
}

export async function copyToolCourse(
  services: Services,
  app: AppRecord,
  courseId: string,
  input: { title?: string; label?: string; with_links?: boolean; with_enrolments?: boolean },
): Promise<LmsCourseView> {
  assertCourseOfApp(app.id, courseId);
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    const copy = await lms.copyCourse(courseId, {
      id: newId(app.id, 'course'),
      ...(input.title !== undefined ? { title: input.title } : {}),
      ...(input.label !== undefined ? { label: input.label } : {}),
      with_links: input.with_links ?? true,
      with_enrolments: input.with_enrolments ?? false,
    });
    return courseView(lms, copy.id);
  });
}

export async function createToolUser(
  services: Services,
  app: AppRecord,
  person: { given_name: string; family_name: string; email: string },
): Promise<{ sub: string; given_name: string; family_name: string; email: string }> {
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    const user = await lms.createUser({ sub: newId(app.id, 'user'), ...person });
    return { sub: user.sub, ...person };
  });
}

export async function enrolInToolCourse(services: Services, app: AppRecord, courseId: string, sub: string, roles: string[] | null): Promise<LmsCourseView> {
  assertCourseOfApp(app.id, courseId);
  assertPersonOfApp(app.id, sub);
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    if (roles === null) await lms.unenrol(courseId, sub);
    else await lms.enrol(courseId, sub, roles);
    return courseView(lms, courseId);
  });
}

/** A resource link bound to no placement, with a gradebook column or none (decision LTI-68). */
export async function addToolLink(
  services: Services,
  app: AppRecord,
  courseId: string,
  input: { title: string; column: { score_maximum: number; label?: string } | null },
): Promise<LmsCourseView> {
  assertCourseOfApp(app.id, courseId);
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    const column = input.column;
    await lms.createLink(courseId, {
      title: input.title,
      custom: {},
      line_item: column === null ? null : { label: column.label ?? input.title, score_maximum: column.score_maximum },
    });
    return courseView(lms, courseId);
  });
}

/** A gradebook that refuses scores for one column of the tool's course. */
export async function refuseScores(services: Services, app: AppRecord, courseId: string, lineItemId: string, status: number | null): Promise<LmsCourseView> {
  assertCourseOfApp(app.id, courseId);
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    const book = await lms.gradebook(courseId);
    if (!book.columns.some((c) => c.line_item_id === lineItemId)) {
      throw new Problem(404, 'sandbox_lms_not_found', message('not_a_column', { id: lineItemId, course_id: courseId }));
    }
    await lms.refuseScores(lineItemId, status);
    return courseView(lms, courseId);
  });
}

export async function launchInToolLms(
  services: Services,
  app: AppRecord,
  input: { sub: string; resource_link_id?: string; course_id?: string },
): Promise<{ url: string; expires: string }> {
  if ((input.resource_link_id === undefined) === (input.course_id === undefined)) throw new Problem(422, 'sandbox_lms_launch_target', message('launch_target'));
  assertPersonOfApp(app.id, input.sub);
  if (input.course_id !== undefined) assertCourseOfApp(app.id, input.course_id);
  return throughLms(async () => {
    const { lms } = await toolLms(services, app);
    if (input.course_id !== undefined) return lms.deepLink(input.course_id, input.sub);
    const linkId = input.resource_link_id ?? '';
    const link = await lms.link(linkId);
    assertCourseOfApp(app.id, link.course_id);
    return lms.launch(linkId, input.sub);
  });
}

function lifetimesOf(settings: Record<string, unknown>): LmsLifetimes {
  return {
    access_token_ttl_seconds: Number(settings['access_token_ttl_seconds']),
    id_token_ttl_seconds: Number(settings['id_token_ttl_seconds']),
    launch_ttl_seconds: Number(settings['launch_ttl_seconds']),
  };
}

/** The LMS's token lifetimes: LMS-wide, so the platform team's (decision LTI-69). */
export async function setLmsLifetimes(services: Services, patch: Partial<LmsLifetimes> | null): Promise<LmsLifetimes> {
  return throughLms(async () => {
    const lms = sandboxLmsClient(services);
    return lifetimesOf(patch === null ? await lms.resetSettings() : await lms.settings(patch));
  });
}

/** The line-item scope of the service's one registration with the Sandbox LMS (decision LTI-69). */
export async function setLmsLineItemScope(services: Services, grants: boolean): Promise<{ client_id: string; grants_line_item_scope: boolean }> {
  return throughLms(async () => {
    const registration = await ensureSandboxRegistration(services);
    const changed = await sandboxLmsClient(services).setLineItemScope(registration.clientId, grants);
    // The next score asks a new token: a cached one keeps the scopes it was issued with (this instance's cache).
    services.publisher.forgetClient?.(registration.tokenUrl, registration.clientId);
    return { client_id: changed.client_id, grants_line_item_scope: changed.grants_line_item_scope };
  });
}
