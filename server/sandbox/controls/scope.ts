/**
 * What a tool's Sandbox LMS controls may touch, and how the LMS's answers reach a dashboard caller
 * (decision LTI-66). The Sandbox LMS is one LMS for every tool's Sandbox, so each control is scoped to
 * the tool by ID: its schools, courses and people are `sandbox-<app_id>` and `sandbox-<app_id>-…`, and
 * the five trial people `sandbox-<role>` (shared by every tool's trial course, LTI-42) may be enrolled
 * in and launched into the tool's courses. App IDs never hold `-` (`app_[a-z0-9]+`), so one tool's prefix
 * is never the start of another tool's.
 */
import { schemas } from '../../../generated/dashboard/schemas.js';
import { fillMessage } from '../../../rules/messages.js';
import type { MessageValues } from '../../../rules/messages.js';
import { Problem } from '../../http/problem.js';
import { SANDBOX_ROLES, trialUserExternalId } from '../trial-people.js';
import { SandboxLmsControlError } from '../lms-client.js';
import { sandboxLmsUnavailable } from '../lms-host.js';
import { sandboxDeploymentId } from '../lms-sandbox.js';

/** Decision LTI-66: the controls' answers, as the spec states them on SandboxLmsCourse. */
const MESSAGES = schemas.SandboxLmsCourse['x-messages'];

export function message(name: keyof typeof MESSAGES, values: MessageValues = {}): string {
  return fillMessage(MESSAGES[name], values);
}

/** The start of every LMS ID of the tool's Sandbox but its first school's. */
export function appPrefix(appId: string): string {
  return `${sandboxDeploymentId(appId)}-`;
}

const TRIAL_SUBS: ReadonlySet<string> = new Set(SANDBOX_ROLES.map(trialUserExternalId));

function outside(what: string, id: string, appId: string): Problem {
  return new Problem(404, 'sandbox_lms_outside', message('outside_sandbox', { what, id, app_id: appId }));
}

export function assertCourseOfApp(appId: string, courseId: string): void {
  if (!courseId.startsWith(appPrefix(appId))) throw outside('course', courseId, appId);
}

export function assertSchoolOfApp(appId: string, deploymentId: string): void {
  if (deploymentId !== sandboxDeploymentId(appId) && !deploymentId.startsWith(appPrefix(appId))) throw outside('school', deploymentId, appId);
}

export function isSchoolOfApp(appId: string, deploymentId: string): boolean {
  return deploymentId === sandboxDeploymentId(appId) || deploymentId.startsWith(appPrefix(appId));
}

/** A person the tool's controls may enrol or launch: a trial person, or one of the tool's own. */
export function assertPersonOfApp(appId: string, sub: string): void {
  if (!TRIAL_SUBS.has(sub) && !sub.startsWith(appPrefix(appId))) throw outside('person', sub, appId);
}

export function lmsAnswer(raw: string): string {
  try {
    const parsed = JSON.parse(raw) as { error?: unknown; error_description?: unknown };
    if (typeof parsed.error === 'string') return typeof parsed.error_description === 'string' ? `${parsed.error}: ${parsed.error_description}` : parsed.error;
  } catch {
    // Not the LMS's JSON shape: its text as it came.
  }
  return raw.slice(0, 300);
}


/**
 * Runs calls to the Sandbox LMS for a dashboard caller: the LMS's 404 is the caller's 404, its other
 * refusals a 422 carrying its answer, and an LMS that cannot start, answer or be reached is 503 (never a
 * 500 the caller could cause).
 */
export async function throughLms<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof Problem) throw err;
    if (err instanceof SandboxLmsControlError) {
      if (err.status === 404) throw new Problem(404, 'sandbox_lms_not_found', message('lms_refused', { answer: lmsAnswer(err.answer) }), { cause: err });
      if (err.status >= 400 && err.status < 500 && err.status !== 401) {
        throw new Problem(422, 'sandbox_lms_refused', message('lms_refused', { answer: lmsAnswer(err.answer) }), { cause: err });
      }
    }
    throw sandboxLmsUnavailable(err);
  }
}
