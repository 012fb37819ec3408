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
import type { CourseRow, LineItemRow, ScoreRow } from './store.js';
import { enrolmentRoles, lineItemOf, nextCounter } from './store.js';
import type { EffectiveSettings } from './deployment-settings.js';
import { effectiveOf, overridesFrom, scopesIn } from './deployment-settings.js';
import type { AccessToken } from './token.js';
import { expiredToken, requireScope } from './token.js';

const ACTIVITY_PROGRESS = ['Initialized', 'Started', 'InProgress', 'Submitted', 'Completed'] as const;
const GRADING_PROGRESS = ['FullyGraded', 'Pending', 'PendingManual', 'Failed', 'NotReady'] as const;

function unprocessable(field: string, message: string): LmsError {
  return new LmsError(422, 'invalid_request', message, {}, field);
}

/**
 * The course of an AGS URL, when the token's client is the course's tool (404 otherwise), with the
 * settings of its deployment (LTI-72), in one statement (PERF-72): the course, its deployment, the
 * deployment's registration and own settings, and the LMS-wide lifetimes were six reads per AGS request.
 * Still read at each use, never cached (LTI-80).
 */
async function courseOfToken(platform: Platform, token: AccessToken, courseId: string): Promise<{ course: CourseRow; here: EffectiveSettings }> {
  const row = await platform.db.get<CourseRow & { d_client_id: string; r_grants_line_item_scope: number | null; s_settings: string | null; g_lifetimes: string | null }>(
    `SELECT c.id, c.deployment_id, c.title, c.label, c.history, c.created, d.client_id AS d_client_id,
            r.grants_line_item_scope AS r_grants_line_item_scope, s.settings AS s_settings,
            (SELECT value FROM lms_settings WHERE name = 'lifetimes') AS g_lifetimes
       FROM lms_courses c
       JOIN lms_deployments d ON d.deployment_id = c.deployment_id
       LEFT JOIN lms_registrations r ON r.client_id = d.client_id
       LEFT JOIN lms_deployment_settings s ON s.deployment_id = c.deployment_id
      WHERE c.id = ?`,
    [courseId],
  );
  if (!row || row.d_client_id !== token.clientId) throw new LmsError(404, 'not_found', `course ${courseId} not found`);
  const { d_client_id: _client, r_grants_line_item_scope: grants, s_settings: own, g_lifetimes: lifetimes, ...course } = row;
  // A deployment whose registration is gone counts as granting, as `effectiveSettings` has it.
  const here = effectiveOf(settingsFrom(lifetimes), { grants_line_item_scope: grants ?? 1 }, overridesFrom(own));
  return { course, here };
}

async function itemOfCourse(platform: Platform, course: CourseRow, id: string): Promise<LineItemRow> {
  const item = await lineItemOf(platform.db, id);
  if (!item || item.course_id !== course.id) throw new LmsError(404, 'not_found', `line item ${id} not found in course ${course.id}`);
  return item;
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

function filterOf(query: URLSearchParams, name: string): string | null {
  const values = query.getAll(name);
  return values.length === 1 ? (values[0] ?? null) : null;
}

/** One AGS request, routed by the path the profile made. */
export async function handleAgs(
  platform: Platform,
  given: AccessToken,
  target: AgsTarget,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  // The course's deployment decides how long the client's token lives here and which of its scopes count (LTI-72).
  const { course, here } = await courseOfToken(platform, given, target.courseId);
  if (given.issuedMs !== null && given.issuedMs + here.access_token_ttl_seconds * 1000 <= platform.clock.nowMs()) throw expiredToken();
  const token: AccessToken = { ...given, scopes: scopesIn(here, given.scopes) };
  const method = req.method ?? 'GET';
  if (target.lineItemId === null) {
    if (method === 'GET') {
      requireScope(token, AGS_SCOPES.lineItem, AGS_SCOPES.lineItemReadonly);
      const rows = await platform.db.all<LineItemRow>('SELECT * FROM lms_line_items WHERE course_id = ? ORDER BY seq', [course.id]);
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
      sendJson(res, 201, lineItemJson(platform, await createLineItem(platform, course.id, fields)), AGS_MEDIA_TYPES.lineItem);
      return;
    }
    throw new LmsError(405, 'method_not_allowed', `${method} is not allowed on a line-item container`, { Allow: 'GET, POST' });
  }
  const item = await itemOfCourse(platform, course, target.lineItemId);
  if (target.scores) {
    if (method !== 'POST') throw new LmsError(405, 'method_not_allowed', `${method} is not allowed on scores`, { Allow: 'POST' });
    requireScope(token, AGS_SCOPES.score);
    const score = parseScore(await readJson(req, AGS_MEDIA_TYPES.score, 'application/json'));
    if (item.refuses_scores_with !== null) {
      throw new LmsError(item.refuses_scores_with, 'score_refused', `the gradebook refuses scores for line item ${item.id}`);
    }
    if (!(await enrolmentRoles(platform.db, course.id, score.userId))) {
      throw unprocessable('userId', `userId ${score.userId} is not enrolled in course ${course.id}`);
    }
    if (!(await applyScore(platform, item, score))) {
      throw new LmsError(409, 'conflict', `line item ${item.id} already holds a score for ${score.userId} with a timestamp as new or newer`);
    }
    sendEmpty(res, 204);
    return;
  }
  if (target.results) {
    if (method !== 'GET') throw new LmsError(405, 'method_not_allowed', `${method} is not allowed on results`, { Allow: 'GET' });
    requireScope(token, AGS_SCOPES.resultReadonly);
    const userFilter = filterOf(query, 'user_id');
    const rows = await platform.db.all<ScoreRow>('SELECT * FROM lms_scores WHERE line_item_id = ? ORDER BY sub', [item.id]);
    const lineItemUrl = urlOf(platform, platform.profile.lineItemPath(course.id, item.id));
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
