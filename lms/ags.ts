/**
 * Assignment and Grade Services 2.0, platform side: line items (container and item) and scores, with the
 * results read back. A score whose timestamp is not later than the last one the column applied for that
 * person is refused with 409, compared to the microsecond (AGS §3.4.7, decision S-12); a column told to
 * refuse scores (a control) answers the status it was given (decision LTI-36).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isObject, LmsError, readJson, sendEmpty, sendJson } from './http.js';
import type { Platform } from './platform.js';
import { AGS_MEDIA_TYPES, AGS_SCOPES, settingsFrom, urlOf } from './platform.js';
import type { AgsTarget } from './profiles.js';
import type { LineItemRow, ScoreRow } from './store.js';
import { enrolmentRoles, lineItemOf, nextCounter } from './store.js';
import type { EffectiveSettings } from './deployment-settings.js';
import { effectiveOf, overridesFrom, scopesIn } from './deployment-settings.js';
import type { AccessToken, AccessTokenRow } from './token.js';
import { accessTokenFrom, expiredToken, hashOf, requireScope } from './token.js';

const ACTIVITY_PROGRESS = ['Initialized', 'Started', 'InProgress', 'Submitted', 'Completed'] as const;
const GRADING_PROGRESS = ['FullyGraded', 'Pending', 'PendingManual', 'Failed', 'NotReady'] as const;

function unprocessable(field: string, message: string): LmsError {
  return new LmsError(422, 'invalid_request', message, {}, field);
}

/** A line item's columns, read under the prefix `i_` with the request's other rows (PERF-110). */
const LINE_ITEM_COLUMNS = [
  'id',
  'seq',
  'course_id',
  'label',
  'score_maximum',
  'resource_id',
  'resource_link_id',
  'tag',
  'start_date_time',
  'end_date_time',
  'refuses_scores_with',
  'created',
] as const satisfies readonly (keyof LineItemRow)[];

type Prefixed<R, P extends string> = { [K in keyof R & string as `${P}${K}`]: R[K] | null };

type AgsRow = Prefixed<AccessTokenRow, 't_'> &
  Prefixed<LineItemRow, 'i_'> & {
    c_id: string | null;
    d_client_id: string | null;
    r_grants_line_item_scope: number | null;
    s_settings: string | null;
    g_lifetimes: string | null;
  };

/**
 * Everything an AGS request is decided on, in one statement (PERF-110): the bearer token's row, the
 * course of the URL with its deployment, the deployment's registration and own settings and the LMS-wide
 * lifetimes (LTI-72, PERF-72), and the line item the URL names. Was three statements (token, course,
 * line item) after PERF-72. Still read at each request, never kept (LTI-80): another process sharing the
 * store, or a control, may have changed any of them.
 */
const AGS_READ = `SELECT t.client_id AS t_client_id, t.scopes AS t_scopes, t.expires AS t_expires, t.issued AS t_issued,
       c.id AS c_id, d.client_id AS d_client_id, r.grants_line_item_scope AS r_grants_line_item_scope, s.settings AS s_settings,
       (SELECT value FROM lms_settings WHERE name = 'lifetimes') AS g_lifetimes,
       ${LINE_ITEM_COLUMNS.map((c) => `i.${c} AS i_${c}`).join(', ')}
  FROM lms_access_tokens t
  LEFT JOIN lms_courses c ON c.id = ?
  LEFT JOIN lms_deployments d ON d.deployment_id = c.deployment_id
  LEFT JOIN lms_registrations r ON r.client_id = d.client_id
  LEFT JOIN lms_deployment_settings s ON s.deployment_id = c.deployment_id
  LEFT JOIN lms_line_items i ON i.id = ?
 WHERE t.token_hash = ?`;

interface AgsRequest {
  token: AccessToken;
  courseId: string;
  /** The line item the URL names (in the course), or null for the container. */
  item: LineItemRow | null;
}

/**
 * The token (401 when it is unknown or expired), the course when the token's client is the course's tool
 * (404 otherwise), the token's lifetime and scopes as the course's deployment has them (LTI-72), and the
 * line item when the URL names one (404 when it is not the course's): the answers and their order are
 * those of the separate reads this replaces.
 */
