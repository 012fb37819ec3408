/**
 * The step every score takes to the gradebook, whichever operation received it (the current contract's
 * score operations, the archived contracts' launch-keyed grades), so the two cannot drift apart.
 *
 * "Attempts are never updated": the `submitted` timestamp is reserved first, in its own transaction
 * (strictly later than every earlier reservation or attempt of the member at the location, across
 * processes, S-12), the score is published with it, and only then is the attempt written, once, with its
 * final outcome. A process killed between publishing and writing leaves a score in the LMS without its
 * attempt in the grade history; the caller saw no 200 and submits again, and the resubmission's later
 * timestamp supersedes. The alternative (a pending row completed afterwards) would update attempts.
 */
import type { Logger } from '../http/log.js';
import type { AttemptRecord, AttemptSourceType, Store } from '../store/index.js';
import type { Publication, PublicationOutcome, Publisher } from './publisher.js';
import { failed } from './publisher.js';
import { inSubmittedOrder } from './ordering.js';
import type { ScoreSubmission } from './validate.js';

export interface PublishDeps {
  store: Store;
  publisher: Publisher;
  log: Logger;
}

/** The records a score is published against: whose score, in which course, to which gradebook column. */
export type ScoredRecords = Pick<Publication, 'app' | 'organization' | 'context' | 'location' | 'placement' | 'member' | 'user'>;

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
  const { member, location } = records;
  // Reservation and publication in one queue per member and location, so the LMS receives the scores
  // in `submitted` order (LTI-16); the attempt is written after, outside it.
  const { instant, kept, outcome } = await inSubmittedOrder(store, member.id, location.id, async () => {
    const reserved = await store.attempts.reserveSubmitted(member.id, location.id);
    const { instant, kept } = onReserved ? await onReserved(reserved) : { instant: reserved, kept: undefined };
    const columnPoints = submission.maxScore === null ? await store.columnPoints.get(records.placement.id) : null;
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
    // Inside the queue, so the member's next score is published against the points this one set (H-03).
    if (outcome.status === 'success' && submission.maxScore !== null) {
      await store.columnPoints.set(records.placement.id, submission.maxScore);
    }
    return { instant, kept, outcome };
  });
  const attempt = await store.attempts.record({
    appId: records.app.id,
    contextId: records.context.id,
    locationId: location.id,
    memberId: member.id,
    score: submission.score,
    maxScore: submission.maxScore,
    comment: submission.comment,
    activityProgress: submission.activityProgress,
    gradingProgress: submission.gradingProgress,
    sourceType: input.source.type,
    sourceId: input.source.id,
    submittedUs: instant.submittedUs,
    outcome: { status: outcome.status, response: outcome.response, error: outcome.error },
  });
  return { attempt, outcome, instant, kept };
}
