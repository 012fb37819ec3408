/**
 * The Sandbox gradebook: the LMS side the service plays for Sandbox courses (decision S-12). Its columns
 * are AGS line items, one per assessment placement (made when the placement is made) plus any a client
 * creates; each keeps the latest score per user, and refuses a score whose timestamp is not later than
 * the one it holds (409), compared to the microsecond.
 */
import { randomBytes } from 'node:crypto';
import { Problem } from '../http/problem.js';
import { base32 } from '../store/ids.js';
import type {
  AppRecord,
  ContextRecord,
  GradebookScoreRecord,
  LineItemRecord,
  MemberRecord,
  PlacementRecord,
  Repositories,
  SandboxLmsTokenRecord,
  UserRecord,
} from '../store/index.js';
import { isoFromMs, isoFromUs } from '../store/index.js';
import { sandboxLineItemUrl } from './school.js';

/** AGS line item as JSON (`application/vnd.ims.lis.v2.lineitem+json`). */
export interface LtiLineItemJson {
  id: string;
  scoreMaximum: number;
  label: string;
  resourceId?: string;
  resourceLinkId?: string;
  tag?: string;
  startDateTime?: string;
  endDateTime?: string;
  gradesReleased: boolean;
}

export type SandboxRole = 'instructor' | 'assistant' | 'manager' | 'student_1' | 'student_2';

export interface GradebookScoreJson {
  role: SandboxRole;
  member_id: string;
  score_given: number | null;
  score_maximum: number | null;
  comment: string | null;
  activity_progress: 'Initialized' | 'Started' | 'InProgress' | 'Submitted' | 'Completed';
  grading_progress: 'FullyGraded' | 'Pending' | 'PendingManual' | 'Failed' | 'NotReady';
  timestamp: string;
  received: string;
}

export interface GradebookColumnJson {
  line_item_id: string;
  placement_id: string | null;
  label: string;
  score_maximum: number;
  grades_released: boolean;
  scores: GradebookScoreJson[];
}

export interface SandboxGradebookJson {
  context_id: string;
  columns: GradebookColumnJson[];
}

const ACTIVITY_PROGRESS = ['Initialized', 'Started', 'InProgress', 'Submitted', 'Completed'] as const;
const GRADING_PROGRESS = ['FullyGraded', 'Pending', 'PendingManual', 'Failed', 'NotReady'] as const;

type GradebookRepos = Pick<Repositories, 'apps' | 'contexts' | 'gradebook' | 'members' | 'users' | 'placements'>;

/** `lit_` + 26 base32 characters (decisions L-09, S-13). */
export function newLineItemId(): string {
  return `lit_${base32(randomBytes(16))}`;
}

/** Whether the tool's scores are visible to students: its `grades_released` (decision NS-02). */
async function gradesReleased(repos: Pick<Repositories, 'apps'>, context: ContextRecord): Promise<boolean> {
  if (!context.sandboxAppId) return true;
  const app: AppRecord | null = await repos.apps.get(context.sandboxAppId);
  return app?.gradesReleased ?? true;
}

export function lineItemJson(publicUrl: string, item: LineItemRecord, released: boolean): LtiLineItemJson {
  const json: LtiLineItemJson = {
    id: sandboxLineItemUrl(publicUrl, item.contextId, item.id),
    scoreMaximum: item.scoreMaximum,
    label: item.label,
    gradesReleased: released,
  };
  if (item.resourceId !== null) json.resourceId = item.resourceId;
  if (item.resourceLink !== null) json.resourceLinkId = item.resourceLink;
  if (item.tag !== null) json.tag = item.tag;
  if (item.startDateTime !== null) json.startDateTime = item.startDateTime;
  if (item.endDateTime !== null) json.endDateTime = item.endDateTime;
  return json;
}

/**
 * The gradebook column of an assessment placement, made when the placement is made (by the Sandbox's
 * placement code, and by the test harness): points from the placement's copy of the location entry.
 * Records the column on the placement, which is what gives its launches a `grade.submit` URL.
 */
export async function createLineItem(
  repos: Pick<Repositories, 'gradebook' | 'placements'>,
  input: { placement: PlacementRecord; label?: string; scoreMaximum?: number },
): Promise<LineItemRecord> {
  const { placement } = input;
  const item = await repos.gradebook.createLineItem({
    id: newLineItemId(),
    contextId: placement.contextId,
    label: input.label ?? placement.entry.label,
    scoreMaximum: input.scoreMaximum ?? placement.entry.points ?? 100,
    resourceLink: placement.resourceLink,
    placementId: placement.id,
    resourceId: placement.locationId,
  });
  await repos.placements.setLineItem(placement.id, item.id);
  return item;
}

