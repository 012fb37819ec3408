/**
 * Launch-keyed grades (`POST /v1/grades`, `GET /v1/grades/{grade_id}`), once for both archived contracts
 * (decisions NS-19, S-15, S-39, GAP-43). One grade per launch: a submission creates it or resets it to pending,
 * the score is published through the service's publisher within the request, and the grade ends synced
 * or failed. Each publication is also recorded as a grade attempt of the launch's member and location, so
 * the dashboard's grade history lists it like any other (S-13).
 *
 * Checks in the contract's order: the key (401, before this module), the body (422), the launch (404
 * `Launch not found`, also for another tool's launch), then not an assessment, then no grade passback.
 */
import { randomBytes } from 'node:crypto';
import type { Services } from '../../http/services.js';
import type { Logger } from '../../http/log.js';
import { Problem } from '../../http/problem.js';
import type { GuardContext } from '../../http/registry.js';
import { isSandboxOf } from '../../placements/availability.js';
import { publishAttempt } from '../../scores/publish.js';
import type { ScoreSubmission } from '../../scores/validate.js';
import { parseScoreSubmission } from '../../scores/validate.js';
import '../../scores/index.js';
import type { AppRecord, LaunchGradeRecord, LaunchRecord } from '../../store/index.js';
import { isoFromUs, nowUs } from '../../store/index.js';
import { ARCHIVED_MESSAGES as M, unprocessable } from './messages.js';
import type { ArchivedVersion } from './version.js';
import { callingApp } from './version.js';

/** The grade record both versions share; 2026-08-25 adds `max_score`. */
export interface GradeRecord0819 {
  grade_id: string;
  launch_id: string;
  score: number;
  sync_status: 'pending' | 'synced' | 'failed';
  sync_error: string | null;
  submitted_at: string;
  synced_at: string | null;
}
export interface GradeRecord0825 extends GradeRecord0819 {
  max_score: number | null;
}

export interface GradeSubmission extends ScoreSubmission {
  launchId: string;
}

export function grade0819(grade: LaunchGradeRecord): GradeRecord0819 {
  return {
    grade_id: grade.id,
    launch_id: grade.launchId,
    score: grade.score,
    sync_status: grade.syncStatus,
    sync_error: grade.syncError,
    submitted_at: grade.submittedAt,
    synced_at: grade.syncedAt,
  };
}

export function grade0825(grade: LaunchGradeRecord): GradeRecord0825 {
  return { ...grade0819(grade), max_score: grade.maxScore };
}

/** The body with the contract's messages; the validator has already refused what the spec refuses. */
export function parseGradeSubmission(body: unknown, version: ArchivedVersion): GradeSubmission {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw unprocessable('invalid_body', 'the score submission must be a JSON object');
  }
  const { launch_id: launchId, ...rest } = body as Record<string, unknown>;
  if (launchId === undefined || launchId === '') throw unprocessable('launch_id_required', M.launchIdRequired, 'launch_id');
  if (typeof launchId !== 'string') throw unprocessable('invalid_launch_id', M.launchIdNotAString, 'launch_id');
  // No max_score before 2026-08-25 (GAP-42): an unknown field like any other.
  if (version === '2026-08-19' && 'max_score' in rest) throw unprocessable('unknown_field', M.unknownField('max_score'), 'max_score');
  return { launchId, ...parseScoreSubmission(rest) };
}

/** A launch of the calling tool, or 404: another tool's launch looks exactly like an unknown one. */
async function launchOf(services: Services, app: AppRecord, launchId: string): Promise<LaunchRecord> {
  // No launch ID holds U+0000, and PostgreSQL could not even compare one: unknown on both stores alike.
  if (launchId.includes('\u0000')) throw new Problem(404, 'launch_not_found', M.launchNotFound);
  const launch = await services.store.launches.get(launchId);
  if (!launch || launch.appId !== app.id) throw new Problem(404, 'launch_not_found', M.launchNotFound);
  return launch;
}

/**
 * A Test-tab trial: a launch made in the tool's own Sandbox course (or recorded as a trial by the launch
 * page). 2026-08-25 answers it without storing or publishing anything (GAP-43); 2026-08-19 has no such
 * thing, so there the launch is unknown (S-15).
 */
async function isTrial(services: Services, app: AppRecord, launch: LaunchRecord): Promise<boolean> {
  if (launch.trial) return true;
  const context = await services.store.contexts.get(launch.contextId);
  return context !== null && isSandboxOf(context, app);
}

