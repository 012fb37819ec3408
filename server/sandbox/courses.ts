/**
 * The Sandbox courses of a tool (decisions GAP-24, GAP-38, S-11): the private trial course, made on first
 * need in the tool's own Sandbox school, and its copies, each with the same five trial users (one per
 * role the contract names, two students) under memberships of its own.
 *
 * The trial course is found by a fixed LMS course ID inside the tool's Sandbox school, so two requests
 * racing to make it end with one course: the loser's insert breaks the unique (school, course ID) index
 * and it reads the winner's course. Course, users and memberships are written in one transaction, so a
 * course never exists without its trial users.
 */
import type { components } from '../../generated/dashboard/types.js';
import type { Services } from '../http/services.js';
import { Problem } from '../http/problem.js';
import type { AppRecord, ContextRecord, MemberGroup, OrganizationRecord, Repositories, UserRecord } from '../store/index.js';
import { isoFromMs, UniqueViolationError } from '../store/index.js';
import { ensureLmsCopy, sandboxCopyCourseId, withLms } from './lms-courses.js';
import { ensureSandboxRegistration } from './lms-registration.js';
import { moveOlderSandboxCourses } from './older-courses.js';
import type { LmsSandbox } from './lms-sandbox.js';
import { ensureLmsSandbox, sandboxDeploymentId, sandboxTrialCourseId } from './lms-sandbox.js';
import { SANDBOX_ROLES, TRIAL_PEOPLE, trialUserExternalId } from './trial-people.js';
import type { SandboxRole } from './trial-people.js';

export type SandboxUserJson = components['schemas']['SandboxUser'];
export type SandboxUsersJson = components['schemas']['SandboxUsers'];
export type SandboxCourseJson = components['schemas']['SandboxCourse'];

export const TRIAL_COURSE_NAME = 'Sandbox course';
/** The trial course's code: `SANDBOX-` + the term it was made in (`2026F`), so a copy can move to the next term. */
export function trialCourseLabel(nowMs: number): string {
  const date = new Date(nowMs);
  return `SANDBOX-${date.getUTCFullYear()}${date.getUTCMonth() < 6 ? 'S' : 'F'}`;
}
export const SANDBOX_SCHOOL_TITLE = 'Sandbox School';

async function enrolTrialUsers(tx: Repositories, school: OrganizationRecord, context: ContextRecord): Promise<void> {
  for (const role of SANDBOX_ROLES) {
    const person = TRIAL_PEOPLE[role];
    const user = await tx.users.upsert({
      organizationId: school.id,
      externalId: trialUserExternalId(role),
      givenName: person.givenName,
      familyName: person.familyName,
      fullName: `${person.givenName} ${person.familyName}`,
      email: person.email,
    });
    await tx.members.upsert({ contextId: context.id, userId: user.id, groups: person.groups });
  }
}

export interface SandboxHome {
  /** The deployment `sandbox-<app_id>` of the service's registration with its Sandbox LMS (LTI-44). */
  school: OrganizationRecord;
  /** The service's context of the LMS course `sandbox-<app_id>-trial`. */
  trial: ContextRecord;
  lms: LmsSandbox;
}

/**
 * The tool's Sandbox school and trial course, made on first need (decision LTI-44): the school is the
 * deployment `sandbox-<app_id>` of the service's registration with its Sandbox LMS, exactly the school an
 * LMS launch into it records; the trial course is made here first, under the LMS course ID, with its trial
 * users (so racing first needs make one course), then the LMS's side of it. Does not look at the tool's status.
 */
