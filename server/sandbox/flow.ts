/**
 * What a person does in the Sandbox, on the real machinery: the picker (`openPicker`, which calls the
 * tool's locations URL, or offers its stored locations when its pin says so), placements (`placeFromPicker`: the copy, the gradebook column, provisioning),
 * launch tickets for the browser launch page, and the Grades tab of the Sandbox gradebook. Every refusal
 * is a `Problem` with the dashboard spec's status and message.
 */
import type { components } from '../../generated/dashboard/types.js';
import type { Services } from '../http/services.js';
import { Problem } from '../http/problem.js';
import { issueLaunchTicket } from '../launch-page/tickets.js';
import type { IssuedTicket } from '../launch-page/tickets.js';
import { openPicker, placeFromPicker, placementErrorOf, placementJson, placementJsonOf, provisionsOnFirstNeed } from '../placements/index.js';
import type { Picker, PlacementJson } from '../placements/index.js';
import { readSandboxGradebook } from '../sandbox-lms/gradebook.js';
import type { AppRecord, PlacementRecord, ProvisioningLevel, ProvisioningState } from '../store/index.js';
import { isoFromMs } from '../store/index.js';
import type { SandboxRole } from './courses.js';
import {
  ensureSandbox,
  lastResetOf,
  roleOfTrialUser,
  sandboxContext,
  sandboxCopies,
  sandboxCourseJson,
  sandboxUsers,
  trialMemberId,
} from './courses.js';

export type SandboxJson = components['schemas']['Sandbox'];
export type SandboxGradebookJson = components['schemas']['SandboxGradebook'];

/** The Sandbox is closed while the tool is suspended (GAP-24, S-08). */
export function assertSandboxOpen(app: AppRecord): void {
  if (app.status === 'suspended') {
    throw new Problem(409, 'sandbox_suspended', `tool ${app.id} is suspended: its Sandbox is closed until the platform team activates it`);
  }
}

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

/** Places one location of the course's last picker answer, as the instructor's confirmation does. */
export async function placeInSandbox(services: Services, app: AppRecord, input: SandboxPlaceInput): Promise<PlacementJson> {
  const { context } = await sandboxContext(services, app, input.contextId);
  assertSandboxOpen(app);
  try {
    const outcome = await placeFromPicker(services, {
      appId: app.id,
      contextId: context.id,
      extid: input.extid,
      ...(input.label !== undefined ? { label: input.label } : {}),
    });
    return placementJson(outcome);
  } catch (err) {
    throw asProblem(err);
  }
}

/** A launch ticket for a trial user into a Sandbox placement. */
export async function sandboxLaunchTicket(services: Services, app: AppRecord, placementId: string, role: SandboxRole): Promise<IssuedTicket> {
  const placement = await services.store.placements.get(placementId);
  const context = placement && placement.appId === app.id ? await services.store.contexts.get(placement.contextId) : null;
  if (!placement || !context || context.sandboxAppId !== app.id) {
    throw new Problem(404, 'placement_not_found', `placement ${placementId} is not in the Sandbox of app ${app.id}`);
  }
  assertSandboxOpen(app);
  const memberId = await trialMemberId(services, context, role);
  try {
    return await issueLaunchTicket(services, { placementId: placement.id, memberId });
  } catch (err) {
    throw asProblem(err);
  }
}

/** The Grades tab of one Sandbox course: the last score per trial user in each column. */
export async function readSandboxGrades(services: Services, app: AppRecord, contextId: string | undefined): Promise<SandboxGradebookJson> {
  const { context } = await sandboxContext(services, app, contextId);
  assertSandboxOpen(app);
  return readSandboxGradebook(services.store, context, (_member, user) => roleOfTrialUser(user));
}
