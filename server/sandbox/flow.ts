/**
 * What a person does in the Sandbox, on the real machinery: the picker (`openPicker`, which calls the
 * tool's locations URL, or offers its stored locations when its pin says so), placements (`placeFromPicker`:
 * the copy and provisioning, then the LMS resource link with its gradebook column), launch links through the
 * Sandbox's LMS, and the Grades tab of its gradebook (decisions LTI-44 to LTI-48). Every refusal is a
 * `Problem` with the dashboard spec's status and message.
 */
import type { components } from '../../generated/dashboard/types.js';
import type { Services } from '../http/services.js';
import { Problem } from '../http/problem.js';
import { openPicker, placeFromPicker, placementErrorOf, placementJson, placementJsonOf, provisionsOnFirstNeed } from '../placements/index.js';
import type { Picker, PlacementJson, PlacementOutcome } from '../placements/index.js';
import type { AppRecord, ContextRecord, PlacementRecord, ProvisioningLevel, ProvisioningState } from '../store/index.js';
import { isoFromMs } from '../store/index.js';
import type { SandboxRole } from './trial-people.js';
import {
  ensureSandbox,
  lastResetOf,
  sandboxContext,
  sandboxCopies,
  sandboxCourseJson,
  sandboxUsers,
  trialMemberId,
} from './courses.js';
import { assertSandboxOpen } from './gate.js';
import { SANDBOX_ROLES, trialUserExternalId } from './trial-people.js';
import { ensureLmsLink, lmsGradebook, lmsLaunch, withLms } from './lms-courses.js';
import { setSchoolSettings } from './controls/school-settings.js';

export type SandboxJson = components['schemas']['Sandbox'];
export type SandboxGradebookJson = components['schemas']['SandboxGradebook'];

/** The Sandbox is closed while the tool is suspended (GAP-24, S-08). */
function asProblem(err: unknown): unknown {
  return placementErrorOf(err)?.toProblem() ?? err;
}

async function levelState(services: Pick<Services, 'store'>, app: AppRecord, level: ProvisioningLevel): Promise<{ state: ProvisioningState; error: string | null }> {
  const record = await services.store.provisioning.get(level);
  if (record) return { state: record.state, error: record.state === 'failed' ? record.lastError : null };
  // Not asked yet (or reset): a tool without a provision URL, or pinned to a contract without provision
  // requests, is provisioned on first need (GAP-17, S-41).
  return { state: provisionsOnFirstNeed(app) ? 'provisioned' : 'pending', error: null };
}

/** A stored placement as the dashboard shows it, with the provisioning of its two levels now. */
export async function storedPlacementJson(services: Pick<Services, 'store'>, app: AppRecord, placement: PlacementRecord): Promise<PlacementJson> {
  const context = await levelState(services, app, { appId: app.id, contextId: placement.contextId });
  const location = await levelState(services, app, { appId: app.id, contextId: placement.contextId, locationId: placement.locationId });
  const stored = await services.store.locations.get(placement.locationId);
  return placementJsonOf(placement, stored?.extid, { context: context.state, location: location.state, error: context.error ?? location.error });
}

export async function readSandbox(services: Services, app: AppRecord): Promise<SandboxJson> {
  const { school, trial } = await ensureSandbox(services, app.id);
  const copies = await sandboxCopies(services, app, trial);
  const placements: PlacementJson[] = [];
  for (const course of [trial, ...copies]) {
    for (const placement of await services.store.placements.listByContext(course.id, app.id)) {
      placements.push(await storedPlacementJson(services, app, placement));
    }
  }
  placements.sort((a, b) => (a.created === b.created ? a.id.localeCompare(b.id) : a.created.localeCompare(b.created)));
  const trialJson = await sandboxCourseJson(services, app, trial);
  const copiesJson = [];
  for (const copy of copies) copiesJson.push(await sandboxCourseJson(services, app, copy));
  return {
    app_id: app.id,
    context: trial.id,
    course: trialJson.course,
    organization: { title: school.title, issuer: school.issuer, client: school.client, deployment: school.deployment },
    users: await sandboxUsers(services, trial),
    provisioning: trialJson.provisioning,
    school: { grants_line_item_scope: school.grantsLineItemScope },
    placements,
    copies: copiesJson,
    created: isoFromMs(trial.createdAt),
    last_reset: lastResetOf(trial),
  };
}

/**
 * `putSandboxSchool` (LTI-49, LTI-51, LTI-73): whether the tool's Sandbox school's developer key grants the
 * line-item scope. The Sandbox's LMS holds one registration for every tool's Sandbox, so its registration
 * setting (the platform team's `PATCH /sandbox/lms/registration`, LTI-69) would reach every tool; a tool team's
 * answer is its own deployment's setting in the LMS, which the school record (honoured by the publisher before
 * it asks the LMS, `AgsPublisher`) follows.
 */
export async function setSandboxLineItemScope(services: Services, app: AppRecord, grants: boolean): Promise<{ grants_line_item_scope: boolean }> {
  // The school's own setting in the Sandbox LMS, which the record follows (one source of truth, LTI-73).
  const settings = await setSchoolSettings(services, app, { grants_line_item_scope: grants });
  return { grants_line_item_scope: settings.own.grants_line_item_scope ?? grants };
}

/** Opens the picker in a Sandbox course as its trial instructor. */
export async function openSandboxPicker(services: Services, app: AppRecord, contextId: string | undefined): Promise<Picker> {
  const { context } = await sandboxContext(services, app, contextId);
  assertSandboxOpen(app);
  const instructor = await trialMemberId(services, context, 'instructor');
  try {
    return await openPicker(services, { appId: app.id, contextId: context.id, memberId: instructor });
  } catch (err) {
    throw asProblem(err);
  }
}