export async function ensureSandbox(services: Services, appId: string): Promise<SandboxHome> {
  const { store } = services;
  const registration = await withLms(services, appId, () => ensureSandboxRegistration(services));
  const deployment = sandboxDeploymentId(appId);
  const school =
    (await store.organizations.find(registration.issuer, registration.clientId, deployment)) ??
    (await adoptSchool(services, registration.issuer, registration.clientId, deployment)) ??
    (await store.organizations.upsert({ issuer: registration.issuer, client: registration.clientId, deployment, title: SANDBOX_SCHOOL_TITLE }));
  // Courses of an older Sandbox school move in first, so the old trial course stays the trial course (LTI-53).
  await withLms(services, appId, () => moveOlderSandboxCourses(services, appId, school, registration));
  const trial = await ensureTrialCourse(services, school, appId);
  const lms = await withLms(services, appId, () =>
    ensureLmsSandbox(services, appId, { title: trial.name, label: trial.label ?? '', schoolTitle: school.title }),
  );
  return { school, trial, lms };
}

/**
 * The Sandbox school of an earlier registration with the same LMS (same issuer, same deployment ID), moved
 * to the current client: the LMS lost its store and registered the service again (LTI-46), and the tool's
 * Sandbox (trial course, people, placements, rows) carries on; the LMS side is made again under the same
 * IDs. Null when there is none.
 */
async function adoptSchool(services: Pick<Services, 'store' | 'log'>, issuer: string, client: string, deployment: string): Promise<OrganizationRecord | null> {
  const [earlier] = await services.store.organizations.listByDeployment(issuer, deployment);
  if (!earlier) return null;
  try {
    const moved = await services.store.organizations.setClient(earlier.id, client);
    if (moved) services.log.warn('a Sandbox school moved to the new registration of its LMS', { organization: earlier.id, from: earlier.client, to: client });
    return moved;
  } catch (err) {
    // A need racing this one moved it, or made the school under the new client: read what is there.
    if (!(err instanceof UniqueViolationError)) throw err;
    return services.store.organizations.find(issuer, client, deployment);
  }
}

async function ensureTrialCourse(services: Pick<Services, 'store' | 'clock'>, school: OrganizationRecord, appId: string): Promise<ContextRecord> {
  const { store } = services;
  const externalId = sandboxTrialCourseId(appId);
  const existing = await store.contexts.findByExternal(school.id, externalId);
  if (existing) return existing;
  try {
    return await store.transaction(async (tx) => {
      const context = await tx.contexts.create({
        organizationId: school.id,
        externalId,
        name: TRIAL_COURSE_NAME,
        label: trialCourseLabel(services.clock.nowMs()),
        sandboxAppId: appId,
      });
      await enrolTrialUsers(tx, school, context);
      return context;
    });
  } catch (err) {
    if (!(err instanceof UniqueViolationError)) throw err;
    const winner = await store.contexts.findByExternal(school.id, externalId);
    if (!winner) throw err;
    return winner;
  }
}

/** The Sandbox course `contextId` names (default the trial course), or 404 when it is none of the tool's. */
export async function sandboxContext(
  services: Services,
  app: AppRecord,
  contextId: string | undefined,
): Promise<{ home: SandboxHome; context: ContextRecord }> {
  const home = await ensureSandbox(services, app.id);
  if (contextId === undefined || contextId === home.trial.id) return { home, context: home.trial };
  const context = await services.store.contexts.get(contextId);
  if (!context || context.sandboxAppId !== app.id) {
    throw new Problem(404, 'sandbox_context_not_found', `context ${contextId} is not a Sandbox course of app ${app.id}`);
  }
  return { home, context };
}

/** The next term of a course label: `SANDBOX-2026F` becomes `SANDBOX-2027S`; anything else gets ` (copy)`. */
export function nextTermLabel(label: string | null): string | null {
  if (label === null) return null;
  const term = /^(.*?)(\d{4})([SF])$/.exec(label);
  if (term) {
    const year = Number(term[2]);
    return term[3] === 'S' ? `${term[1]}${year}F` : `${term[1]}${year + 1}S`;
  }
  return `${label} (copy)`.slice(0, 200);
}

export interface CopyInput {
  parentContextId?: string;
  course?: { name: string; label?: string | null };
}

/**
 * A copy of a Sandbox course, as an LMS course copy makes one (GAP-38): a new course naming its parent,
 * the same trial users under new memberships, nothing placed and no data copied. In the Sandbox's LMS it
 * is an LMS course copy (`$Context.id.history` names the parent), made after the service's course under
 * the ID derived from it (LTI-47).
 */
