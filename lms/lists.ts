/**
 * The lists an administrator reads (decision LTI-74): courses and people, oldest first, one page at a time.
 * A caller may narrow either to IDs beginning with given prefixes or equal to given IDs (the Sandbox asks
 * for one tool's part). Pages are cut by position (created, ID), so a record made between two pages is
 * neither skipped nor repeated; `next` is the position to pass as `after`, null on the last page.
 */
import { LmsError } from './http.js';
import type { Platform } from './platform.js';
import type { CourseRow, LmsParam, UserRow } from './store.js';

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

interface Page {
  limit: number;
  after: [number, string] | null;
}

function pageOf(query: URLSearchParams): Page {
  const rawLimit = query.get('limit');
  const limit = rawLimit === null ? DEFAULT_LIMIT : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new LmsError(400, 'invalid_request', `limit must be an integer from 1 to ${MAX_LIMIT}`);
  const rawAfter = query.get('after');
  if (rawAfter === null) return { limit, after: null };
  let after: unknown;
  try {
    after = JSON.parse(Buffer.from(rawAfter, 'base64url').toString('utf8'));
  } catch {
    after = null;
  }
  if (!Array.isArray(after) || after.length !== 2 || typeof after[0] !== 'number' || typeof after[1] !== 'string') {
    throw new LmsError(400, 'invalid_request', 'after must be the next of an earlier page');
  }
  return { limit, after: [after[0], after[1]] };
}

function nextOf(rows: readonly { created: number }[], key: (row: never) => string, limit: number): string | null {
  if (rows.length <= limit) return null;
  const last = rows[limit - 1] as { created: number };
  return Buffer.from(JSON.stringify([last.created, key(last as never)]), 'utf8').toString('base64url');
}

/** `column` narrowed to the prefixes and exact values asked for (all when neither is given). */
function narrowed(column: string, query: URLSearchParams, exactName: string): { sql: string; params: LmsParam[] } {
  const prefixes = query.getAll('prefix').filter((p) => p !== '');
  const exact = query.getAll(exactName).filter((p) => p !== '');
  if (prefixes.length === 0 && exact.length === 0) return { sql: '1 = 1', params: [] };
  // substr, not LIKE: IDs hold `_`, which LIKE reads as a wildcard.
  const terms = [...prefixes.map(() => `substr(${column}, 1, ?) = ?`), ...exact.map(() => `${column} = ?`)];
  return { sql: `(${terms.join(' OR ')})`, params: [...prefixes.flatMap((p) => [p.length, p]), ...exact] };
}

function position(column: string, page: Page): { sql: string; params: LmsParam[] } {
  if (page.after === null) return { sql: '1 = 1', params: [] };
  return { sql: `(created > ? OR (created = ? AND ${column} > ?))`, params: [page.after[0], page.after[0], page.after[1]] };
}

export async function listCourses(platform: Platform, query: URLSearchParams): Promise<Record<string, unknown>> {
  const page = pageOf(query);
  const where = narrowed('id', query, 'id');
  const from = position('id', page);
  const rows = await platform.db.all<CourseRow>(`SELECT * FROM lms_courses WHERE ${where.sql} AND ${from.sql} ORDER BY created, id LIMIT ?`, [
    ...where.params,
    ...from.params,
    page.limit + 1,
  ]);
  return {
    courses: rows.slice(0, page.limit).map((c) => ({
      id: c.id,
      deployment_id: c.deployment_id,
      title: c.title,
      label: c.label,
      history: JSON.parse(c.history) as string[],
      created: new Date(c.created).toISOString(),
    })),
    next: nextOf(rows, (c: CourseRow) => c.id, page.limit),
  };
}

export async function listUsers(platform: Platform, query: URLSearchParams): Promise<Record<string, unknown>> {
  const page = pageOf(query);
  const where = narrowed('sub', query, 'sub');
  const from = position('sub', page);
  const rows = await platform.db.all<UserRow>(`SELECT * FROM lms_users WHERE ${where.sql} AND ${from.sql} ORDER BY created, sub LIMIT ?`, [
    ...where.params,
    ...from.params,
    page.limit + 1,
  ]);
  const users: Record<string, unknown>[] = [];
  for (const user of rows.slice(0, page.limit)) {
    const enrolments = await platform.db.all<{ course_id: string; roles: string }>('SELECT course_id, roles FROM lms_enrolments WHERE sub = ? ORDER BY course_id', [user.sub]);
    users.push({
      sub: user.sub,
      given_name: user.given_name,
      family_name: user.family_name,
      email: user.email,
      created: new Date(user.created).toISOString(),
      enrolments: enrolments.map((e) => ({ course_id: e.course_id, roles: JSON.parse(e.roles) as string[] })),
    });
  }
  return { users, next: nextOf(rows, (u: UserRow) => u.sub, page.limit) };
}