export async function listSandboxPlacements(services: Services, app: AppRecord, contextId: string | undefined): Promise<PlacementJson[]> {
  const { context } = await sandboxContext(services, app, contextId);
  assertSandboxOpen(app);
  const out: PlacementJson[] = [];
  for (const placement of await services.store.placements.listByContext(context.id, app.id)) {
    out.push(await storedPlacementJson(services, app, placement));
  }
  return out;
}

export interface SandboxPlaceInput {
  extid: string;
  label?: string;
  contextId?: string;
}

/**
 * Places one location of the course's last picker answer, as the instructor's confirmation does; the
 * placement is then an LMS resource link in the Sandbox's LMS, whose gradebook column is the assessment's
 * line item (LTI-45): the LMS makes the column, as a school's LMS does (LTI-15).
 */
export async function placeInSandbox(services: Services, app: AppRecord, input: SandboxPlaceInput): Promise<PlacementJson> {
  const { home, context } = await sandboxContext(services, app, input.contextId);
  assertSandboxOpen(app);
  let outcome: PlacementOutcome;
  try {
    outcome = await placeFromPicker(services, {
      appId: app.id,
      contextId: context.id,
      extid: input.extid,
      ...(input.label !== undefined ? { label: input.label } : {}),
    });
  } catch (err) {
    throw asProblem(err);
  }
  const { placement } = await withLms(services, app.id, () => ensureLmsLink(services, home.school, context, outcome.placement));
  outcome = { ...outcome, placement };
  return placementJson(outcome);
}

export interface SandboxLaunchLink {
  launchUrl: string;
  expires: string;
}

/** The Sandbox placement a dashboard call names, with its course, or 404. */
export async function sandboxPlacement(services: Services, app: AppRecord, placementId: string): Promise<{ placement: PlacementRecord; context: ContextRecord }> {
  const placement = await services.store.placements.get(placementId);
  const context = placement && placement.appId === app.id ? await services.store.contexts.get(placement.contextId) : null;
  if (!placement || !context || context.sandboxAppId !== app.id) {
    throw new Problem(404, 'placement_not_found', `placement ${placementId} is not in the Sandbox of app ${app.id}`);
  }
  return { placement, context };
}

/**
 * A launch link for a trial user into a Sandbox placement (LTI-45): the LMS's launch URL, which runs the
 * LMS's launch, the service's OIDC login, the LMS's authorization and the service's id_token validation
 * before the launch page provisions and posts to the tool, as a school's launch does. Every Sandbox course
 * is a course of the LMS (older ones are moved at the first need, LTI-53), so there is no other way.
 */
export async function sandboxLaunch(services: Services, app: AppRecord, placementId: string, role: SandboxRole): Promise<SandboxLaunchLink> {
  // The Sandbox first: its first need may move the placement's course into the LMS school (LTI-53).
  const home = await ensureSandbox(services, app.id);
  const { placement, context } = await sandboxPlacement(services, app, placementId);
  assertSandboxOpen(app);
  const { url, expires } = await withLms(services, app.id, () => lmsLaunch(services, home.school, context, placement, role));
  return { launchUrl: url, expires };
}

const ROLE_ORDER: readonly SandboxRole[] = ['instructor', 'assistant', 'manager', 'student_1', 'student_2'];

/**
 * The Grades tab of one Sandbox course: the last score per trial user in each column, read from the
 * LMS's gradebook (LTI-48) in the shape of the S-12 tab: a column's `line_item_id` is its line item as
 * the placement holds it, scores are the trial users' (`sub` = their external ID) with their member IDs.
 */
export async function readSandboxGrades(services: Services, app: AppRecord, contextId: string | undefined): Promise<SandboxGradebookJson> {
  const { home, context } = await sandboxContext(services, app, contextId);
  assertSandboxOpen(app);
  const book = await withLms(services, app.id, () => lmsGradebook(services, context));
  const placements = await services.store.placements.listByContext(context.id, app.id);
  const users = await sandboxUsers(services, context);
  const released = (await services.store.apps.get(app.id))?.gradesReleased ?? true;
  const columns: SandboxGradebookJson['columns'] = [];
  for (const column of book.columns) {
    const placement = placements.find((p) => p.lineItemId === column.id) ?? null;
    const scores: SandboxGradebookJson['columns'][number]['scores'] = [];
    for (const score of column.scores) {
      const role = SANDBOX_ROLES.find((r) => trialUserExternalId(r) === score.userId);
      if (!role) continue;
      scores.push({
        role,
        member_id: users[role].member_id,
        score_given: score.scoreGiven,
        score_maximum: score.scoreMaximum,
        comment: score.comment === '' ? null : score.comment,
        activity_progress: score.activityProgress as SandboxGradebookJson['columns'][number]['scores'][number]['activity_progress'],
        grading_progress: score.gradingProgress as SandboxGradebookJson['columns'][number]['scores'][number]['grading_progress'],
        timestamp: score.timestamp,
        received: score.received,
      });
    }
    scores.sort((a, b) => ROLE_ORDER.indexOf(a.role) - ROLE_ORDER.indexOf(b.role));
    columns.push({
      line_item_id: placement?.lineItemId ?? column.id,
      placement_id: placement?.id ?? null,
      label: column.label,
      score_maximum: column.scoreMaximum,
      grades_released: released,
      scores,
    });
  }
  return { context_id: context.id, columns };
}