async function agsRequestOf(platform: Platform, bearerToken: string, target: AgsTarget): Promise<AgsRequest> {
  const row = await platform.db.get<AgsRow>(AGS_READ, [target.courseId, target.lineItemId, hashOf(bearerToken)]);
  const nowMs = platform.clock.nowMs();
  const given = accessTokenFrom(row && { client_id: row.t_client_id as string, scopes: row.t_scopes as string, expires: row.t_expires as number, issued: row.t_issued }, nowMs);
  if (!row || row.c_id === null || row.d_client_id !== given.clientId) throw new LmsError(404, 'not_found', `course ${target.courseId} not found`);
  const courseId = row.c_id;
  // The course's deployment decides how long the client's token lives here and which of its scopes count (LTI-72).
  const here = effectiveFor(row.g_lifetimes, row.r_grants_line_item_scope, row.s_settings);
  if (given.issuedMs !== null && given.issuedMs + here.access_token_ttl_seconds * 1000 <= nowMs) throw expiredToken();
  const token: AccessToken = { ...given, scopes: scopesHere(here, given.scopes) };
  if (target.lineItemId === null) return { token, courseId, item: null };
  if (row.i_id === null || row.i_course_id !== courseId) throw new LmsError(404, 'not_found', `line item ${target.lineItemId} not found in course ${courseId}`);
  const item = {} as Record<string, unknown>;
  for (const column of LINE_ITEM_COLUMNS) item[column] = row[`i_${column}`];
  return { token, courseId, item: item as unknown as LineItemRow };
}

/**
 * The effective settings of the stored texts they are made of, made once per combination: a pure
 * function of the row's values, so a control that changes a value is seen at the next request.
 */
const effectiveMade = new Map<string, Readonly<EffectiveSettings>>();
const MADE_KEPT = 1024;

function effectiveFor(lifetimes: string | null, grants: number | null, own: string | null): Readonly<EffectiveSettings> {
  // JSON texts hold no U+0000 (the LMS writes them with JSON.stringify), so it separates the parts.
  const key = `${lifetimes ?? ''}\0${grants ?? ''}\0${own ?? ''}`;
  let here = effectiveMade.get(key);
  if (here === undefined) {
    // A deployment whose registration is gone counts as granting, as `effectiveSettings` has it.
    here = Object.freeze(effectiveOf(settingsFrom(lifetimes), { grants_line_item_scope: grants ?? 1 }, overridesFrom(own)));
    if (effectiveMade.size >= MADE_KEPT) effectiveMade.clear();
    effectiveMade.set(key, here);
  }
  return here;
}

/** `scopesIn` of a token's (frozen, shared) scope list, made once per list and answer. */
const scopesMade = new WeakMap<readonly string[], { granting?: readonly string[]; withholding?: readonly string[] }>();

function scopesHere(here: Pick<EffectiveSettings, 'grants_line_item_scope'>, scopes: readonly string[]): readonly string[] {
  let made = scopesMade.get(scopes);
  if (made === undefined) {
    made = {};
    scopesMade.set(scopes, made);
  }
  const key = here.grants_line_item_scope ? 'granting' : 'withholding';
  return (made[key] ??= Object.freeze(scopesIn(here, scopes)));
}

export function lineItemJson(platform: Platform, item: LineItemRow): Record<string, unknown> {
  const json: Record<string, unknown> = {
    id: urlOf(platform, platform.profile.lineItemPath(item.course_id, item.id)),
    scoreMaximum: item.score_maximum,
    label: item.label,
  };
  if (item.resource_id !== null) json['resourceId'] = item.resource_id;
  if (item.resource_link_id !== null) json['resourceLinkId'] = item.resource_link_id;
  if (item.tag !== null) json['tag'] = item.tag;
  if (item.start_date_time !== null) json['startDateTime'] = item.start_date_time;
  if (item.end_date_time !== null) json['endDateTime'] = item.end_date_time;
  return json;
}

/** Microseconds since the epoch of an ISO 8601 date-time with a zone; null when it is not one. */
export function parseTimestampUs(value: string): number | null {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/i.exec(value);
  if (!m?.[1] || !m[3]) return null;
  const wholeMs = Date.parse(`${m[1]}${m[3].toUpperCase()}`);
  if (Number.isNaN(wholeMs)) return null;
  return wholeMs * 1000 + Number((m[2] ?? '').padEnd(6, '0').slice(0, 6));
}

function optionalString(body: Record<string, unknown>, field: string): string | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw unprocessable(field, `${field} must be a string`);
  return value;
}

function optionalDateTime(body: Record<string, unknown>, field: string): string | null {
  const value = optionalString(body, field);
  if (value !== null && parseTimestampUs(value) === null) throw unprocessable(field, `${field} must be an ISO 8601 date-time`);
  return value;
}