export async function copySandboxCourse(services: Services, app: AppRecord, input: CopyInput): Promise<ContextRecord> {
  const { home, context: parent } = await sandboxContext(services, app, input.parentContextId);
  const school = home.school;
  const copy = await services.store.transaction(async (tx) => {
    const made = await tx.contexts.create({
      organizationId: school.id,
      name: input.course?.name ?? parent.name,
      label: input.course ? (input.course.label ?? null) : nextTermLabel(parent.label),
      parentContextId: parent.id,
      sandboxAppId: app.id,
      // Its LMS course ID, chosen here so the service's course exists before the LMS is asked.
      externalId: sandboxCopyCourseId(app.id),
    });
    await enrolTrialUsers(tx, school, made);
    return made;
  });
  await withLms(services, app.id, () => ensureLmsCopy(services, parent, copy));
  return copy;
}

/**
 * The trial users of one Sandbox course, by role, looked up in the course's own school (its stored
 * `organizationId`), not in the school the current `PUBLIC_URL` names: the Sandbox school is found by its
 * issuer, the service's origin, and a restart on another origin (e.g. `PUBLIC_URL` defaulting to
 * `http://HOST:PORT` on a new port) finds or makes another school whose trial users are not members of
 * the courses made before.
 */
export async function sandboxUsers(services: Pick<Services, 'store'>, context: ContextRecord): Promise<SandboxUsersJson> {
  const out: Partial<Record<SandboxRole, SandboxUserJson>> = {};
  for (const role of SANDBOX_ROLES) {
    const user = await services.store.users.findByExternal(context.organizationId, trialUserExternalId(role));
    const member = user ? await services.store.members.find(context.id, user.id) : null;
    if (!user || !member) throw new Error(`Sandbox course ${context.id} lost its ${role}`);
    const person = TRIAL_PEOPLE[role];
    out[role] = {
      user_id: user.id,
      member_id: member.id,
      groups: [...member.groups],
      given_name: user.givenName ?? person.givenName,
      family_name: user.familyName ?? person.familyName,
      full_name: user.fullName ?? `${person.givenName} ${person.familyName}`,
      email: user.email ?? person.email,
    };
  }
  return out as SandboxUsersJson;
}

/** The member ID of one trial user in one Sandbox course (in the course's own school, as `sandboxUsers`). */
export async function trialMemberId(services: Pick<Services, 'store'>, context: ContextRecord, role: SandboxRole): Promise<string> {
  const user = await services.store.users.findByExternal(context.organizationId, trialUserExternalId(role));
  const member = user ? await services.store.members.find(context.id, user.id) : null;
  if (!member) throw new Error(`Sandbox course ${context.id} lost its ${role}`);
  return member.id;
}

export async function sandboxCourseJson(
  services: Pick<Services, 'store'>,
  app: AppRecord,
  context: ContextRecord,
): Promise<SandboxCourseJson> {
  const provisioning = await services.store.provisioning.get({ appId: app.id, contextId: context.id });
  return {
    context: context.id,
    parent_context: context.parentContextId,
    course: { name: context.name, label: context.label },
    users: await sandboxUsers(services, context),
    provisioning: provisioning?.state ?? null,
    created: isoFromMs(context.createdAt),
  };
}

/** The Sandbox courses of the tool other than the trial course: the copies made since the last reset. */
export async function sandboxCopies(services: Pick<Services, 'store'>, app: AppRecord, trial: ContextRecord): Promise<ContextRecord[]> {
  const courses = await services.store.contexts.listSandbox(app.id);
  return courses.filter((c) => c.id !== trial.id);
}

/** When the Sandbox was last reset: a reset is the only change ever made to the trial course's record. */
export function lastResetOf(trial: ContextRecord): string | null {
  return trial.updatedAt > trial.createdAt ? isoFromMs(trial.updatedAt) : null;
}
