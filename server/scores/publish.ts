/**
 * The step every score takes to the gradebook, whichever operation received it (the current contract's
 * score operations, the archived contracts' launch-keyed grades), so the two cannot drift apart.
 *
 * "Attempts are never updated": inside the pair's publication order (`inSubmittedOrder`: one queue per
 * member and location and process, and on PostgreSQL the pair's advisory lock), the `submitted` instant
 * is read (strictly later than every earlier attempt or reservation of the member at the location, S-12),
 * the score is published with it, and the attempt is written once, with its final outcome, in ONE
 * transaction with what the publication settled (the column's points, H-03; the `Idempotency-Key`, H-07),
 * which the attempts of other pairs answered at the same time share (`attempt-writes.ts`, PERF-101).
 * The order is held until that commit, so the next score of the pair reads this one's instant (PERF-40).
 * A process killed between publishing and writing leaves a score in the LMS without its attempt in the
 * grade history; the caller saw no 200 and submits again, and the resubmission's later timestamp
 * supersedes. The alternative (a pending row completed afterwards) would update attempts.
 */
import type { Logger } from '../http/log.js';
import type { AttemptRecord, AttemptSourceType, Repositories, Store } from '../store/index.js';
import type { Publication, PublicationOutcome, Publisher } from './publisher.js';
import { failed, pointsOf } from './publisher.js';
import { inSubmittedOrder } from './ordering.js';
import { writeWithOthers } from './attempt-writes.js';
import type { ScoreSubmission } from './validate.js';

export interface PublishDeps {
  store: Store;
  publisher: Publisher;
  log: Logger;
}

/** The records a score is published against: whose score, in which course, to which gradebook column. */
export type ScoredRecords = Pick<Publication, 'app' | 'organization' | 'context' | 'location' | 'placement' | 'member' | 'user' | 'gradeService'>;

export interface SubmittedInstant {
  submittedUs: number;
  /** The same instant as ISO 8601 with six fractional digits. */
  submitted: string;
}

export interface AttemptToPublish {
  records: ScoredRecords;
  submission: ScoreSubmission;
  /** Who submitted, as the attempt records it. */
  source: { type: AttemptSourceType; id: string };
  /** What names the submission in the log line of a publisher that threw, beside the app, course and location. */
  logFields?: Readonly<Record<string, unknown>>;
  /** Writes what the caller keeps about the attempt (an `Idempotency-Key`'s answer) in the attempt's own transaction. */
  onRecorded?: (tx: Repositories, attempt: AttemptRecord) => Promise<void>;
}

/**
 * Runs once the instant is reserved and before the score leaves: a caller that keeps its own record of
 * the submission writes it here with that instant and gets it back as `kept`. The publication and the
 * attempt carry the instant it answers (a record that must stay later than its own previous one may move it).
 */
export type OnReserved<K> = (reserved: SubmittedInstant) => Promise<{ instant: SubmittedInstant; kept: K }>;

export interface PublishedAttempt<K = undefined> {
  attempt: AttemptRecord;
  outcome: PublicationOutcome;
  /** The instant the score was published with and the attempt recorded at. */
  instant: SubmittedInstant;
  kept: K;
}

export function publishAttempt(deps: PublishDeps, input: AttemptToPublish): Promise<PublishedAttempt>;
export function publishAttempt<K>(deps: PublishDeps, input: AttemptToPublish, onReserved: OnReserved<K>): Promise<PublishedAttempt<K>>;
export async function publishAttempt<K>(
  deps: PublishDeps,
  input: AttemptToPublish,
  onReserved?: OnReserved<K>,
): Promise<PublishedAttempt<K | undefined>> {
  const { store } = deps;
  const { records, submission } = input;
  const { member, location, placement } = records;
  // Instant, publication and attempt in one queue per member and location, so the LMS receives the
  // scores in `submitted` order (LTI-16) and the next one's instant is read after this one's attempt.
  const { attempt, instant, kept, outcome } = await inSubmittedOrder(store, member.id, location.id, async () => {
    // The instant and, for a score without `max_score`, the column's points, in one statement (PERF-49).
    const { columnPoints, ...next } = await store.attempts.nextPublication(member.id, location.id, submission.maxScore === null ? placement.id : null);
    const { instant, kept } = onReserved ? await onReserved(next) : { instant: next, kept: undefined };
    let outcome: PublicationOutcome;
    try {
      outcome = await deps.publisher.publish({
        ...records,
        score: submission.score,
        maxScore: submission.maxScore,
        columnPoints,
        comment: submission.comment,
        activityProgress: submission.activityProgress,
        gradingProgress: submission.gradingProgress,
        timestamp: instant.submitted,
      });
    } catch (err) {
      // A publisher bug must not lose the attempt: the call still records one, failed.
      deps.log.error('score publication threw', {
        err,
        app: records.app.id,
        context: records.context.id,
        location: location.id,
        ...input.logFields,
      });
      outcome = failed('the publication failed inside the service; nothing is known to have reached the LMS');
    }
    // In one transaction with the attempts of the other scores answered in this turn (PERF-101).
    const attempt = await writeWithOthers(store, async (tx) => {
      const written = await tx.attempts.record({
        appId: records.app.id,
        contextId: records.context.id,
        locationId: location.id,
        memberId: member.id,
        score: submission.score,
        maxScore: submission.maxScore,
        points: pointsOf({ maxScore: submission.maxScore, columnPoints, placement, location }),
        comment: submission.comment,
        activityProgress: submission.activityProgress,
        gradingProgress: submission.gradingProgress,
        sourceType: input.source.type,
        sourceId: input.source.id,
        submittedUs: instant.submittedUs,
        outcome: { status: outcome.status, response: outcome.response, error: outcome.error },
      });
      // Inside the order, so the member's next score is published against the points this one set (H-03).
      if (outcome.status === 'success' && submission.maxScore !== null) await tx.columnPoints.set(placement.id, submission.maxScore);
      if (input.onRecorded) await input.onRecorded(tx, written);
      return written;
    });
    return { attempt, instant, kept, outcome };
  });
  return { attempt, outcome, instant, kept };
}
