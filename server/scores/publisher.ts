/**
 * The seam between recording a grade attempt and the LMS gradebook. The service records exactly one
 * attempt per call whatever the publisher answers; the publisher only says what the LMS did.
 */
import type {
  ActivityProgress,
  AppRecord,
  ContextRecord,
  GradingProgress,
  LocationRecord,
  MemberRecord,
  OrganizationRecord,
  PlacementRecord,
  UserRecord,
} from '../store/index.js';
import type { GradeService } from './lms-registry.js';

/** Everything a publisher needs to put one score in one LMS gradebook column. */
export interface Publication {
  app: AppRecord;
  organization: OrganizationRecord;
  context: ContextRecord;
  location: LocationRecord;
  /** The placement whose gradebook column receives the score. */
  placement: PlacementRecord;
  member: MemberRecord;
  /** The scored person; `externalId` is the LMS user id, which never leaves the service toward a tool. */
  user: UserRecord;
  /**
   * The school's grade service when it was read with the records (PERF-70; null: the school has none);
   * absent, the registry reads it.
   */
  gradeService?: GradeService | null;
  /** The fraction sent, 0 to 1. */
  score: number;
  /** The column's points to set before publishing, or null to leave the column as it is. */
  maxScore: number | null;
  /**
   * The points this service last set on the column with a `max_score` (H-03), or null when it never did.
   * A score without `max_score` is published against them: the column is left as set, so the LMS must
   * read the score against the points it holds, not the location's default.
   */
  columnPoints?: number | null;
  comment: string;
  activityProgress: ActivityProgress;
  gradingProgress: GradingProgress;
  /** The attempt's `submitted` (ISO 8601, six fractional digits): the score's timestamp in the LMS. */
  timestamp: string;
}

/** What the LMS answered, as the attempt's `data.response`. `body` is the response text as received. */
export interface LmsResponse {
  status: number;
  body: string;
}

export type PublicationOutcome =
  | { status: 'success'; response: LmsResponse; error: '' }
  /** `response` is null when the attempt never reached the LMS (no line item, scope withheld, network). */
  | { status: 'failed'; response: LmsResponse | null; error: string };

export interface Publisher {
  /** Never throws for anything the LMS or the network does: those are failed outcomes. */
  publish(publication: Publication): Promise<PublicationOutcome>;
  /**
   * Drops the LMS access tokens this process keeps for one client, when the publisher keeps any: its LMS
   * changed what it grants (the Sandbox's line-item scope, decision LTI-49).
   */
  forgetClient?(tokenUrl: string, clientId: string): void;
}

/**
 * The column's points a score is published against: `max_score` when sent (it sets them first), else the
 * points this service last set on the column (H-03), else the location's. The attempt keeps them (OPS-50).
 */
export function pointsOf(p: Pick<Publication, 'maxScore' | 'columnPoints' | 'placement' | 'location'>): number {
  return p.maxScore ?? p.columnPoints ?? p.placement.entry.points ?? p.location.points ?? 100;
}

export function failed(error: string, response: LmsResponse | null = null): PublicationOutcome {
  return { status: 'failed', response, error };
}
