/**
 * The LMS side of a tool's Sandbox (decision LTI-42): in the Sandbox's LMS, the tool's Sandbox school is
 * the deployment `sandbox-<app_id>` of the service's registration, its trial course the LMS course
 * `sandbox-<app_id>-trial`, and its trial users the LMS users `sandbox-<role>` (the trial users' external
 * IDs already), enrolled with the LIS role whose group the service gives them (LTI-11). Made on first need
 * and idempotent: each record is made under the ID the Sandbox chooses, and the LMS's 409 for one already
 * made (by an earlier need, or a need racing this one) means it exists.
 */
import type { Services } from '../http/services.js';
import type { LtiRegistrationRecord } from '../store/index.js';
import type { SandboxRole } from './trial-people.js';
import { SANDBOX_ROLES, TRIAL_PEOPLE, trialUserExternalId } from './trial-people.js';
import { SandboxLmsControlError } from './lms-client.js';
import { ensureSandboxRegistration, sandboxLmsClient } from './lms-registration.js';

const LIS = 'http://purl.imsglobal.org/vocab/lis/v2/membership';

/**
 * The role each trial user is enrolled with. The manager is `membership#Administrator`: LIS's
 * `membership#Manager` maps to no group of the service (LTI-11), and a manager with no group could not
 * open the picker.
 */
export const TRIAL_LIS_ROLES: Readonly<Record<SandboxRole, string>> = {
  instructor: `${LIS}#Instructor`,
  assistant: `${LIS}/Instructor#TeachingAssistant`,
  manager: `${LIS}#Administrator`,
  student_1: `${LIS}#Learner`,
  student_2: `${LIS}#Learner`,
};

export function sandboxDeploymentId(appId: string): string {
  return `sandbox-${appId}`;
}

export function sandboxTrialCourseId(appId: string): string {
  return `sandbox-${appId}-trial`;
}

export interface LmsSandbox {
  registration: LtiRegistrationRecord;
  deploymentId: string;
  courseId: string;
}

/** Runs a control that makes a record under a chosen ID; the LMS's 409 means the record exists. */
export async function exists(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (err) {
    if (!(err instanceof SandboxLmsControlError && err.status === 409)) throw err;
  }
}

/** The LMS side made by this process, per LMS host and tool: later needs make no control call. */
const made = new WeakMap<object, Map<string, Promise<LmsSandbox>>>();

/** The tool's school (deployment `sandbox-<app_id>`) and the five trial people in the LMS; 409 = made. */
export async function ensureLmsSchool(services: Services, registration: LtiRegistrationRecord, appId: string, schoolTitle: string): Promise<string> {
  const lms = sandboxLmsClient(services);
  const deploymentId = sandboxDeploymentId(appId);
  try {
    await lms.createDeployment(registration.clientId, schoolTitle, deploymentId);
  } catch (err) {
    if (!(err instanceof SandboxLmsControlError && err.status === 409)) throw err;
    // Made already, maybe by an earlier registration of the service (a restart under another PUBLIC_URL
    // registers again): the school's launches must be this registration's, whose URLs name this origin.
    await lms.moveDeployment(deploymentId, registration.clientId);
  }
  for (const role of SANDBOX_ROLES) {
    const person = TRIAL_PEOPLE[role];
    await exists(() => lms.createUser({ sub: trialUserExternalId(role), given_name: person.givenName, family_name: person.familyName, email: person.email }));
  }
  return deploymentId;
}

/** Enrols the trial users in an LMS course with their LIS roles (a PUT: making it again changes nothing). */
export async function enrolLmsTrialUsers(services: Services, courseId: string): Promise<void> {
  const lms = sandboxLmsClient(services);
  for (const role of SANDBOX_ROLES) await lms.enrol(courseId, trialUserExternalId(role), [TRIAL_LIS_ROLES[role]]);
}

async function makeLmsSandbox(services: Services, appId: string, course: { title: string; label: string; schoolTitle: string }): Promise<LmsSandbox> {
  const registration = await ensureSandboxRegistration(services);
  const lms = sandboxLmsClient(services);
  const deploymentId = await ensureLmsSchool(services, registration, appId, course.schoolTitle);
  const courseId = sandboxTrialCourseId(appId);
  await exists(() => lms.createCourse({ id: courseId, deployment_id: deploymentId, title: course.title, label: course.label }));
  await enrolLmsTrialUsers(services, courseId);
  return { registration, deploymentId, courseId };
}

export function ensureLmsSandbox(
  services: Services,
  appId: string,
  course: { title: string; label: string; schoolTitle: string },
): Promise<LmsSandbox> {
  const host = services.sandboxLms;
  let byApp = made.get(host);
  if (!byApp) {
    byApp = new Map();
    made.set(host, byApp);
  }
  let pending = byApp.get(appId);
  if (!pending) {
    pending = makeLmsSandbox(services, appId, course);
    byApp.set(appId, pending);
    const mine = byApp;
    pending.catch(() => {
      if (mine.get(appId) === pending) mine.delete(appId);
    });
  }
  return pending;
}

/**
 * Forgets what this process made in its LMS for the tool: the LMS answered 404 for a record made earlier,
 * so its store was lost (a restart on PostgreSQL before the LMS's store is shared, LTI-41); the next need
 * makes the records again under the same IDs (decision LTI-46).
 */
export function forgetLmsSandbox(services: Pick<Services, 'sandboxLms'>, appId: string): void {
  made.get(services.sandboxLms)?.delete(appId);
}

/** Whether an LMS answer means a record this process made is gone from the LMS. */
export function isLostRecord(err: unknown): boolean {
  return err instanceof SandboxLmsControlError && err.status === 404;
}
