// Score submission on a launch's `grade.submit` URL (decision L-03), and the provision PUT a tool
// makes when a level is ready (decisions L-04, NS-09).

import type { components } from '../../generated/2026-09-21/types.js';
import { callJson, requireToken, requireUrl, type ToolRequestOptions, type ToolResult } from './http.js';

export type GradeAttempt = components['schemas']['GradeAttempt'];

/**
 * The body of a score submission. `comment` has a default (empty), which the generated type makes
 * required; here it is optional, as on the wire.
 */
export type ScoreSubmission = Omit<components['schemas']['ScoreSubmission'], 'comment'> & { comment?: string };

/** A submission that was not made because the launch has no gradebook column to publish to. */
export interface SkippedSubmission {
  skipped: true;
}

export type ScoreSubmissionResult = SkippedSubmission | ({ skipped: false } & ToolResult<GradeAttempt>);

/**
 * POSTs a score to `gradeSubmitUrl`, the launch's `grade.submit` claim; when that is null (no
 * gradebook column, or a location that is not an assessment) there is nothing to call and the
 * answer is `{skipped: true}`. `token` is the launch's `api.token` (acting as the launching
 * user) or the tool's API key (acting as the tool's server).
 *
 * A 200 answer is `data`, also when the LMS refused the score: then `data.status` is `failed` and
 * `data.error` says why. Only a refused request is `error`.
 */
export async function submitScore(
  gradeSubmitUrl: string | null,
  token: string,
  body: ScoreSubmission,
  options: ToolRequestOptions = {},
): Promise<ScoreSubmissionResult> {
  if (gradeSubmitUrl === null) return { skipped: true };
  const url = requireUrl(gradeSubmitUrl, 'gradeSubmitUrl');
  const result = await callJson<GradeAttempt>(url, { method: 'POST', token: requireToken(token, 'token'), json: body }, options);
  return { skipped: false, ...result };
}

/**
 * PUTs one of the `provision` claim's URLs with the request's `api.token`, telling the service
 * that the course (or location) is ready (204; idempotent). Sends no body (decision NS-09).
 */
export function markProvisioned(provisionUrl: string, token: string, options: ToolRequestOptions = {}): Promise<ToolResult<undefined>> {
  return callJson<undefined>(
    requireUrl(provisionUrl, 'provisionUrl'),
    { method: 'PUT', token: requireToken(token, 'token') },
    options,
  );
}
