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
import type { RequestEpoch } from '../auth/credential-facts.js';
import type { Logger } from '../http/log.js';
import type { AttemptRecord, AttemptSourceType, BatchResult, BatchStatement, Repositories, Store } from '../store/index.js';
import { nextPublicationOf, nextPublicationStatement } from '../store/repos/attempts.js';
import { credentialEpochOf, credentialEpochStatement } from '../store/repos/credential-epoch.js';
import type { Publication, PublicationOutcome, Publisher } from './publisher.js';
import { failed, pointsOf } from './publisher.js';
import { inSubmittedOrder } from './ordering.js';
import type { PairTransaction } from './ordering.js';
import type { Clock } from '../store/time.js';
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
  /**
   * On PostgreSQL's pair transaction (PERF-171), reads sent with its first exchange, and the records made
   * from their results, which replace `records` (or refuse the score, by throwing, before anything is
   * published): the guard decided on facts this instance kept (PERF-172), and these are read as of the
   * transaction. Unused on SQLite, whose guard read its facts for this request.
   */
  recheck?: { statements: readonly BatchStatement[]; records(results: BatchResult[]): Promise<ScoredRecords> };
  /**
   * On PostgreSQL's pair transaction, the caller's claim (an `Idempotency-Key`, PERF-173) sent in its first
   * exchange; `settle` throws to stop the publication (the key is held), rolling the transaction back.
   */
  claim?: {
    statements(clock: Clock): readonly BatchStatement[];
    settle(results: BatchResult[], pair: PairTransaction): Promise<void>;
  };
  /**
   * The credential epoch the request took on trust and has yet to confirm (PERF-216): on PostgreSQL it is
   * read in the pair transaction's first exchange and confirmed on that read before the facts are judged,
   * the key claimed or anything published (a stale one rolls the transaction back and the request is run
   * again). Without a pair transaction (SQLite) the caller has confirmed it before writing anything, the key's
   * claim included, so nothing is left pending here.
   */
  epoch?: RequestEpoch;
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
  /** The records it was published against (`recheck`'s when given). */
  records: ScoredRecords;
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
  const { submission } = input;
  const { member, location } = input.records;
  // Instant, publication and attempt in one queue per member and location, so the LMS receives the
  // scores in `submitted` order (LTI-16) and the next one's instant is read after this one's attempt.
  const { attempt, instant, kept, outcome, records } = await inSubmittedOrder(store, member.id, location.id, async (pair) => {
    // The instant and, for a score without `max_score`, the column's points, in one statement (PERF-49).
    let records = input.records;
    const pointsColumn = (placementId: string): string | null => (submission.maxScore === null ? placementId : null);
    type NextRow = Parameters<typeof nextPublicationOf>[0];
    let next: ReturnType<typeof nextPublicationOf>;
    if (pair) {
      // BEGIN, the pair's lock, the instant and points, the records' own read and the credential epoch:
      // one exchange (PERF-171, PERF-216).
      const first = nextPublicationStatement(member.id, location.id, pointsColumn(records.placement.id));
      const rechecks = input.recheck?.statements ?? [];
      const claims = input.claim?.statements(pair.clock) ?? [];
      const epoch = input.epoch?.pending() ? [credentialEpochStatement()] : [];
      const [instantRead, ...rest] = await pair.open([first, ...rechecks, ...claims, ...epoch]);
      // Before anything read is judged: the request's credential and facts held when this exchange ran.
      if (epoch.length > 0) await input.epoch?.confirm(credentialEpochOf(rest.at(-1)));
      next = nextPublicationOf(instantRead?.rows[0] as NextRow, pair.clock);
      const rechecked = rest.slice(0, rechecks.length);
      if (input.recheck) {
        const fresh = await input.recheck.records(rechecked);
        if (fresh.placement.id !== records.placement.id && submission.maxScore === null) {
          // Another column than the kept facts named (placements changed meanwhile): its own points.
          const again = nextPublicationStatement(member.id, location.id, fresh.placement.id);
          next = nextPublicationOf((await pair.run([again]))[0]?.rows[0] as NextRow, pair.clock);
        }
        records = fresh;
      }
      // After the facts, as the guard's answers come before the key's (GAP-23, H-07).
      if (input.claim) await input.claim.settle(rest.slice(rechecks.length, rechecks.length + claims.length), pair);
    } else {
      next = await store.attempts.nextPublication(member.id, location.id, pointsColumn(records.placement.id));
    }
    const { columnPoints, ...reserved } = next;
    const { placement } = records;
    const { instant, kept } = onReserved ? await onReserved(reserved) : { instant: reserved, kept: undefined };
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
    const write = async (tx: Repositories): Promise<AttemptRecord> => {
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
    };
    // PostgreSQL: with COMMIT on the pair's connection, which also ends its lock (PERF-171). SQLite: in one
    // transaction with the attempts of the other scores answered in this turn (PERF-101, PERF-141).
    const attempt = pair ? await pair.commit(write) : await writeWithOthers(store, write);
    return { attempt, instant, kept, outcome, records };
  });
  return { attempt, outcome, instant, kept, records };
}
