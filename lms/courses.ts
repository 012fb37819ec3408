/**
 * The LMS's own world, as its controls change it: schools (deployments of a registration), people,
 * courses and enrolments, resource links with or without a gradebook column, course copies with their
 * context history, and the gradebook read back (decision LTI-38).
 */
import type { Platform } from './platform.js';
import { LIS_ROLES } from './platform.js';
import { createLineItem, lineItemJson } from './ags.js';
import { LmsError } from './http.js';
import type { CourseRow, DeploymentRow, LineItemRow, ResourceLinkRow, ScoreRow, UserRow } from './store.js';
import { courseOf, deploymentOf, nextCounter, registrationOf, resourceLinkOf, userOf } from './store.js';
import { randomBytes } from 'node:crypto';

export type RoleName = keyof typeof LIS_ROLES;

/** A role as a LIS URI: a short name (`instructor`, `student`, …) or a URI given as is. */
export function roleUri(role: string): string {
  if (Object.prototype.hasOwnProperty.call(LIS_ROLES, role)) return LIS_ROLES[role as RoleName];
  if (/^https?:\/\//.test(role)) return role;
  throw new LmsError(400, 'invalid_request', `role ${role} must be a LIS role URI or one of [${Object.keys(LIS_ROLES).join(', ')}]`);
}

/** A deployment of a registration; `id` given (an administrator's choice) must be new. */
export function createDeployment(platform: Platform, clientId: string, title: string, id?: string): DeploymentRow {
  if (!registrationOf(platform.db, clientId)) throw new LmsError(404, 'not_found', `client ${clientId} not registered`);
  if (id !== undefined && deploymentOf(platform.db, id)) throw new LmsError(409, 'conflict', `deployment ${id} exists`);
  id ??= platform.profile.newDeploymentId(platform.db, clientId);
  platform.db.prepare('INSERT INTO deployments (deployment_id, client_id, title, created) VALUES (?, ?, ?, ?)').run(id, clientId, title, platform.clock.nowMs());
  const row = deploymentOf(platform.db, id);
  if (!row) throw new Error(`deployment ${id} vanished`);
  return row;
}

export function createUser(platform: Platform, input: { sub?: string; given_name: string; family_name: string; email: string }): UserRow {
  const sub = input.sub ?? (platform.profile.name === 'moodle' ? String(1 + nextCounter(platform.db, 'moodle_user')) : randomBytes(12).toString('hex'));
  if (userOf(platform.db, sub)) throw new LmsError(409, 'conflict', `user ${sub} exists`);
  platform.db
    .prepare('INSERT INTO users (sub, given_name, family_name, email, created) VALUES (?, ?, ?, ?, ?)')
    .run(sub, input.given_name, input.family_name, input.email, platform.clock.nowMs());
  return userOf(platform.db, sub) as UserRow;
}

/** A course; `id` given (a course imported from an SIS, say) must be new. */
export function createCourse(platform: Platform, input: { id?: string; deployment_id: string; title: string; label: string; history?: string[] }): CourseRow {
  if (!deploymentOf(platform.db, input.deployment_id)) throw new LmsError(404, 'not_found', `deployment ${input.deployment_id} not found`);
  if (input.id !== undefined && courseOf(platform.db, input.id)) throw new LmsError(409, 'conflict', `course ${input.id} exists`);
  const id = input.id ?? platform.profile.newCourseId(platform.db);
  platform.db
    .prepare('INSERT INTO courses (id, deployment_id, title, label, history, created) VALUES (?, ?, ?, ?, ?, ?)')
    .run(id, input.deployment_id, input.title, input.label, JSON.stringify(input.history ?? []), platform.clock.nowMs());
  return courseOf(platform.db, id) as CourseRow;
}

export function requireCourse(platform: Platform, id: string): CourseRow {
  const course = courseOf(platform.db, id);
  if (!course) throw new LmsError(404, 'not_found', `course ${id} not found`);
  return course;
}

/** Rename or re-term: the next launch carries the new title and label. */
export function updateCourse(platform: Platform, id: string, input: { title?: string; label?: string }): CourseRow {
  const course = requireCourse(platform, id);
  platform.db.prepare('UPDATE courses SET title = ?, label = ? WHERE id = ?').run(input.title ?? course.title, input.label ?? course.label, id);
  return requireCourse(platform, id);
}

export function enrol(platform: Platform, courseId: string, sub: string, roles: string[]): void {
  requireCourse(platform, courseId);
  if (!userOf(platform.db, sub)) throw new LmsError(404, 'not_found', `user ${sub} not found`);
  if (roles.length === 0) throw new LmsError(400, 'invalid_request', 'roles must name at least one role');
  platform.db
    .prepare('INSERT INTO enrolments (course_id, sub, roles) VALUES (?, ?, ?) ON CONFLICT(course_id, sub) DO UPDATE SET roles = excluded.roles')
    .run(courseId, sub, JSON.stringify(roles.map(roleUri)));
}

export function unenrol(platform: Platform, courseId: string, sub: string): void {
  requireCourse(platform, courseId);
  platform.db.prepare('DELETE FROM enrolments WHERE course_id = ? AND sub = ?').run(courseId, sub);
}

export function createResourceLink(platform: Platform, courseId: string, input: { title: string; url: string | null; custom: Record<string, string> }): ResourceLinkRow {
  requireCourse(platform, courseId);
  const id = platform.profile.newResourceLinkId(platform.db);
  platform.db
    .prepare('INSERT INTO resource_links (id, course_id, title, url, custom, created) VALUES (?, ?, ?, ?, ?, ?)')
    .run(id, courseId, input.title, input.url, JSON.stringify(input.custom), platform.clock.nowMs());
  return resourceLinkOf(platform.db, id) as ResourceLinkRow;
}

/** A resource link and, unless `lineItem` is null, its gradebook column. */
export function placeResourceLink(
  platform: Platform,
  courseId: string,
  input: { title: string; url: string | null; custom: Record<string, string>; lineItem: { label: string; scoreMaximum: number; resourceId: string | null; tag: string | null } | null },
): Record<string, unknown> {
  return platform.db.transaction(() => {
    const link = createResourceLink(platform, courseId, input);
    const item = input.lineItem
      ? createLineItem(platform, courseId, { ...input.lineItem, resourceLinkId: link.id, startDateTime: null, endDateTime: null })
      : null;
    return resourceLinkJson(platform, link, item ? [item] : []);
  })();
}

export function resourceLinkJson(platform: Platform, link: ResourceLinkRow, items?: LineItemRow[]): Record<string, unknown> {
  const columns = items ?? (platform.db.prepare('SELECT * FROM line_items WHERE resource_link_id = ? ORDER BY seq').all(link.id) as LineItemRow[]);
  return {
    id: link.id,
    course_id: link.course_id,
    title: link.title,
    url: link.url,
    custom: JSON.parse(link.custom) as Record<string, string>,
    line_items: columns.map((i) => lineItemJson(platform, i)),
  };
}

/**
 * A course copy, as an LMS makes one: a new course whose history starts with its parent (then the
 * parent's history: most recent first, as `$Context.id.history` wants), with the resource links and
 * their columns copied under new IDs unless `with_links` is false, and no enrolments unless asked.
 */
export function copyCourse(
  platform: Platform,
  parentId: string,
  input: { id?: string; title?: string; label?: string; deployment_id?: string; with_links: boolean; with_enrolments: boolean },
): CourseRow {
  const parent = requireCourse(platform, parentId);
  return platform.db.transaction(() => {
    const copy = createCourse(platform, {
      ...(input.id !== undefined ? { id: input.id } : {}),
      deployment_id: input.deployment_id ?? parent.deployment_id,
      title: input.title ?? parent.title,
      label: input.label ?? parent.label,
      history: [parent.id, ...(JSON.parse(parent.history) as string[])],
    });
    if (input.with_links) {
      const links = platform.db.prepare('SELECT * FROM resource_links WHERE course_id = ? ORDER BY created, id').all(parent.id) as ResourceLinkRow[];
      for (const link of links) {
        const made = createResourceLink(platform, copy.id, { title: link.title, url: link.url, custom: JSON.parse(link.custom) as Record<string, string> });
        const items = platform.db.prepare('SELECT * FROM line_items WHERE resource_link_id = ? ORDER BY seq').all(link.id) as LineItemRow[];
        for (const item of items) {
          createLineItem(platform, copy.id, {
            label: item.label,
            scoreMaximum: item.score_maximum,
            resourceId: item.resource_id,
            resourceLinkId: made.id,
            tag: item.tag,
            startDateTime: item.start_date_time,
            endDateTime: item.end_date_time,
          });
        }
      }
    }
    if (input.with_enrolments) {
      platform.db.prepare('INSERT INTO enrolments (course_id, sub, roles) SELECT ?, sub, roles FROM enrolments WHERE course_id = ?').run(copy.id, parent.id);
    }
    return copy;
  })();
}

export function courseJson(platform: Platform, course: CourseRow): Record<string, unknown> {
  const deployment = deploymentOf(platform.db, course.deployment_id);
  const enrolments = platform.db.prepare('SELECT sub, roles FROM enrolments WHERE course_id = ? ORDER BY sub').all(course.id) as { sub: string; roles: string }[];
  const links = platform.db.prepare('SELECT * FROM resource_links WHERE course_id = ? ORDER BY created, id').all(course.id) as ResourceLinkRow[];
  return {
    id: course.id,
    client_id: deployment?.client_id ?? null,
    deployment_id: course.deployment_id,
    title: course.title,
    label: course.label,
    history: JSON.parse(course.history) as string[],
    enrolments: enrolments.map((e) => ({ sub: e.sub, roles: JSON.parse(e.roles) as string[] })),
    resource_links: links.map((l) => resourceLinkJson(platform, l)),
    created: new Date(course.created).toISOString(),
  };
}

/** The gradebook: every column of the course with the last score per person. */
export function gradebookJson(platform: Platform, courseId: string): Record<string, unknown> {
  requireCourse(platform, courseId);
  const items = platform.db.prepare('SELECT * FROM line_items WHERE course_id = ? ORDER BY seq').all(courseId) as LineItemRow[];
  return {
    course_id: courseId,
    columns: items.map((item) => {
      const scores = platform.db.prepare('SELECT * FROM scores WHERE line_item_id = ? ORDER BY sub').all(item.id) as ScoreRow[];
      return {
        ...lineItemJson(platform, item),
        line_item_id: item.id,
        refuses_scores_with: item.refuses_scores_with,
        scores: scores.map((s) => ({
          userId: s.sub,
          scoreGiven: s.score_given,
          scoreMaximum: s.score_maximum,
          comment: s.comment,
          activityProgress: s.activity_progress,
          gradingProgress: s.grading_progress,
          timestamp: s.timestamp,
          received: new Date(s.received).toISOString(),
        })),
      };
    }),
  };
}

/** Clears every score of a course's gradebook; its columns stay. */
export function clearScores(platform: Platform, courseId: string): void {
  requireCourse(platform, courseId);
  platform.db.prepare('DELETE FROM scores WHERE line_item_id IN (SELECT id FROM line_items WHERE course_id = ?)').run(courseId);
}

/** A gradebook that refuses scores for one column: every score POST answers `status` until cleared. */
export function setRefusal(platform: Platform, lineItemId: string, status: number | null): Record<string, unknown> {
  const item = platform.db.prepare('SELECT * FROM line_items WHERE id = ?').get(lineItemId) as LineItemRow | undefined;
  if (!item) throw new LmsError(404, 'not_found', `line item ${lineItemId} not found`);
  if (status !== null && (!Number.isInteger(status) || status < 400 || status > 599)) {
    throw new LmsError(400, 'invalid_request', 'refuses_scores_with must be an HTTP status from 400 to 599, or null');
  }
  platform.db.prepare('UPDATE line_items SET refuses_scores_with = ? WHERE id = ?').run(status, lineItemId);
  return { line_item_id: lineItemId, refuses_scores_with: status };
}
