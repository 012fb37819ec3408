/**
 * The Sandbox's courses as courses of its LMS (decisions LTI-44 to LTI-48): the trial course is the LMS
 * course `sandbox-<app_id>-trial`, a copy an LMS course copy, a placement an LMS resource link whose
 * `custom.tis_placement` names it (and, for an assessment, the link's gradebook column is the placement's
 * line item), a launch link the LMS's launch URL for the trial user of the role asked, and the Grades tab
 * the LMS's gradebook. Every call goes to the LMS's controls over HTTP (`lms-client.ts`).
 *
 * A Sandbox course of another school (made before the move by the S-12 Sandbox school, or under an
 * earlier `PUBLIC_URL`) is moved into this LMS at the Sandbox's first need (`older-courses.ts`, LTI-53).
 */
import { randomBytes } from 'node:crypto';
import type { Services } from '../http/services.js';
import { Problem } from '../http/problem.js';
import { PLACEMENT_PARAMETER } from '../lti/vocabulary.js';
import type { ContextRecord, OrganizationRecord, PlacementRecord } from '../store/index.js';
import type { SandboxRole } from './trial-people.js';
import { trialUserExternalId } from './trial-people.js';
import type { LmsGradebookJson, LmsResourceLinkJson } from './lms-client.js';
import { SandboxLmsControlError } from './lms-client.js';
import { sandboxLmsUnavailable } from './lms-host.js';
import { forgetSandboxRegistration, sandboxLmsClient } from './lms-registration.js';
import { exists, forgetLmsSandbox } from './lms-sandbox.js';

/**
 * An LMS control failed. A 404 for a record this process made means the LMS lost its store: what the
 * process remembers of it is forgotten, so the next need registers and makes the records again (LTI-46).
 * Either way the dashboard caller gets a 503 to retry, never a 500: the fault is not theirs.
 */
export function lmsProblem(services: Pick<Services, 'sandboxLms' | 'log'>, appId: string, err: unknown): unknown {
  if (!(err instanceof SandboxLmsControlError)) return err;
  if (err.status === 404) {
    forgetLmsSandbox(services, appId);
    forgetSandboxRegistration(services);
  }
  services.log.error('the Sandbox LMS refused a control', { err, app: appId });
  return sandboxLmsUnavailable();
}

/** Runs LMS calls for a tool's Sandbox, answering their failures as `lmsProblem`. */
export async function withLms<T>(services: Pick<Services, 'sandboxLms' | 'log'>, appId: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw lmsProblem(services, appId, err);
  }
}

/** A copy's LMS course ID: the service's copy is made first under it, then the LMS's copy (409 = made). */
export function sandboxCopyCourseId(appId: string): string {
  return `sandbox-${appId}-copy-${randomBytes(10).toString('hex')}`;
}

/** The LMS course copy of a Sandbox copy, with the trial users enrolled and no links (nothing placed, GAP-38). */
export async function ensureLmsCopy(services: Services, parent: ContextRecord, copy: ContextRecord): Promise<void> {
  const lms = sandboxLmsClient(services);
  await exists(() =>
    lms.copyCourse(parent.externalId, {
      id: copy.externalId,
      title: copy.name,
      // A copy without a label is an LMS course without one (not its parent's).
      label: copy.label ?? '',
      with_links: false,
      with_enrolments: true,
    }),
  );
}

/**
 * The LMS resource link of a placement, found by its `custom.tis_placement` in the course or made (with
 * the assessment's gradebook column), and bound to the placement so the first launch finds it. One per
 * placement in this process however many needs race.
 */
const linking = new Map<string, Promise<LmsResourceLinkJson>>();

async function findOrMakeLink(services: Services, school: OrganizationRecord, context: ContextRecord, placement: PlacementRecord): Promise<LmsResourceLinkJson> {
  const lms = sandboxLmsClient(services);
  const course = await lms.course(context.externalId);
  let link = course.resource_links.find((l) => l.custom[PLACEMENT_PARAMETER] === placement.resourceLink);
  if (!link) {
    const assessment = placement.entry.type === 'assessment';
    link = await lms.createLink(context.externalId, {
      title: placement.entry.label,
      custom: { [PLACEMENT_PARAMETER]: placement.resourceLink },
      line_item: assessment
        ? { label: placement.entry.label, score_maximum: placement.entry.points ?? 100, ...(placement.entry.extid !== null ? { resource_id: placement.entry.extid } : {}) }
        : null,
    });
  }
  await services.store.lti.bindResourceLink(school.id, link.id, placement.id);
  return link;
}

export async function ensureLmsLink(
  services: Services,
  school: OrganizationRecord,
  context: ContextRecord,
  placement: PlacementRecord,
): Promise<{ link: LmsResourceLinkJson; placement: PlacementRecord }> {
  let pending = linking.get(placement.id);
  if (!pending) {
    pending = findOrMakeLink(services, school, context, placement).finally(() => linking.delete(placement.id));
    linking.set(placement.id, pending);
  }
  const link = await pending;
  const column = link.line_items[0]?.id ?? null;
  let current = placement;
  if (placement.entry.type === 'assessment' && column !== null && placement.lineItemId !== column) {
    current = (await services.store.placements.setLineItem(placement.id, column)) ?? placement;
  }
  return { link, placement: current };
}

/** The LMS's launch URL of the placement's link for the trial user of `role`. */
export async function lmsLaunch(
  services: Services,
  school: OrganizationRecord,
  context: ContextRecord,
  placement: PlacementRecord,
  role: SandboxRole,
): Promise<{ url: string; expires: string }> {
  const { link } = await ensureLmsLink(services, school, context, placement);
  return sandboxLmsClient(services).launch(link.id, trialUserExternalId(role));
}

export function lmsGradebook(services: Services, context: ContextRecord): Promise<LmsGradebookJson> {
  return sandboxLmsClient(services).gradebook(context.externalId);
}
