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

/**
 * A deployment of a registration; `id` given (an administrator's choice) must be new. Records made under a
 * chosen ID are inserted only when the ID is free, in one statement: of two processes racing for one ID,
 * one makes it and the other answers 409.
 */
export async function createDeployment(platform: Platform, clientId: string, title: string, id?: string): Promise<DeploymentRow> {
  if (!(await registrationOf(platform.db, clientId))) throw new LmsError(404, 'not_found', `client ${clientId} not registered`);
  id ??= await platform.profile.newDeploymentId(platform.db, clientId);
  const made = await platform.db.run('INSERT INTO lms_deployments (deployment_id, client_id, title, created) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING', [
    id,
    clientId,
    title,
    platform.clock.nowMs(),
  ]);
  if (made.changes !== 1) throw new LmsError(409, 'conflict', `deployment ${id} exists`);
  const row = await deploymentOf(platform.db, id);
  if (!row) throw new Error(`deployment ${id} vanished`);
  return row;
}

/**
 * Moves a school (deployment) to another registration of the LMS: its launches and tokens are that
 * client's from now on, its courses, people and gradebook stay. An administrator does this when a tool
 * re-registers (the Sandbox's service under a new `PUBLIC_URL`, decision LTI-97).
 */
export async function moveDeployment(platform: Platform, id: string, clientId: string): Promise<DeploymentRow> {
  if (!(await registrationOf(platform.db, clientId))) throw new LmsError(404, 'not_found', `client ${clientId} not registered`);
  const moved = await platform.db.run('UPDATE lms_deployments SET client_id = ? WHERE deployment_id = ?', [clientId, id]);
  if (moved.changes !== 1) throw new LmsError(404, 'not_found', `no deployment ${id}`);
  const row = await deploymentOf(platform.db, id);
  if (!row) throw new Error(`deployment ${id} vanished`);
  return row;
}

export async function createUser(platform: Platform, input: { sub?: string; given_name: string; family_name: string; email: string }): Promise<UserRow> {
  const sub = input.sub ?? (platform.profile.name === 'moodle' ? String(1 + (await nextCounter(platform.db, 'moodle_user'))) : randomBytes(12).toString('hex'));
  const made = await platform.db.run('INSERT INTO lms_users (sub, given_name, family_name, email, created) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING', [
    sub,
    input.given_name,
    input.family_name,
    input.email,
    platform.clock.nowMs(),
  ]);
  if (made.changes !== 1) throw new LmsError(409, 'conflict', `user ${sub} exists`);
  return (await userOf(platform.db, sub)) as UserRow;
}

/** A course; `id` given (a course imported from an SIS, say) must be new. */
export async function createCourse(platform: Platform, input: { id?: string; deployment_id: string; title: string; label: string; history?: string[] }): Promise<CourseRow> {
  if (!(await deploymentOf(platform.db, input.deployment_id))) throw new LmsError(404, 'not_found', `deployment ${input.deployment_id} not found`);
  const id = input.id ?? (await platform.profile.newCourseId(platform.db));
  const made = await platform.db.run('INSERT INTO lms_courses (id, deployment_id, title, label, history, created) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING', [
    id,
    input.deployment_id,
    input.title,
    input.label,
    JSON.stringify(input.history ?? []),
    platform.clock.nowMs(),
  ]);
  if (made.changes !== 1) throw new LmsError(409, 'conflict', `course ${id} exists`);
  return (await courseOf(platform.db, id)) as CourseRow;
}

export async function requireCourse(platform: Platform, id: string): Promise<CourseRow> {
  const course = await courseOf(platform.db, id);
  if (!course) throw new LmsError(404, 'not_found', `course ${id} not found`);
  return course;
}

/** Rename or re-term: the next launch carries the new title and label (a field not given keeps the stored one). */
export async function updateCourse(platform: Platform, id: string, input: { title?: string; label?: string }): Promise<CourseRow> {
  await requireCourse(platform, id);
  await platform.db.run('UPDATE lms_courses SET title = COALESCE(?, title), label = COALESCE(?, label) WHERE id = ?', [input.title ?? null, input.label ?? null, id]);
  return requireCourse(platform, id);
}

