/**
 * The rules of a score submission's body with the contract's exact messages (Errors › Grade submission,
 * decisions GAP-22 and NS-20). The request validator checks the same rules against the spec first; this is
 * what the handler relies on, so a body can never be published on a looser reading than the table's.
 *
 * When a body breaks several rules, one answer is given, in the precedence of the validator's mapping
 * (`server/http/validation-errors.ts`, the contract's table order): score range, max_score, activity_progress,
 * grading_progress, score missing, score not a number, max_score not a number, comment, unknown field.
 */
import { schemas } from '../../generated/2026-09-21/schemas.js';
import { fillMessage } from '../../rules/messages.js';
import { Problem } from '../http/problem.js';
import type { ActivityProgress, GradingProgress } from '../store/index.js';

export interface ScoreSubmission {
  score: number;
  maxScore: number | null;
  comment: string;
  activityProgress: ActivityProgress;
  gradingProgress: GradingProgress;
}

// The fields, values and defaults the spec states (lockstep, decision KIT-04): a value or field added to the
// spec and generated is accepted here without an edit. The store's types are checked against these values
// where it declares them (server/store/repos/attempts.ts), since its columns admit a fixed set.
export const ACTIVITY_PROGRESS: readonly ActivityProgress[] = schemas.ActivityProgress.enum;
export const GRADING_PROGRESS: readonly GradingProgress[] = schemas.GradingProgress.enum;
const FIELDS: readonly string[] = Object.keys(schemas.ScoreSubmission.properties);
const DEFAULTS = {
  activityProgress: schemas.ActivityProgress.default,
  gradingProgress: schemas.GradingProgress.default,
  comment: schemas.ScoreSubmission.properties.comment.default,
} as const;

// The messages are the spec's `x-messages`, filled with the limits and values it states (decision KIT-20).
const MESSAGES = schemas.ScoreSubmission['x-messages'];
export const SCORE_BODY_MESSAGES = {
  notAnObject: MESSAGES.not_an_object,
  unknownField: (name: string) => fillMessage(MESSAGES.unknown_field, { name }),
  scoreRequired: MESSAGES.score_required,
  scoreNotANumber: MESSAGES.score_not_a_number,
  scoreOutOfRange: fillMessage(MESSAGES.score_out_of_range, { minimum: schemas.ScoreFraction.minimum, maximum: schemas.ScoreFraction.maximum }),
  maxScoreNotANumber: MESSAGES.max_score_not_a_number,
  maxScoreNotPositive: fillMessage(MESSAGES.max_score_not_positive, {
    exclusive_minimum: schemas.ScoreSubmission.properties.max_score.exclusiveMinimum,
  }),
  activityProgress: fillMessage(MESSAGES.activity_progress, { values: ACTIVITY_PROGRESS.join(', ') }),
  gradingProgress: fillMessage(MESSAGES.grading_progress, { values: GRADING_PROGRESS.join(', ') }),
  commentNotAString: MESSAGES.comment_not_a_string,
  commentHasNul: MESSAGES.comment_has_nul,
} as const;

function invalid(code: string, field: string | null, message: string): Problem {
  return new Problem(422, code, message, field === null ? {} : { errors: [{ path: `/body/${field}`, message }] });
}

export function parseScoreSubmission(body: unknown): ScoreSubmission {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid('invalid_body', null, SCORE_BODY_MESSAGES.notAnObject);
  }
  const o = body as Record<string, unknown>;
  const score = o['score'];
  const maxScore = o['max_score'];
  const activity = o['activity_progress'] === undefined ? DEFAULTS.activityProgress : o['activity_progress'];
  const grading = o['grading_progress'] === undefined ? DEFAULTS.gradingProgress : o['grading_progress'];
  const comment = o['comment'] === undefined ? DEFAULTS.comment : o['comment'];
  const unknown = Object.keys(o).find((k) => !FIELDS.includes(k));
  const isNumber = (v: unknown): v is number => typeof v === 'number' && !Number.isNaN(v);

  // Every rule the body breaks, in the order of precedence; the first one is the answer.
  const broken: Array<[boolean, () => Problem]> = [
    [isNumber(score) && !(score >= 0 && score <= 1), () => invalid('score_out_of_range', 'score', SCORE_BODY_MESSAGES.scoreOutOfRange)],
    [
      isNumber(maxScore) && !(maxScore > 0 && Number.isFinite(maxScore)),
      () => invalid('max_score_not_positive', 'max_score', SCORE_BODY_MESSAGES.maxScoreNotPositive),
    ],
    [
      typeof activity !== 'string' || !(ACTIVITY_PROGRESS as readonly string[]).includes(activity),
      () => invalid('invalid_activity_progress', 'activity_progress', SCORE_BODY_MESSAGES.activityProgress),
    ],
    [
      typeof grading !== 'string' || !(GRADING_PROGRESS as readonly string[]).includes(grading),
      () => invalid('invalid_grading_progress', 'grading_progress', SCORE_BODY_MESSAGES.gradingProgress),
    ],
    [score === undefined, () => invalid('score_required', 'score', SCORE_BODY_MESSAGES.scoreRequired)],
    [score !== undefined && !isNumber(score), () => invalid('score_not_a_number', 'score', SCORE_BODY_MESSAGES.scoreNotANumber)],
    [
      maxScore !== undefined && !isNumber(maxScore),
      () => invalid('max_score_not_a_number', 'max_score', SCORE_BODY_MESSAGES.maxScoreNotANumber),
    ],
    [typeof comment !== 'string', () => invalid('invalid_comment', 'comment', SCORE_BODY_MESSAGES.commentNotAString)],
    // Invisible in any gradebook, and text PostgreSQL cannot store: refused on both stores alike.
    [typeof comment === 'string' && comment.includes('\u0000'), () => invalid('invalid_comment', 'comment', SCORE_BODY_MESSAGES.commentHasNul)],
    [unknown !== undefined, () => invalid('unknown_field', unknown ?? '', SCORE_BODY_MESSAGES.unknownField(unknown ?? ''))],
  ];
  const first = broken.find(([fails]) => fails);
  if (first) throw first[1]();

  return {
    score: score as number,
    maxScore: isNumber(maxScore) ? maxScore : null,
    comment: comment as string,
    activityProgress: activity as ActivityProgress,
    gradingProgress: grading as GradingProgress,
  };
}
