/**
 * Scores: the publisher service the app constructs, and what the score handlers use.
 *
 * `server/app.ts` builds the default publisher with `createDefaultPublisher(...)` and puts it in the
 * service container as `publisher`; tests may put any `Publisher` there instead.
 */
import type { Clock } from '../store/index.js';
import type { AssertionSigner, FetchLike } from './ags.js';
import { AgsPublisher } from './ags.js';
import type { GradeService, LmsPlatform } from './lms-registry.js';
import { createLmsRegistry } from './lms-registry.js';
import type { Publisher } from './publisher.js';
import type { OrganizationRecord } from '../store/index.js';

declare module '../http/services.js' {
  interface Services {
    /** Publishes scores to the LMS gradebook (LTI AGS by default). */
    publisher: Publisher;
  }
}

export interface DefaultPublisherOptions {
  signer: AssertionSigner;
  /** Schools with a real LMS registration (`server/lti/platforms.ts`). */
  schools?: (organization: OrganizationRecord, known?: GradeService | null) => Promise<LmsPlatform | null>;
  clock?: Clock;
  fetch?: FetchLike;
  timeoutMs?: number;
}

export function createDefaultPublisher(options: DefaultPublisherOptions): AgsPublisher {
  return new AgsPublisher({
    signer: options.signer,
    registry: createLmsRegistry({
      ...(options.schools ? { schools: options.schools } : {}),
    }),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
}

export type { Publisher, Publication, PublicationOutcome, LmsResponse } from './publisher.js';
export { AgsPublisher, LINE_ITEM_SCOPE_WITHHELD } from './ags.js';
export type { AssertionSigner, FetchLike } from './ags.js';
export { createLmsRegistry } from './lms-registry.js';
export type { GradeService, LmsPlatform, LmsRegistry } from './lms-registry.js';
export { submitScore, attemptJson } from './submit.js';
export { publishAttempt } from './publish.js';
export type { PublishDeps, ScoredRecords, SubmittedInstant } from './publish.js';
export type { GradeAttemptJson } from './submit.js';
export { parseScoreSubmission, SCORE_BODY_MESSAGES } from './validate.js';
