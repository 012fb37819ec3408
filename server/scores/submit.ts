/**
 * One score submission, after the guard allowed it (`scoreGuard`) and the validator passed its body:
 * the assessment check, the records it is published against, and the publication with its one attempt
 * (`publishAttempt`, which says why the attempt is written only after publishing).
 */
import type { ScoreGuardResult } from '../auth/score-permissions.js';
import { authorizeScore, factsOf, keepScoreFacts, SCORE_MESSAGES } from '../auth/score-permissions.js';
import { Problem } from '../http/problem.js';
import type { AttemptRecord, MemberRecord, PlacementRecord, ScoreRead, Store } from '../store/index.js';
import { scoreReadOf, scoreReadStatement } from '../store/repos/placements.js';
import type { AttemptToPublish, PublishDeps, ScoredRecords } from './publish.js';
import { publishAttempt } from './publish.js';
import type { ScoreSubmission } from './validate.js';
import type { ActivityProgress, GradingProgress } from '../store/index.js';

/** The attempt as the contract's Grade attempt resource (the response of both score operations). */
export interface GradeAttemptJson {
  id: string;
  status: 'success' | 'failed';
  score: number;
  max_score: number | null;
  activity_progress: ActivityProgress;
  grading_progress: GradingProgress;
  submitted: string;
  member: string;
  location: string;
  app: string;
  context: string;
  data: {
    comment: string;
    response: { status: number; body: string } | null;
    error: string;
    source_type: 'session' | 'api_key';
    source_id: string;
  };
}

export function attemptJson(attempt: AttemptRecord): GradeAttemptJson {
  const response = attempt.response;
  return {
    id: attempt.id,
    // Attempts written by `record` are finished; `pending` belongs to the store's older two-step API.
    status: attempt.status === 'success' ? 'success' : 'failed',
    score: attempt.score,
    max_score: attempt.maxScore,
    activity_progress: attempt.activityProgress,
    grading_progress: attempt.gradingProgress,
    submitted: attempt.submitted,
    member: attempt.memberId,
    location: attempt.locationId,
    app: attempt.appId,
    context: attempt.contextId,
    data: {
      comment: attempt.comment,
      response:
        response === null
          ? null
          : { status: response.status, body: typeof response.body === 'string' ? response.body : JSON.stringify(response.body) },
      error: attempt.error,
      source_type: attempt.sourceType,
      source_id: attempt.sourceId,
    },
  };
}

export type SubmitDeps = PublishDeps;

/**
 * Which gradebook column a score goes to when the tool placed the location more than once in the course
 * (two instructors' links): the placement the session's launch came from, else the first assessment
 * placement that has a column, else the first assessment placement (whose missing column fails the attempt).
 */
async function choosePlacement(
  store: Store,
  guarded: ScoreGuardResult,
  placements: readonly PlacementRecord[],
): Promise<PlacementRecord | null> {
  const assessments = placements.filter((p) => p.entry.type === 'assessment');
  if (assessments.length === 0) return null;
  // One placement leaves no choice: its launch need not be read.
  if (assessments.length === 1) return assessments[0] ?? null;
  const principal = guarded.principal;
  if (principal.kind === 'session' && principal.token.launchId !== null) {
    const launch = await store.launches.get(principal.token.launchId);
    const own = launch ? assessments.find((p) => p.id === launch.placementId) : undefined;
    if (own) return own;
  }
  return assessments.find((p) => p.lineItemId !== null) ?? assessments[0] ?? null;
}

/** The records a score is published against, out of what the guard (or the transaction) read. */
async function scoredRecordsOf(
  store: Store,
  guarded: ScoreGuardResult,
  member: MemberRecord | null,
  scored: ScoreRead['scored'],
): Promise<ScoredRecords> {
  const placement = await choosePlacement(store, guarded, scored?.placements ?? []);
  if (!placement) throw new Problem(422, 'not_assessment', SCORE_MESSAGES.notAssessment);
  if (!scored || !member || !scored.user) {
    // The guard allowed a member of the course, so only its person's row being gone gets here.
    const { target } = guarded;
    throw new Problem(404, 'member_not_found', SCORE_MESSAGES.memberNotInContext(target.memberId, target.contextId));
  }
  const { app, context, location, organization, user, gradeService } = scored;
  return { app, organization, context, location, placement, member, user, gradeService };
}

/**
 * The guard decided on facts this instance kept (PERF-172): the transaction's first exchange reads them
 * again, and the score is decided and published on that read, which the instance keeps in their place.
 */
function recheckOf(store: Store, guarded: ScoreGuardResult): NonNullable<AttemptToPublish['recheck']> {
  const { target, callerUserId } = guarded;
  const read = scoreReadStatement(target.contextId, target.appId, target.locationId, target.memberId, callerUserId);
  return {
    statements: [{ ...read, arrays: true }],
    records: async ([result]) => {
      const fresh = scoreReadOf((result?.rows ?? []) as unknown[][]);
      const decision = authorizeScore(guarded.principal, target, guarded.form, factsOf(fresh));
      keepScoreFacts(store, target, callerUserId, decision.allowed ? fresh : null);
      if (!decision.allowed) throw decision.problem;
      return scoredRecordsOf(store, guarded, fresh.member, fresh.scored);
    },
  };
}

export async function submitScore(
  deps: SubmitDeps,
  guarded: ScoreGuardResult,
  submission: ScoreSubmission,
  { onRecorded, claim, epoch }: Pick<AttemptToPublish, 'onRecorded' | 'claim' | 'epoch'> = {},
): Promise<GradeAttemptJson> {
  const { store } = deps;
  // Each row once: the member, the placements with the app, course, school, location, person and grade
  // service as the guard read them, in its one statement (PERF-41, PERF-50, PERF-70).
  const records = await scoredRecordsOf(store, guarded, guarded.member, guarded.scored);

  const published = await publishAttempt(deps, {
    records,
    submission,
    source: { type: guarded.sourceType, id: guarded.sourceId },
    ...(onRecorded ? { onRecorded } : {}),
    ...(guarded.kept ? { recheck: recheckOf(store, guarded) } : {}),
    ...(claim ? { claim } : {}),
    ...(epoch ? { epoch } : {}),
  });
  const { attempt, outcome } = published;
  const { app, context, location } = published.records;
  // A published score is already in the access log line (200, submitScore) and in the grade history; only
  // an attempt the LMS did not take says more here, so the operator sees why (PERF-47).
  if (outcome.status !== 'success') {
    deps.log.info('score attempt failed', {
      attempt: attempt.id,
      app: app.id,
      context: context.id,
      location: location.id,
      lms_status: outcome.response?.status ?? null,
      error: outcome.error,
    });
  }
  return attemptJson(attempt);
}