/** The course, when it is one of the token's school; 404 otherwise, exactly as for a course that does not exist. */
export async function contextOfToken(
  repos: Pick<Repositories, 'contexts'>,
  token: SandboxLmsTokenRecord,
  contextId: string,
): Promise<ContextRecord> {
  const context = await repos.contexts.get(contextId);
  if (!context || context.organizationId !== token.organizationId) {
    throw new Problem(404, 'context_not_found', `context ${contextId} not found`);
  }
  return context;
}

export async function lineItemInContext(
  repos: Pick<Repositories, 'gradebook'>,
  context: ContextRecord,
  lineItemId: string,
): Promise<LineItemRecord> {
  const item = await repos.gradebook.getLineItem(lineItemId);
  if (!item || item.contextId !== context.id) {
    throw new Problem(404, 'line_item_not_found', `line item ${lineItemId} not found in context ${context.id}`);
  }
  return item;
}

function unprocessable(code: string, field: string, message: string): Problem {
  return new Problem(422, code, message, { errors: [{ path: `/body/${field}`, message }] });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalString(body: Record<string, unknown>, field: string): string | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw unprocessable('invalid_type', field, `${field} must be a string`);
  return value;
}

function optionalDateTime(body: Record<string, unknown>, field: string): string | null {
  const value = optionalString(body, field);
  if (value !== null && parseTimestampUs(value) === null) {
    throw unprocessable('invalid_timestamp', field, `${field} must be an ISO 8601 date-time`);
  }
  return value;
}

