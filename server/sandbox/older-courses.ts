/**
 * Sandbox courses made before the Sandbox moved onto its LMS (decisions LTI-53 to LTI-56): the courses of
 * the tool's S-12 Sandbox school (`{origin}/sandbox-lms`, client and deployment `sandbox-<app_id>`) and of
 * any Sandbox school under an earlier `PUBLIC_URL`, moved into the tool's Sandbox LMS school at the
 * Sandbox's first need in each process, so every Sandbox course launches and grades through the LMS.
 *
 * The LMS side is made first, under IDs derived from the course (each control is "409 = made", a link is
 * found by its `custom.tis_placement` before one is made, a carried score the LMS already holds is its
 * 409), then the service's records move in one transaction whose writes are conditional on where each
 * record was: a need that fails halfway leaves the course where it was, to be moved whole at the next
 * need, and two instances racing move each course once. The course keeps its ID (rows, files,
 * provisioning, placements and attempts hang on it), its members keep theirs, and its people keep their
 * user IDs unless the LMS school already has a record of the same trial user.
 *
 * This is the only reader left of the S-12 gradebook's tables (`store.gradebook`): a course's columns and
 * latest scores are carried into the LMS's gradebook through the LMS's AGS, as a tool's grade is.
 */
import type { Services } from '../http/services.js';
import { clientCredentialsForm } from '../lti/client-credentials.js';
import { AGS_MEDIA_TYPES, AGS_SCOPE, PLACEMENT_PARAMETER } from '../lti/vocabulary.js';
import { scoresUrl } from '../scores/ags.js';
import type { ContextRecord, GradebookScoreRecord, LineItemRecord, LtiRegistrationRecord, OrganizationRecord, PlacementRecord } from '../store/index.js';
import { UniqueViolationError } from '../store/index.js';
import { roleOfTrialUser } from './trial-people.js';
import { SandboxLmsControlError } from './lms-client.js';
import { sandboxLmsClient } from './lms-registration.js';
import { enrolLmsTrialUsers, ensureLmsSchool, exists, sandboxTrialCourseId } from './lms-sandbox.js';

/** The LMS course ID of a moved course other than the trial course: inside the tool's `sandbox-<app_id>-` IDs. */
export function movedCourseId(appId: string, contextId: string): string {
  return `sandbox-${appId}-moved-${contextId}`;
}

interface MovedLink {
  placementId: string;
  linkId: string;
  /** The LMS column's AGS URL, the placement's line item from now on; null for a placement without a column. */
  column: string | null;
}

interface Move {
  course: ContextRecord;
  lmsCourseId: string;
  links: MovedLink[];
}

const carrying = new Map<string, Promise<MovedLink>>();

/** The tools whose older courses this process has moved (or found none of), per LMS host. */
const moving = new WeakMap<object, Map<string, Promise<void>>>();

/**
 * Moves the tool's older Sandbox courses into `school` (its Sandbox LMS school), once per tool and
 * process; a need that fails is tried again by the next. LMS failures are `SandboxLmsControlError`s, for
 * the caller's `withLms`.
 */
export function moveOlderSandboxCourses(services: Services, appId: string, school: OrganizationRecord, registration: LtiRegistrationRecord): Promise<void> {
  const host = services.sandboxLms;
  let byApp = moving.get(host);
  if (!byApp) {
    byApp = new Map();
    moving.set(host, byApp);
  }
  let pending = byApp.get(appId);
  if (!pending) {
    pending = moveAll(services, appId, school, registration).catch(async (err: unknown) => {
      // The trial course's ID was taken between the plan and the move (a need on another instance): plan again.
      if (!(err instanceof UniqueViolationError)) throw err;
      await moveAll(services, appId, school, registration);
    });
    byApp.set(appId, pending);
    const mine = byApp;
    pending.catch(() => {
      if (mine.get(appId) === pending) mine.delete(appId);
    });
  }
  return pending;
}

