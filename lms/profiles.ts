/**
 * How the reference LMS looks to a tool (decision LTI-32): the shapes of its IDs and AGS URLs and the
 * habits of its launches, after one LMS family. `reference` is plain; `canvas` and `moodle` copy what those
 * platforms send (`../shared/lti/reference.md`, "Per-LMS habits"), so a tool's code meets their quirks on
 * loopback: Canvas's numeric client IDs, `N:hash` deployments, `/api/lti/courses/.../line_items/...` and no
 * `lti_deployment_id` at login; Moodle's small integer deployments and line-item URLs with `?type_id=N`.
 * The issuer stays the LMS's own URL in every profile: Dynamic Registration requires that it prefix the
 * OpenID configuration URL, and the real hosts are not reachable here.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { LmsDb } from './store.js';
import { nextCounter } from './store.js';

export type LmsProfileName = 'reference' | 'canvas' | 'moodle';
export const PROFILE_NAMES: readonly LmsProfileName[] = ['reference', 'canvas', 'moodle'];

/** Where an AGS request points, read back from a URL the profile made. */
export interface AgsTarget {
  courseId: string;
  lineItemId: string | null;
  scores: boolean;
  results: boolean;
}

export interface LmsProfile {
  readonly name: LmsProfileName;
  readonly productFamilyCode: string;
  readonly platformName: string;
  // Counter-based IDs are drawn from the store (one atomic upsert), so processes sharing it never repeat one.
  newClientId(db: LmsDb): string | Promise<string>;
  newDeploymentId(db: LmsDb, clientId: string): string | Promise<string>;
  newCourseId(db: LmsDb): string | Promise<string>;
  newLineItemId(db: LmsDb): string | Promise<string>;
  newResourceLinkId(db: LmsDb): string | Promise<string>;
  /** The line-item container's path (with query, if the family puts one there). */
  lineItemsPath(courseId: string): string;
  /** A line item's path (its `id` is the origin + this). */
  lineItemPath(courseId: string, lineItemId: string): string;
  /** Reads an AGS path back; null when it names no AGS endpoint of this profile. */
  parseAgsPath(pathname: string): AgsTarget | null;
  /** Whether login initiation carries `lti_deployment_id` (Canvas leaves it out). */
  readonly sendsDeploymentAtLogin: boolean;
  /**
   * The frame a tool posts its platform-storage messages to (`lti_storage_target`), when the LMS offers
   * platform storage (the `platform_storage` setting): `_parent`, or a named frame beside the tool's.
   */
  readonly storageTarget: string;
  /** Custom substitution variables beyond the common ones (`$Context.id.history` and the rest). */
  extraVariables(courseHistory: readonly string[]): Record<string, string>;
  /**
   * The roles an id_token carries for an enrolment's roles: the family's habit of adding institution and
   * system roles (Canvas sends `institution/person#Student` and `system/person#User` beside `#Learner`).
   */
  rolesClaim(roles: readonly string[]): string[];
  /** Claims of the family's own beyond LTI's (Canvas's placement, Moodle's `ext` and `lis`). */
  extraClaims(input: { messageType: string; sub: string; courseId: string; email: string }): Record<string, unknown>;
}

const LIS = 'http://purl.imsglobal.org/vocab/lis/v2/';