export async function enrol(platform: Platform, courseId: string, sub: string, roles: string[]): Promise<void> {
  await requireCourse(platform, courseId);
  if (!(await userOf(platform.db, sub))) throw new LmsError(404, 'not_found', `user ${sub} not found`);
  if (roles.length === 0) throw new LmsError(400, 'invalid_request', 'roles must name at least one role');
  await platform.db.run('INSERT INTO lms_enrolments (course_id, sub, roles) VALUES (?, ?, ?) ON CONFLICT (course_id, sub) DO UPDATE SET roles = excluded.roles', [
    courseId,
    sub,
    JSON.stringify(roles.map(roleUri)),
  ]);
}

export async function unenrol(platform: Platform, courseId: string, sub: string): Promise<void> {
  await requireCourse(platform, courseId);
  await platform.db.run('DELETE FROM lms_enrolments WHERE course_id = ? AND sub = ?', [courseId, sub]);
}

export async function createResourceLink(platform: Platform, courseId: string, input: { title: string; url: string | null; custom: Record<string, string> }): Promise<ResourceLinkRow> {
  await requireCourse(platform, courseId);
  const id = await platform.profile.newResourceLinkId(platform.db);
  await platform.db.run('INSERT INTO lms_resource_links (id, course_id, title, url, custom, created) VALUES (?, ?, ?, ?, ?, ?)', [
    id,
    courseId,
    input.title,
    input.url,
    JSON.stringify(input.custom),
    platform.clock.nowMs(),
  ]);
  return (await resourceLinkOf(platform.db, id)) as ResourceLinkRow;
}

/** A resource link and, unless `lineItem` is null, its gradebook column. */
export async function placeResourceLink(
  platform: Platform,
  courseId: string,
  input: { title: string; url: string | null; custom: Record<string, string>; lineItem: { label: string; scoreMaximum: number; resourceId: string | null; tag: string | null } | null },
): Promise<Record<string, unknown>> {
  return platform.db.transaction(async (db) => {
    const tx: Platform = { ...platform, db };
    const link = await createResourceLink(tx, courseId, input);
    const item = input.lineItem
      ? await createLineItem(tx, courseId, { ...input.lineItem, resourceLinkId: link.id, startDateTime: null, endDateTime: null })
      : null;
    return resourceLinkJson(tx, link, item ? [item] : []);
  });
}