export interface LineItemFields {
  label: string;
  scoreMaximum: number;
  resourceId: string | null;
  resourceLinkId: string | null;
  tag: string | null;
  startDateTime: string | null;
  endDateTime: string | null;
}

export function parseLineItem(body: unknown): LineItemFields {
  if (!isObject(body)) throw new LmsError(422, 'invalid_request', 'a line item must be a JSON object');
  const scoreMaximum = body['scoreMaximum'];
  if (typeof scoreMaximum !== 'number' || !Number.isFinite(scoreMaximum) || scoreMaximum <= 0) {
    throw unprocessable('scoreMaximum', 'scoreMaximum must be a number greater than 0');
  }
  const label = body['label'];
  if (typeof label !== 'string' || label === '') throw unprocessable('label', 'label must be a non-empty string');
  return {
    label,
    scoreMaximum,
    resourceId: optionalString(body, 'resourceId'),
    resourceLinkId: optionalString(body, 'resourceLinkId'),
    tag: optionalString(body, 'tag'),
    startDateTime: optionalDateTime(body, 'startDateTime'),
    endDateTime: optionalDateTime(body, 'endDateTime'),
  };
}

export async function createLineItem(platform: Platform, courseId: string, fields: LineItemFields): Promise<LineItemRow> {
  const id = await platform.profile.newLineItemId(platform.db);
  await platform.db.run(
    `INSERT INTO lms_line_items (id, seq, course_id, label, score_maximum, resource_id, resource_link_id, tag, start_date_time, end_date_time, created)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      id,
      await nextCounter(platform.db, 'line_item_seq'),
      courseId,
      fields.label,
      fields.scoreMaximum,
      fields.resourceId,
      fields.resourceLinkId,
      fields.tag,
      fields.startDateTime,
      fields.endDateTime,
      platform.clock.nowMs(),
    ],
  );
  const item = await lineItemOf(platform.db, id);
  if (!item) throw new Error(`line item ${id} vanished`);
  return item;
}

interface ParsedScore {
  userId: string;
  scoreGiven: number | null;
  scoreMaximum: number | null;
  comment: string | null;
  timestamp: string;
  timestampUs: number;
  activityProgress: string;
  gradingProgress: string;
}

function parseScore(body: unknown): ParsedScore {
  if (!isObject(body)) throw new LmsError(422, 'invalid_request', 'a score must be a JSON object');
  const userId = body['userId'];
  if (typeof userId !== 'string' || userId === '') throw unprocessable('userId', 'userId must be a non-empty string');
  const timestamp = body['timestamp'];
  const timestampUs = typeof timestamp === 'string' ? parseTimestampUs(timestamp) : null;
  if (typeof timestamp !== 'string' || timestampUs === null) throw unprocessable('timestamp', 'timestamp must be an ISO 8601 date-time');
  const activityProgress = body['activityProgress'];
  if (typeof activityProgress !== 'string' || !(ACTIVITY_PROGRESS as readonly string[]).includes(activityProgress)) {
    throw unprocessable('activityProgress', `activityProgress must be one of [${ACTIVITY_PROGRESS.join(', ')}]`);
  }
  const gradingProgress = body['gradingProgress'];
  if (typeof gradingProgress !== 'string' || !(GRADING_PROGRESS as readonly string[]).includes(gradingProgress)) {
    throw unprocessable('gradingProgress', `gradingProgress must be one of [${GRADING_PROGRESS.join(', ')}]`);
  }
  const scoreGiven = body['scoreGiven'];
  const scoreMaximum = body['scoreMaximum'];
  if (scoreGiven !== undefined && (typeof scoreGiven !== 'number' || !Number.isFinite(scoreGiven) || scoreGiven < 0)) {
    throw unprocessable('scoreGiven', 'scoreGiven must be a number of at least 0');
  }
  if (scoreGiven !== undefined && scoreMaximum === undefined) throw unprocessable('scoreMaximum', 'scoreMaximum is required with scoreGiven');
  if (scoreMaximum !== undefined && (typeof scoreMaximum !== 'number' || !Number.isFinite(scoreMaximum) || scoreMaximum <= 0)) {
    throw unprocessable('scoreMaximum', 'scoreMaximum must be greater than 0');
  }
  const comment = body['comment'];
  if (comment !== undefined && comment !== null && typeof comment !== 'string') throw unprocessable('comment', 'comment must be a string');
  return {
    userId,
    scoreGiven: typeof scoreGiven === 'number' ? scoreGiven : null,
    scoreMaximum: typeof scoreMaximum === 'number' ? scoreMaximum : null,
    comment: typeof comment === 'string' && comment !== '' ? comment : null,
    timestamp,
    timestampUs,
    activityProgress,
    gradingProgress,
  };
}

/**
 * Applies a score: true when the column holds it now, false when it holds one as new or newer. One
 * conditional upsert, so processes sharing the store order a column's scores per person by timestamp: of
 * two racing, the older one finds the newer one there (PostgreSQL makes it wait for the row) and changes nothing.
 */
async function applyScore(platform: Platform, item: LineItemRow, score: ParsedScore): Promise<boolean> {
  const applied = await platform.db.run(
    `INSERT INTO lms_scores (line_item_id, sub, score_given, score_maximum, comment, activity_progress, grading_progress, timestamp, timestamp_us, received)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (line_item_id, sub) DO UPDATE SET score_given = excluded.score_given, score_maximum = excluded.score_maximum,
       comment = excluded.comment, activity_progress = excluded.activity_progress, grading_progress = excluded.grading_progress,
       timestamp = excluded.timestamp, timestamp_us = excluded.timestamp_us, received = excluded.received
     WHERE lms_scores.timestamp_us < excluded.timestamp_us`,
    [
      item.id,
      score.userId,
      score.scoreGiven,
      score.scoreMaximum,
      score.comment,
      score.activityProgress,
      score.gradingProgress,
      score.timestamp,
      score.timestampUs,
      platform.clock.nowMs(),
    ],
  );
  return applied.changes === 1;
}

/**
 * `applyScore` for a person enrolled in the course, in one statement (PERF-111): the upsert takes its row
 * from the enrolment, so a person not enrolled writes nothing. False when nothing was written, for
 * either reason; the caller then asks the two questions one at a time. PostgreSQL types the parameters
 * of a SELECT list as text, hence the casts (no-ops on SQLite, whose columns have these affinities).
 */
async function applyEnrolledScore(platform: Platform, courseId: string, item: LineItemRow, score: ParsedScore): Promise<boolean> {
  const applied = await platform.db.run(
    `INSERT INTO lms_scores (line_item_id, sub, score_given, score_maximum, comment, activity_progress, grading_progress, timestamp, timestamp_us, received)
     SELECT CAST(? AS TEXT), e.sub, CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT),
            CAST(? AS BIGINT), CAST(? AS BIGINT)
       FROM lms_enrolments e
      WHERE e.course_id = ? AND e.sub = ?
     ON CONFLICT (line_item_id, sub) DO UPDATE SET score_given = excluded.score_given, score_maximum = excluded.score_maximum,
       comment = excluded.comment, activity_progress = excluded.activity_progress, grading_progress = excluded.grading_progress,
       timestamp = excluded.timestamp, timestamp_us = excluded.timestamp_us, received = excluded.received
     WHERE lms_scores.timestamp_us < excluded.timestamp_us`,
    [
      item.id,
      score.scoreGiven,
      score.scoreMaximum,
      score.comment,
      score.activityProgress,
      score.gradingProgress,
      score.timestamp,
      score.timestampUs,
      platform.clock.nowMs(),
      courseId,
      score.userId,
    ],
  );
  return applied.changes === 1;
}

function filterOf(query: URLSearchParams, name: string): string | null {
  const values = query.getAll(name);
  return values.length === 1 ? (values[0] ?? null) : null;
}

/** One AGS request, routed by the path the profile made. */
export async function handleAgs(
  platform: Platform,
  bearerToken: string,
  target: AgsTarget,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  const { token, courseId, item } = await agsRequestOf(platform, bearerToken, target);
  const method = req.method ?? 'GET';
  if (item === null) {
    if (method === 'GET') {
      requireScope(token, AGS_SCOPES.lineItem, AGS_SCOPES.lineItemReadonly);
      const rows = await platform.db.all<LineItemRow>('SELECT * FROM lms_line_items WHERE course_id = ? ORDER BY seq', [courseId]);
      const link = filterOf(query, 'resource_link_id');
      const resource = filterOf(query, 'resource_id');
      const tag = filterOf(query, 'tag');
      const items = rows
        .filter((i) => link === null || i.resource_link_id === link)
        .filter((i) => resource === null || i.resource_id === resource)
        .filter((i) => tag === null || i.tag === tag)
        .map((i) => lineItemJson(platform, i));
      sendJson(res, 200, items, AGS_MEDIA_TYPES.lineItemContainer);
      return;
    }
    if (method === 'POST') {
      requireScope(token, AGS_SCOPES.lineItem);
      const fields = parseLineItem(await readJson(req, AGS_MEDIA_TYPES.lineItem, 'application/json'));
      sendJson(res, 201, lineItemJson(platform, await createLineItem(platform, courseId, fields)), AGS_MEDIA_TYPES.lineItem);
      return;
    }
    throw new LmsError(405, 'method_not_allowed', `${method} is not allowed on a line-item container`, { Allow: 'GET, POST' });
  }
  if (target.scores) {
    if (method !== 'POST') throw new LmsError(405, 'method_not_allowed', `${method} is not allowed on scores`, { Allow: 'POST' });
    requireScope(token, AGS_SCOPES.score);
    const score = parseScore(await readJson(req, AGS_MEDIA_TYPES.score, 'application/json'));
    if (item.refuses_scores_with !== null) {
      throw new LmsError(item.refuses_scores_with, 'score_refused', `the gradebook refuses scores for line item ${item.id}`);
    }
    if (!(await applyEnrolledScore(platform, courseId, item, score))) {
      // Nothing was written: the person is not enrolled, or the column holds a score as new or newer.
      // Asked as before, one at a time, so the answer is the one the separate statements gave.
      if (!(await enrolmentRoles(platform.db, courseId, score.userId))) {
        throw unprocessable('userId', `userId ${score.userId} is not enrolled in course ${courseId}`);
      }
      if (!(await applyScore(platform, item, score))) {
        throw new LmsError(409, 'conflict', `line item ${item.id} already holds a score for ${score.userId} with a timestamp as new or newer`);
      }
    }
    sendEmpty(res, 204);
    return;
  }
  if (target.results) {
    if (method !== 'GET') throw new LmsError(405, 'method_not_allowed', `${method} is not allowed on results`, { Allow: 'GET' });
    requireScope(token, AGS_SCOPES.resultReadonly);
    const userFilter = filterOf(query, 'user_id');
    const rows = await platform.db.all<ScoreRow>('SELECT * FROM lms_scores WHERE line_item_id = ? ORDER BY sub', [item.id]);
    const lineItemUrl = urlOf(platform, platform.profile.lineItemPath(courseId, item.id));
    const results = rows
      .filter((r) => userFilter === null || r.sub === userFilter)
      .map((r) => ({
        id: `${lineItemUrl.split('?')[0] ?? lineItemUrl}/results/${encodeURIComponent(r.sub)}`,
        scoreOf: lineItemUrl,
        userId: r.sub,
        ...(r.score_given !== null ? { resultScore: r.score_given, resultMaximum: r.score_maximum ?? item.score_maximum } : {}),
        ...(r.comment !== null ? { comment: r.comment } : {}),
      }));
    sendJson(res, 200, results, AGS_MEDIA_TYPES.resultContainer);
    return;
  }
  if (method === 'GET') {
    requireScope(token, AGS_SCOPES.lineItem, AGS_SCOPES.lineItemReadonly);
    sendJson(res, 200, lineItemJson(platform, item), AGS_MEDIA_TYPES.lineItem);
    return;
  }
  if (method === 'PUT') {
    requireScope(token, AGS_SCOPES.lineItem);
    const fields = parseLineItem(await readJson(req, AGS_MEDIA_TYPES.lineItem, 'application/json'));
    // The resource link stays: it names the placement the column belongs to.
    await platform.db.run('UPDATE lms_line_items SET label = ?, score_maximum = ?, resource_id = ?, tag = ?, start_date_time = ?, end_date_time = ? WHERE id = ?', [
      fields.label,
      fields.scoreMaximum,
      fields.resourceId,
      fields.tag,
      fields.startDateTime,
      fields.endDateTime,
      item.id,
    ]);
    sendJson(res, 200, lineItemJson(platform, (await lineItemOf(platform.db, item.id)) ?? item), AGS_MEDIA_TYPES.lineItem);
    return;
  }
  if (method === 'DELETE') {
    requireScope(token, AGS_SCOPES.lineItem);
    await platform.db.transaction(async (tx) => {
      await tx.run('DELETE FROM lms_scores WHERE line_item_id = ?', [item.id]);
      await tx.run('DELETE FROM lms_line_items WHERE id = ?', [item.id]);
    });
    sendEmpty(res, 204);
    return;
  }
  throw new LmsError(405, 'method_not_allowed', `${method} is not allowed on a line item`, { Allow: 'GET, PUT, DELETE' });
}