async function moveAll(services: Services, appId: string, school: OrganizationRecord, registration: LtiRegistrationRecord): Promise<void> {
  const { store } = services;
  // Oldest first, so a copy's parent is in the LMS before the copy is made from it.
  const older = (await store.contexts.listSandbox(appId)).filter((c) => c.organizationId !== school.id);
  if (older.length === 0) return;
  const deploymentId = await ensureLmsSchool(services, registration, appId, school.title);
  // The latest course made without a parent was the trial course the dashboard showed; it stays the trial
  // course unless the LMS school has one already (a database used since the move).
  const trialId = sandboxTrialCourseId(appId);
  const trialTaken = (await store.contexts.findByExternal(school.id, trialId)) !== null;
  const roots = older.filter((c) => c.parentContextId === null);
  const trial = trialTaken ? null : (roots[roots.length - 1] ?? null);
  const lmsIds = new Map<string, string>();
  const moves: Move[] = [];
  let token: Promise<string> | null = null;
  const accessToken = (): Promise<string> => (token ??= agsToken(services, registration));
  for (const course of older) {
    const own = ownLmsId(appId, course);
    const lmsCourseId = course === trial ? trialId : own !== null && own !== trialId ? own : movedCourseId(appId, course.id);
    lmsIds.set(course.id, lmsCourseId);
    const parentLmsId = course.parentContextId === null ? null : (lmsIds.get(course.parentContextId) ?? null);
    await makeLmsCourse(services, deploymentId, course, lmsCourseId, parentLmsId);
    const links: MovedLink[] = [];
    for (const placement of await store.placements.listByContext(course.id, appId)) {
      // One link per placement however many needs of this process race (across instances, as LTI-45).
      let pending = carrying.get(placement.id);
      if (!pending) {
        pending = carryPlacement(services, lmsCourseId, placement, accessToken).finally(() => carrying.delete(placement.id));
        carrying.set(placement.id, pending);
      }
      links.push(await pending);
    }
    moves.push({ course, lmsCourseId, links });
  }
  let movedCourses = 0;
  await store.transaction(async (tx) => {
    for (const { course, lmsCourseId, links } of moves) {
      if (!(await tx.sandboxMove.moveContext(course.id, course.organizationId, school.id, lmsCourseId))) continue;
      movedCourses += 1;
      for (const member of await tx.members.listByContext(course.id)) {
        const user = await tx.users.get(member.userId);
        if (!user || user.organizationId === school.id) continue;
        const same = await tx.users.findByExternal(school.id, user.externalId);
        if (same) await tx.sandboxMove.setMemberUser(member.id, same.id);
        else await tx.sandboxMove.moveUser(user.id, user.organizationId, school.id);
      }
      for (const link of links) {
        await tx.lti.bindResourceLink(school.id, link.linkId, link.placementId);
        if (link.column !== null) await tx.placements.setLineItem(link.placementId, link.column);
      }
      // Carried into the LMS's gradebook: the S-12 columns and scores of the course are not read again.
      await tx.gradebook.deleteForContext(course.id);
    }
  });
  if (movedCourses > 0) services.log.info('older Sandbox courses moved into the Sandbox LMS', { app: appId, courses: movedCourses });
}

/** A course of this LMS under an earlier `PUBLIC_URL`'s school already has an LMS course ID of the tool's. */
function ownLmsId(appId: string, course: ContextRecord): string | null {
  return course.externalId.startsWith(`sandbox-${appId}-`) ? course.externalId : null;
}

/** The LMS course of a moved course: a copy of its parent's LMS course when the parent moved too, with the trial users. */
async function makeLmsCourse(services: Services, deploymentId: string, course: ContextRecord, lmsCourseId: string, parentLmsId: string | null): Promise<void> {
  const lms = sandboxLmsClient(services);
  const fields = { id: lmsCourseId, title: course.name, label: course.label ?? '' };
  if (parentLmsId !== null) await exists(() => lms.copyCourse(parentLmsId, { ...fields, with_links: false, with_enrolments: true }));
  else await exists(() => lms.createCourse({ ...fields, deployment_id: deploymentId }));
  await enrolLmsTrialUsers(services, lmsCourseId);
}

