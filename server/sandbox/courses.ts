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
import { ensureSandboxSchool } from '../sandbox-lms/school.js';
import type { AppRecord, ContextRecord, MemberGroup, OrganizationRecord, Repositories, UserRecord } from '../store/index.js';
import { isoFromMs, UniqueViolationError } from '../store/index.js';

export type SandboxRole = components['schemas']['SandboxRole'];
export type SandboxUserJson = components['schemas']['SandboxUser'];
export type SandboxUsersJson = components['schemas']['SandboxUsers'];
export type SandboxCourseJson = components['schemas']['SandboxCourse'];

export const SANDBOX_ROLES: readonly SandboxRole[] = ['instructor', 'assistant', 'manager', 'student_1', 'student_2'];

/** The LMS course ID of the trial course inside the tool's Sandbox school. */
export const TRIAL_COURSE_EXTERNAL_ID = 'sandbox-trial-course';
export const TRIAL_COURSE_NAME = 'Sandbox course';
/** The trial course's code: `SANDBOX-` + the term it was made in (`2026F`), so a copy can move to the next term. */
export function trialCourseLabel(nowMs: number): string {
  const date = new Date(nowMs);
  return `SANDBOX-${date.getUTCFullYear()}${date.getUTCMonth() < 6 ? 'S' : 'F'}`;
}
export const SANDBOX_SCHOOL_TITLE = 'Sandbox School';

export interface TrialPerson {
  givenName: string;
  familyName: string;
  email: string;
  groups: MemberGroup[];
}

export const TRIAL_PEOPLE: Readonly<Record<SandboxRole, TrialPerson>> = {
  instructor: { givenName: 'Irene', familyName: 'Instructor', email: 'instructor@sandbox.example.org', groups: ['instructor'] },
  assistant: { givenName: 'Ari', familyName: 'Assistant', email: 'assistant@sandbox.example.org', groups: ['assistant'] },
  manager: { givenName: 'Mona', familyName: 'Manager', email: 'manager@sandbox.example.org', groups: ['manager'] },
  student_1: { givenName: 'Sam', familyName: 'Student', email: 'student1@sandbox.example.org', groups: ['student'] },
  student_2: { givenName: 'Sasha', familyName: 'Student', email: 'student2@sandbox.example.org', groups: ['student'] },
};

/** The trial user's LMS ID in the Sandbox school: one person per role, in every Sandbox course of the tool. */
export function trialUserExternalId(role: SandboxRole): string {
  return `sandbox-${role}`;
}

export function roleOfTrialUser(user: Pick<UserRecord, 'externalId'> | null): SandboxRole | null {
  if (!user) return null;
  return SANDBOX_ROLES.find((role) => trialUserExternalId(role) === user.externalId) ?? null;
}

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
  school: OrganizationRecord;
  trial: ContextRecord;
}

/** The tool's Sandbox school and trial course, made on first need. Does not look at the tool's status. */
export async function ensureSandbox(services: Pick<Services, 'store' | 'config' | 'clock'>, appId: string): Promise<SandboxHome> {
  const { store } = services;
  const school = await ensureSandboxSchool(store, appId, services.config.publicUrl, SANDBOX_SCHOOL_TITLE);
  const existing = await store.contexts.findByExternal(school.id, TRIAL_COURSE_EXTERNAL_ID);
  if (existing) return { school, trial: existing };
  try {
    const trial = await store.transaction(async (tx) => {
      const context = await tx.contexts.create({
        organizationId: school.id,
        externalId: TRIAL_COURSE_EXTERNAL_ID,
        name: TRIAL_COURSE_NAME,
        label: trialCourseLabel(services.clock.nowMs()),
        sandboxAppId: appId,
      });
      await enrolTrialUsers(tx, school, context);
      return context;
    });
    return { school, trial };
  } catch (err) {
    if (!(err instanceof UniqueViolationError)) throw err;
    const winner = await store.contexts.findByExternal(school.id, TRIAL_COURSE_EXTERNAL_ID);
    if (!winner) throw err;
    return { school, trial: winner };
  }
}

/** The Sandbox course `contextId` names (default the trial course), or 404 when it is none of the tool's. */
export async function sandboxContext(
  services: Pick<Services, 'store' | 'config' | 'clock'>,
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
 * the same trial users under new memberships, nothing placed and no data copied.
 */
export async function copySandboxCourse(services: Pick<Services, 'store' | 'config' | 'clock'>, app: AppRecord, input: CopyInput): Promise<ContextRecord> {
  const { home, context: parent } = await sandboxContext(services, app, input.parentContextId);
  return services.store.transaction(async (tx) => {
    const copy = await tx.contexts.create({
      organizationId: home.school.id,
      name: input.course?.name ?? parent.name,
      label: input.course ? (input.course.label ?? null) : nextTermLabel(parent.label),
      parentContextId: parent.id,
      sandboxAppId: app.id,
    });
    await enrolTrialUsers(tx, home.school, copy);
    return copy;
  });
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