function token(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

function hexToken(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

const reference: LmsProfile = {
  name: 'reference',
  productFamilyCode: 'tis-reference-lms',
  platformName: 'Reference LMS',
  newClientId: () => `client-${token(9)}`,
  newDeploymentId: () => `deployment-${token(6)}`,
  newCourseId: () => `course-${token(6)}`,
  newLineItemId: () => `li-${token(9)}`,
  newResourceLinkId: () => `rl-${token(9)}`,
  lineItemsPath: (courseId) => `/ags/courses/${encodeURIComponent(courseId)}/lineitems`,
  lineItemPath: (courseId, id) => `/ags/courses/${encodeURIComponent(courseId)}/lineitems/${encodeURIComponent(id)}`,
  parseAgsPath(pathname) {
    const m = /^\/ags\/courses\/([^/]+)\/lineitems(?:\/([^/]+)(?:\/(scores|results))?)?$/.exec(pathname);
    if (!m?.[1]) return null;
    return { courseId: decodeURIComponent(m[1]), lineItemId: m[2] ? decodeURIComponent(m[2]) : null, scores: m[3] === 'scores', results: m[3] === 'results' };
  },
  sendsDeploymentAtLogin: true,
  storageTarget: '_parent',
  extraVariables: () => ({}),
  rolesClaim: (roles) => [...roles],
  extraClaims: () => ({}),
};

const canvas: LmsProfile = {
  name: 'canvas',
  productFamilyCode: 'canvas',
  platformName: 'Canvas LMS',
  // A developer key's ID: 10000000000000 + a sequence, as hosted Canvas shows them.
  newClientId: async (db) => String(10000000000000 + (await nextCounter(db, 'canvas_key'))),
  newDeploymentId: async (db, clientId) => {
    const n = await nextCounter(db, 'canvas_deployment');
    return `${n}:${createHash('sha1').update(`${clientId}:${n}:${hexToken(4)}`).digest('hex')}`;
  },
  newCourseId: () => hexToken(20),
  newLineItemId: async (db) => String(await nextCounter(db, 'canvas_line_item')),
  newResourceLinkId: () => hexToken(20),
  lineItemsPath: (courseId) => `/api/lti/courses/${encodeURIComponent(courseId)}/line_items`,
  lineItemPath: (courseId, id) => `/api/lti/courses/${encodeURIComponent(courseId)}/line_items/${encodeURIComponent(id)}`,
  parseAgsPath(pathname) {
    const m = /^\/api\/lti\/courses\/([^/]+)\/line_items(?:\/([^/]+)(?:\/(scores|results))?)?$/.exec(pathname);
    if (!m?.[1]) return null;
    return { courseId: decodeURIComponent(m[1]), lineItemId: m[2] ? decodeURIComponent(m[2]) : null, scores: m[3] === 'scores', results: m[3] === 'results' };
  },
  sendsDeploymentAtLogin: false,
  storageTarget: 'post_message_forwarding',
  extraVariables: (history) => ({ '$Canvas.course.previousContextIds': history.join(',') }),
  rolesClaim: (roles) => {
    const out = [...roles];
    if (roles.includes(`${LIS}membership#Learner`)) out.push(`${LIS}institution/person#Student`);
    if (roles.includes(`${LIS}membership#Instructor`)) out.push(`${LIS}institution/person#Instructor`);
    out.push(`${LIS}system/person#User`);
    return out;
  },
  extraClaims: ({ messageType }) => ({
    'https://www.instructure.com/placement': messageType === 'LtiDeepLinkingRequest' ? 'assignment_selection' : null,
  }),
};

const moodle: LmsProfile = {
  name: 'moodle',
  productFamilyCode: 'moodle',
  platformName: 'Moodle',
  newClientId: () => token(11).replace(/[-_]/g, 'x').slice(0, 15),
  newDeploymentId: async (db) => String(await nextCounter(db, 'moodle_deployment')),
  newCourseId: async (db) => String(1 + (await nextCounter(db, 'moodle_course'))),
  newLineItemId: async (db) => String(await nextCounter(db, 'moodle_line_item')),
  newResourceLinkId: async (db) => String(await nextCounter(db, 'moodle_resource_link')),
  // Moodle's services.php URLs carry the tool type; the reference LMS has one type per LMS, 1.
  lineItemsPath: (courseId) => `/mod/lti/services.php/${encodeURIComponent(courseId)}/lineitems?type_id=1`,
  lineItemPath: (courseId, id) => `/mod/lti/services.php/${encodeURIComponent(courseId)}/lineitems/${encodeURIComponent(id)}/lineitem?type_id=1`,
  parseAgsPath(pathname) {
    const m = /^\/mod\/lti\/services\.php\/([^/]+)\/lineitems(?:\/([^/]+)\/lineitem(?:\/(scores|results))?)?$/.exec(pathname);
    if (!m?.[1]) return null;
    return { courseId: decodeURIComponent(m[1]), lineItemId: m[2] ? decodeURIComponent(m[2]) : null, scores: m[3] === 'scores', results: m[3] === 'results' };
  },
  sendsDeploymentAtLogin: true,
  storageTarget: '_parent',
  extraVariables: () => ({}),
  rolesClaim: (roles) => [...roles],
  extraClaims: ({ sub, courseId, email }) => ({
    'https://purl.imsglobal.org/spec/lti/claim/ext': { user_username: email.split('@')[0] ?? sub, lms: 'moodle-2' },
    'https://purl.imsglobal.org/spec/lti/claim/lis': { person_sourcedid: '', course_section_sourcedid: '', course_offering_sourcedid: courseId },
  }),
};

export const PROFILES: Readonly<Record<LmsProfileName, LmsProfile>> = { reference, canvas, moodle };

export function isProfileName(value: unknown): value is LmsProfileName {
  return typeof value === 'string' && (PROFILE_NAMES as readonly string[]).includes(value);
}