/** The eligibility checks, in the contract's order: the location's type, then the gradebook column. */
async function checkEligible(services: Services, launch: LaunchRecord, version: ArchivedVersion): Promise<void> {
  const placement = launch.placementId === null ? null : await services.store.placements.get(launch.placementId);
  const location = await services.store.locations.get(launch.locationId);
  // 2026-08-25 launches carried the placement's copy of the entry; 2026-08-19 ones the stored location's
  // current values (S-16), so each version judges by what its launches said.
  const type = version === '2026-08-19' ? (location?.type ?? placement?.entry.type) : (placement?.entry.type ?? location?.type);
  if (type !== 'assessment') throw unprocessable('launch_not_assessment', M.notAssessment);
  if (!launch.gradePassback || placement === null) throw unprocessable('no_grade_passback', M.noGradePassback);
}

export interface SubmitGradeDeps {
  services: Services;
  log: Logger;
}

export async function submitGrade(deps: SubmitGradeDeps, app: AppRecord, body: unknown, version: ArchivedVersion): Promise<LaunchGradeRecord> {
  const { services } = deps;
  const { store } = services;
  const { launchId, ...submission } = parseGradeSubmission(body, version);
  const launch = await launchOf(services, app, launchId);
  const trial = await isTrial(services, app, launch);
  if (trial && version === '2026-08-19') throw new Problem(404, 'launch_not_found', M.launchNotFound);
  await checkEligible(services, launch, version);

  if (trial) {
    const now = isoFromUs(nowUs(services.clock));
    return {
      id: `trial_${randomBytes(15).toString('base64url')}`,
      appId: app.id,
      launchId: launch.id,
      ...submission,
      syncStatus: 'synced',
      syncError: null,
      submittedAt: now,
      submittedUs: nowUs(services.clock),
      syncedAt: now,
      createdAt: services.clock.nowMs(),
      updatedAt: services.clock.nowMs(),
    };
  }

  const placement = launch.placementId === null ? null : await store.placements.get(launch.placementId);
  const [context, location, member] = await Promise.all([
    store.contexts.get(launch.contextId),
    store.locations.get(launch.locationId),
    store.members.getInContext(launch.contextId, launch.memberId),
  ]);
  const organization = context ? await store.organizations.get(context.organizationId) : null;
  const user = member ? await store.users.get(member.userId) : null;
  if (!placement || !context || !location || !member || !organization || !user) {
    // What the launch named has gone (a deleted course): nothing can be graded for it.
    throw new Problem(404, 'launch_not_found', M.launchNotFound);
  }

  // The same strictly increasing instant as every other score of this member at this location (the
  // gradebook refuses a score not later than the last one, S-12); the grade turns pending at it.
  const { outcome, kept: pending } = await publishAttempt(
    { store, publisher: services.publisher, log: deps.log },
    {
      records: { app, organization, context, location, placement, member, user },
      submission,
      source: { type: 'api_key', id: '' },
      logFields: { launch: launch.id },
    },
    async (reserved) => {
      const grade = await store.launchGrades.submit({
        appId: app.id,
        launchId: launch.id,
        ...submission,
        submittedUs: reserved.submittedUs,
      });
      return { instant: { submittedUs: grade.submittedUs, submitted: grade.submittedAt }, kept: grade };
    },
  );
  const marked =
    outcome.status === 'success'
      ? await store.launchGrades.markSynced(pending.id, pending.submittedUs)
      : await store.launchGrades.markFailed(pending.id, outcome.error, pending.submittedUs);
  deps.log.info('launch grade published', { grade: pending.id, launch: launch.id, status: outcome.status, at: pending.submittedAt });
  // A resubmission that arrived meanwhile owns the stored record now; this answer describes this one.
  if (marked && marked.submittedUs === pending.submittedUs) return marked;
  const syncedAt = outcome.status === 'success' ? isoFromUs(nowUs(services.clock)) : null;
  return {
    ...pending,
    syncStatus: outcome.status === 'success' ? 'synced' : 'failed',
    syncError: outcome.status === 'success' ? null : outcome.error,
    syncedAt,
  };
}

/** The guard of `GET /v1/grades/{grade_id}`: the calling tool's grade, or 404 (trial IDs were never stored). */
export async function gradeGuard(ctx: GuardContext<unknown>): Promise<LaunchGradeRecord> {
  const app = callingApp(ctx.principal);
  const id = (ctx.params as { grade_id?: string }).grade_id ?? '';
  const grade = await ctx.services.store.launchGrades.getForApp(app.id, id);
  if (!grade) throw new Problem(404, 'grade_not_found', M.gradeNotFound);
  return grade;
}