export async function resourceLinkJson(platform: Platform, link: ResourceLinkRow, items?: LineItemRow[]): Promise<Record<string, unknown>> {
  const columns = items ?? (await platform.db.all<LineItemRow>('SELECT * FROM lms_line_items WHERE resource_link_id = ? ORDER BY seq', [link.id]));
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
export async function copyCourse(
  platform: Platform,
  parentId: string,
  input: { id?: string; title?: string; label?: string; deployment_id?: string; with_links: boolean; with_enrolments: boolean },
): Promise<CourseRow> {
  const parent = await requireCourse(platform, parentId);
  return platform.db.transaction(async (db) => {
    const tx: Platform = { ...platform, db };
    const copy = await createCourse(tx, {
      ...(input.id !== undefined ? { id: input.id } : {}),
      deployment_id: input.deployment_id ?? parent.deployment_id,
      title: input.title ?? parent.title,
      label: input.label ?? parent.label,
      history: [parent.id, ...(JSON.parse(parent.history) as string[])],
    });
    if (input.with_links) {
      const links = await db.all<ResourceLinkRow>('SELECT * FROM lms_resource_links WHERE course_id = ? ORDER BY created, id', [parent.id]);
      for (const link of links) {
        const made = await createResourceLink(tx, copy.id, { title: link.title, url: link.url, custom: JSON.parse(link.custom) as Record<string, string> });
        const items = await db.all<LineItemRow>('SELECT * FROM lms_line_items WHERE resource_link_id = ? ORDER BY seq', [link.id]);
        for (const item of items) {
          await createLineItem(tx, copy.id, {
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
      await db.run('INSERT INTO lms_enrolments (course_id, sub, roles) SELECT CAST(? AS TEXT), sub, roles FROM lms_enrolments WHERE course_id = ?', [copy.id, parent.id]);
    }
    return copy;
  });
}

export async function courseJson(platform: Platform, course: CourseRow): Promise<Record<string, unknown>> {
  const deployment = await deploymentOf(platform.db, course.deployment_id);
  const enrolments = await platform.db.all<{ sub: string; roles: string }>('SELECT sub, roles FROM lms_enrolments WHERE course_id = ? ORDER BY sub', [course.id]);
  const links = await platform.db.all<ResourceLinkRow>('SELECT * FROM lms_resource_links WHERE course_id = ? ORDER BY created, id', [course.id]);
  const resourceLinks: Record<string, unknown>[] = [];
  for (const link of links) resourceLinks.push(await resourceLinkJson(platform, link));
  return {
    id: course.id,
    client_id: deployment?.client_id ?? null,
    deployment_id: course.deployment_id,
    title: course.title,
    label: course.label,
    history: JSON.parse(course.history) as string[],
    enrolments: enrolments.map((e) => ({ sub: e.sub, roles: JSON.parse(e.roles) as string[] })),
    resource_links: resourceLinks,
    created: new Date(course.created).toISOString(),
  };
}

/** The gradebook: every column of the course with the last score per person. */
export async function gradebookJson(platform: Platform, courseId: string): Promise<Record<string, unknown>> {
  await requireCourse(platform, courseId);
  const items = await platform.db.all<LineItemRow>('SELECT * FROM lms_line_items WHERE course_id = ? ORDER BY seq', [courseId]);
  const scores = await platform.db.all<ScoreRow>(
    'SELECT s.* FROM lms_scores s JOIN lms_line_items i ON i.id = s.line_item_id WHERE i.course_id = ? ORDER BY s.sub',
    [courseId],
  );
  return {
    course_id: courseId,
    columns: items.map((item) => ({
      ...lineItemJson(platform, item),
      line_item_id: item.id,
      refuses_scores_with: item.refuses_scores_with,
      scores: scores
        .filter((s) => s.line_item_id === item.id)
        .map((s) => ({
          userId: s.sub,
          scoreGiven: s.score_given,
          scoreMaximum: s.score_maximum,
          comment: s.comment,
          activityProgress: s.activity_progress,
          gradingProgress: s.grading_progress,
          timestamp: s.timestamp,
          received: new Date(s.received).toISOString(),
        })),
    })),
  };
}

/** Clears every score of a course's gradebook; its columns stay. */
export async function clearScores(platform: Platform, courseId: string): Promise<void> {
  await requireCourse(platform, courseId);
  await platform.db.run('DELETE FROM lms_scores WHERE line_item_id IN (SELECT id FROM lms_line_items WHERE course_id = ?)', [courseId]);
}

/** A gradebook that refuses scores for one column: every score POST answers `status` until cleared. */
export async function setRefusal(platform: Platform, lineItemId: string, status: number | null): Promise<Record<string, unknown>> {
  const item = await platform.db.get<LineItemRow>('SELECT * FROM lms_line_items WHERE id = ?', [lineItemId]);
  if (!item) throw new LmsError(404, 'not_found', `line item ${lineItemId} not found`);
  if (status !== null && (!Number.isInteger(status) || status < 400 || status > 599)) {
    throw new LmsError(400, 'invalid_request', 'refuses_scores_with must be an HTTP status from 400 to 599, or null');
  }
  await platform.db.run('UPDATE lms_line_items SET refuses_scores_with = ? WHERE id = ?', [status, lineItemId]);
  return { line_item_id: lineItemId, refuses_scores_with: status };
}