/**
 * The placement's LMS resource link (found by `custom.tis_placement`, or made with the S-12 column's label
 * and points, or for a placement an LMS gave its column, the entry's), and the S-12 column's latest scores
 * of the trial users carried into the link's column.
 */
async function carryPlacement(services: Services, lmsCourseId: string, placement: PlacementRecord, accessToken: () => Promise<string>): Promise<MovedLink> {
  const lms = sandboxLmsClient(services);
  // An S-12 placement's line item is its column's ID in the S-12 gradebook; an LMS's is an absolute URL.
  const s12Column = placement.lineItemId !== null && !/^https?:\/\//i.test(placement.lineItemId) ? await services.store.gradebook.getLineItem(placement.lineItemId) : null;
  const course = await lms.course(lmsCourseId);
  let link = course.resource_links.find((l) => l.custom[PLACEMENT_PARAMETER] === placement.resourceLink);
  if (!link) {
    const column = s12Column
      ? { label: s12Column.label, score_maximum: s12Column.scoreMaximum }
      : placement.lineItemId !== null
        ? { label: placement.entry.label, score_maximum: placement.entry.points ?? 100 }
        : null;
    link = await lms.createLink(lmsCourseId, {
      title: placement.entry.label,
      custom: { [PLACEMENT_PARAMETER]: placement.resourceLink },
      line_item: column && { ...column, ...(placement.entry.extid !== null ? { resource_id: placement.entry.extid } : {}) },
    });
  }
  const column = link.line_items[0]?.id ?? null;
  if (s12Column && column !== null) await carryScores(services, s12Column, column, accessToken);
  return { placementId: placement.id, linkId: link.id, column };
}

async function carryScores(services: Services, s12Column: LineItemRecord, column: string, accessToken: () => Promise<string>): Promise<void> {
  for (const score of await services.store.gradebook.listScores(s12Column.id)) {
    const user = await services.store.users.get(score.userId);
    // Only the trial users are people of the LMS course; S-12 scored no one else in a Sandbox course.
    if (!user || !roleOfTrialUser(user)) continue;
    await postScore(services, column, user.externalId, score, await accessToken());
  }
}

async function postScore(services: Services, column: string, sub: string, score: GradebookScoreRecord, token: string): Promise<void> {
  const body: Record<string, unknown> = {
    userId: sub,
    timestamp: score.timestamp,
    activityProgress: score.activityProgress,
    gradingProgress: score.gradingProgress,
  };
  if (score.scoreGiven !== null) body['scoreGiven'] = score.scoreGiven;
  if (score.scoreMaximum !== null) body['scoreMaximum'] = score.scoreMaximum;
  if (score.comment !== '') body['comment'] = score.comment;
  const url = scoresUrl(column);
  const res = await fetch(services.sandboxLms.transport(url), {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': AGS_MEDIA_TYPES.score },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  // 409: the column holds this score already (a need on another instance carried it) or a newer one.
  if (res.ok || res.status === 409) return;
  throw new SandboxLmsControlError(res.status, `POST ${new URL(url).pathname}`, text.slice(0, 300));
}

/** An AGS access token of the service's registration with its LMS, with the score scope, as the publisher asks one. */
async function agsToken(services: Services, registration: LtiRegistrationRecord): Promise<string> {
  const form = await clientCredentialsForm(services.signer, services.clock, { clientId: registration.clientId, audience: registration.tokenAudience ?? registration.tokenUrl }, [AGS_SCOPE.score]);
  const res = await fetch(services.sandboxLms.transport(registration.tokenUrl), {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
    body: form.toString(),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let token: unknown;
  try {
    token = res.ok ? (JSON.parse(text) as { access_token?: unknown }).access_token : undefined;
  } catch {
    token = undefined;
  }
  if (typeof token !== 'string') throw new SandboxLmsControlError(res.status, `POST ${new URL(registration.tokenUrl).pathname}`, text.slice(0, 300));
  return token;
}