/** The fields of an AGS line item body (create or PUT); `id` and extension properties are ignored. */
export function parseLineItemBody(body: unknown): {
  label: string;
  scoreMaximum: number;
  resourceId: string | null;
  resourceLinkId: string | null;
  tag: string | null;
  startDateTime: string | null;
  endDateTime: string | null;
} {
  if (!isObject(body)) throw new Problem(422, 'invalid_type', 'a line item must be a JSON object');
  const scoreMaximum = body['scoreMaximum'];
  if (scoreMaximum === undefined) throw unprocessable('field_required', 'scoreMaximum', 'scoreMaximum is required');
  if (typeof scoreMaximum !== 'number' || !Number.isFinite(scoreMaximum) || scoreMaximum <= 0) {
    throw unprocessable('invalid_score_maximum', 'scoreMaximum', 'scoreMaximum must be greater than 0');
  }
  const label = body['label'];
  if (label === undefined) throw unprocessable('field_required', 'label', 'label is required');
  if (typeof label !== 'string' || label === '') throw unprocessable('invalid_label', 'label', 'label must be a non-empty string');
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

export interface LineItemFilter {
  resource_link_id?: string;
  resource_id?: string;
  tag?: string;
}

export async function listLineItems(
  repos: Pick<Repositories, 'apps' | 'gradebook'>,
  publicUrl: string,
  context: ContextRecord,
  filter: LineItemFilter,
): Promise<LtiLineItemJson[]> {
  const released = await gradesReleased(repos, context);
  const items = await repos.gradebook.listLineItems(context.id);
  return items
    .filter((i) => filter.resource_link_id === undefined || i.resourceLink === filter.resource_link_id)
    .filter((i) => filter.resource_id === undefined || i.resourceId === filter.resource_id)
    .filter((i) => filter.tag === undefined || i.tag === filter.tag)
    .map((i) => lineItemJson(publicUrl, i, released));
}

export async function createClientLineItem(
  repos: Pick<Repositories, 'apps' | 'gradebook' | 'placements'>,
  publicUrl: string,
  context: ContextRecord,
  body: unknown,
): Promise<LtiLineItemJson> {
  const fields = parseLineItemBody(body);
  // A column made for a resource link of this course belongs to that placement, as in an LMS.
  const placement = fields.resourceLinkId ? await repos.placements.findByResourceLink(fields.resourceLinkId) : null;
  const item = await repos.gradebook.createLineItem({
    id: newLineItemId(),
    contextId: context.id,
    label: fields.label,
    scoreMaximum: fields.scoreMaximum,
    resourceLink: fields.resourceLinkId,
    placementId: placement && placement.contextId === context.id ? placement.id : null,
    tag: fields.tag,
    resourceId: fields.resourceId,
    startDateTime: fields.startDateTime,
    endDateTime: fields.endDateTime,
  });
  return lineItemJson(publicUrl, item, await gradesReleased(repos, context));
}

export async function readLineItem(
  repos: Pick<Repositories, 'apps'>,
  publicUrl: string,
  context: ContextRecord,
  item: LineItemRecord,
): Promise<LtiLineItemJson> {
  return lineItemJson(publicUrl, item, await gradesReleased(repos, context));
}

/** AGS PUT: the line item's own fields are replaced; its resource link stays (it names the placement). */
export async function replaceLineItem(
  repos: Pick<Repositories, 'apps' | 'gradebook'>,
  publicUrl: string,
  context: ContextRecord,
  item: LineItemRecord,
  body: unknown,
): Promise<LtiLineItemJson> {
  const fields = parseLineItemBody(body);
  const updated = await repos.gradebook.replaceLineItem(item.id, {
    label: fields.label,
    scoreMaximum: fields.scoreMaximum,
    tag: fields.tag,
    resourceId: fields.resourceId,
    startDateTime: fields.startDateTime,
    endDateTime: fields.endDateTime,
  });
  if (!updated) throw new Problem(404, 'line_item_not_found', `line item ${item.id} not found in context ${context.id}`);
  return lineItemJson(publicUrl, updated, await gradesReleased(repos, context));
}

/**
 * Microseconds since the epoch of an ISO 8601 date-time with a zone, keeping up to six fractional
 * digits (the Sandbox compares scores to the microsecond); null when it is not one.
 */
export function parseTimestampUs(value: string): number | null {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/i.exec(value);
  if (!m?.[1] || !m[3]) return null;
  const wholeMs = Date.parse(`${m[1]}${m[3].toUpperCase()}`);
  if (Number.isNaN(wholeMs)) return null;
  const micros = Number((m[2] ?? '').padEnd(6, '0').slice(0, 6));
  return wholeMs * 1000 + micros;
}

interface ParsedScore {
  userId: string;
  scoreGiven: number | null;
  scoreMaximum: number | null;
  comment: string | null;
  timestampUs: number;
  activityProgress: string;
  gradingProgress: string;
}

export function parseScoreBody(body: unknown): ParsedScore {
  if (!isObject(body)) throw new Problem(422, 'invalid_type', 'a score must be a JSON object');
  const userId = body['userId'];
  if (userId === undefined) throw unprocessable('field_required', 'userId', 'userId is required');
  if (typeof userId !== 'string' || userId === '') throw unprocessable('invalid_type', 'userId', 'userId must be a non-empty string');
  const timestamp = body['timestamp'];
  if (timestamp === undefined) throw unprocessable('field_required', 'timestamp', 'timestamp is required');
  const timestampUs = typeof timestamp === 'string' ? parseTimestampUs(timestamp) : null;
  if (timestampUs === null) throw unprocessable('invalid_timestamp', 'timestamp', 'timestamp must be an ISO 8601 date-time');
  const activityProgress = body['activityProgress'];
  if (typeof activityProgress !== 'string' || !(ACTIVITY_PROGRESS as readonly string[]).includes(activityProgress)) {
    throw unprocessable('invalid_enum', 'activityProgress', `activityProgress must be one of [${ACTIVITY_PROGRESS.join(', ')}]`);
  }
  const gradingProgress = body['gradingProgress'];
  if (typeof gradingProgress !== 'string' || !(GRADING_PROGRESS as readonly string[]).includes(gradingProgress)) {
    throw unprocessable('invalid_enum', 'gradingProgress', `gradingProgress must be one of [${GRADING_PROGRESS.join(', ')}]`);
  }
  const scoreGiven = body['scoreGiven'];
  const scoreMaximum = body['scoreMaximum'];
  if (scoreGiven !== undefined && (typeof scoreGiven !== 'number' || !Number.isFinite(scoreGiven) || scoreGiven < 0)) {
    throw unprocessable('invalid_score_given', 'scoreGiven', 'scoreGiven must be a number of at least 0');
  }
  if (scoreGiven !== undefined && scoreMaximum === undefined) {
    throw unprocessable('field_required', 'scoreMaximum', 'scoreMaximum is required with scoreGiven');
  }
  if (scoreMaximum !== undefined && (typeof scoreMaximum !== 'number' || !Number.isFinite(scoreMaximum) || scoreMaximum <= 0)) {
    throw unprocessable('invalid_score_maximum', 'scoreMaximum', 'scoreMaximum must be greater than 0');
  }
  const comment = body['comment'];
  if (comment !== undefined && comment !== null && typeof comment !== 'string') {
    throw unprocessable('invalid_type', 'comment', 'comment must be a string');
  }
  return {
    userId,
    scoreGiven: typeof scoreGiven === 'number' ? scoreGiven : null,
    scoreMaximum: typeof scoreMaximum === 'number' ? scoreMaximum : null,
    comment: typeof comment === 'string' ? comment : null,
    timestampUs,
    activityProgress,
    gradingProgress,
  };
}

/** AGS score POST: 204 when the column holds it now, 409 when it holds a score as new or newer. */
export async function postScore(
  repos: Pick<Repositories, 'apps' | 'gradebook' | 'contexts' | 'users' | 'members'>,
  context: ContextRecord,
  item: LineItemRecord,
  body: unknown,
): Promise<GradebookScoreRecord> {
  const score = parseScoreBody(body);
  const user = await repos.users.findByExternal(context.organizationId, score.userId);
  const member = user ? await repos.members.find(context.id, user.id) : null;
  if (!user || !member) {
    throw unprocessable('unknown_user', 'userId', `userId ${score.userId} is not a member of context ${context.id}`);
  }
  const result = await repos.gradebook.putScore({
    lineItemId: item.id,
    userId: user.id,
    scoreGiven: score.scoreGiven,
    scoreMaximum: score.scoreMaximum,
    // An empty comment is stored as none, like a score sent without one.
    ...(score.comment ? { comment: score.comment } : {}),
    activityProgress: score.activityProgress,
    gradingProgress: score.gradingProgress,
    released: await gradesReleased(repos, context),
    timestampUs: score.timestampUs,
  });
  if (!result.applied) {
    throw new Problem(
      409,
      'stale_timestamp',
      `score timestamp ${isoFromUs(score.timestampUs)} is not later than the last score's timestamp ${result.score.timestamp}`,
    );
  }
  return result.score;
}

const ROLE_ORDER: readonly SandboxRole[] = ['instructor', 'assistant', 'manager', 'student_1', 'student_2'];

/**
 * The Sandbox role of each member of a Sandbox course. The Sandbox (next issue) knows its trial users and
 * may pass its own mapping; by default the role follows the member's groups, and the students of the
 * course are student_1 and student_2 in the order they joined.
 */
export type RoleOf = (member: MemberRecord, user: UserRecord | null) => SandboxRole | null;

function defaultRoles(members: readonly MemberRecord[]): Map<string, SandboxRole> {
  const roles = new Map<string, SandboxRole>();
  let students = 0;
  for (const member of members) {
    if (member.groups.includes('instructor')) roles.set(member.id, 'instructor');
    else if (member.groups.includes('assistant')) roles.set(member.id, 'assistant');
    else if (member.groups.includes('manager')) roles.set(member.id, 'manager');
    else if (member.groups.includes('student')) {
      students += 1;
      if (students <= 2) roles.set(member.id, students === 1 ? 'student_1' : 'student_2');
    }
  }
  return roles;
}

/**
 * The Grades tab of one Sandbox course (`GET /dashboard/v1/apps/{app_id}/sandbox/grades`, served by the
 * next issue): its columns in creation order, each with the latest score per member in role order. A
 * score of someone with no Sandbox role is left out (the schema names only the five trial users).
 */
export async function readSandboxGradebook(
  repos: GradebookRepos,
  context: ContextRecord,
  roleOf?: RoleOf,
): Promise<SandboxGradebookJson> {
  const released = await gradesReleased(repos, context);
  const members = await repos.members.listByContext(context.id);
  const byUser = new Map(members.map((m) => [m.userId, m]));
  const defaults = defaultRoles(members);
  const users = new Map<string, UserRecord | null>();
  const role = async (member: MemberRecord): Promise<SandboxRole | null> => {
    if (!roleOf) return defaults.get(member.id) ?? null;
    if (!users.has(member.userId)) users.set(member.userId, await repos.users.get(member.userId));
    return roleOf(member, users.get(member.userId) ?? null);
  };
  const columns: GradebookColumnJson[] = [];
  for (const item of await repos.gradebook.listLineItems(context.id)) {
    const scores: GradebookScoreJson[] = [];
    for (const s of await repos.gradebook.listScores(item.id)) {
      const member = byUser.get(s.userId);
      if (!member) continue;
      const r = await role(member);
      if (!r) continue;
      scores.push({
        role: r,
        member_id: member.id,
        score_given: s.scoreGiven,
        score_maximum: s.scoreMaximum,
        comment: s.comment === '' ? null : s.comment,
        activity_progress: s.activityProgress as GradebookScoreJson['activity_progress'],
        grading_progress: s.gradingProgress as GradebookScoreJson['grading_progress'],
        timestamp: s.timestamp,
        received: isoFromMs(s.updatedAt),
      });
    }
    scores.sort((a, b) => ROLE_ORDER.indexOf(a.role) - ROLE_ORDER.indexOf(b.role));
    columns.push({
      line_item_id: item.id,
      placement_id: item.placementId,
      label: item.label,
      score_maximum: item.scoreMaximum,
      grades_released: released,
      scores,
    });
  }
  return { context_id: context.id, columns };
}
