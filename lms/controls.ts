/**
 * The controls: what an administrator or teacher does in a real LMS, as HTTP calls under `/controls`
 * for tests, tool teams and the service's Sandbox (decision LTI-38). They take the LMS's control token
 * (`Authorization: Bearer …`), never an LTI credential.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  clearScores,
  copyCourse,
  courseJson,
  createCourse,
  createDeployment,
  createUser,
  enrol,
  gradebookJson,
  moveDeployment,
  placeResourceLink,
  requireCourse,
  resourceLinkJson,
  setRefusal,
  unenrol,
  updateCourse,
} from './courses.js';
import { deploymentSettingsJson, putDeploymentSettings } from './deployment-settings.js';
import { bearer, isObject, LmsError, readJson, sendEmpty, sendJson, stringField, textField } from './http.js';
import { issueDeepLinkingLaunch, issueResourceLinkLaunch } from './launch.js';
import { listCourses, listUsers } from './lists.js';
import type { LmsSettings, Platform } from './platform.js';
import { DEFAULT_SETTINGS, putSettings, settingsOf } from './platform.js';
import { initiateRegistration, registrationJson } from './registration.js';
import type { RegistrationRow } from './store.js';
import { registrationOf, resourceLinkOf } from './store.js';

function authorized(platform: Platform, req: IncomingMessage): boolean {
  const given = Buffer.from(bearer(req) ?? '');
  const expected = Buffer.from(platform.controlToken);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const raw = await readJson(req, 'application/json');
  if (!isObject(raw)) throw new LmsError(400, 'invalid_request', 'the request body must be a JSON object');
  return raw;
}

function optionalBoolean(b: Record<string, unknown>, name: string, fallback: boolean): boolean {
  const value = b[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new LmsError(400, 'invalid_request', `${name} must be a boolean`);
  return value;
}

function positiveInteger(b: Record<string, unknown>, name: string, fallback: number): number {
  const value = b[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 86_400) {
    throw new LmsError(400, 'invalid_request', `${name} must be an integer from 1 to 86400`);
  }
  return value;
}

async function requireRegistration(platform: Platform, clientId: string): Promise<RegistrationRow> {
  const row = await registrationOf(platform.db, clientId);
  if (!row) throw new LmsError(404, 'not_found', `client ${clientId} not registered`);
  return row;
}

function queryOf(req: IncomingMessage): URLSearchParams {
  return new URL(req.url ?? '/', 'http://lms.invalid').searchParams;
}

type Route = (platform: Platform, req: IncomingMessage, res: ServerResponse, m: RegExpExecArray) => Promise<void> | void;

const ROUTES: [string, RegExp, Route][] = [
  [
    'POST',
    /^\/registrations\/initiate$/,
    async (p, req, res) => {
      const b = await body(req);
      sendJson(res, 201, await initiateRegistration(p, stringField(b, 'tool_url', true)));
    },
  ],
  [
    'GET',
    /^\/registrations$/,
    async (p, _req, res) => {
      const rows = await p.db.all<RegistrationRow>('SELECT * FROM lms_registrations ORDER BY created, client_id');
      const registrations: Record<string, unknown>[] = [];
      for (const row of rows) registrations.push(await registrationJson(p, row));
      sendJson(res, 200, { registrations });
    },
  ],
  ['GET', /^\/registrations\/([^/]+)$/, async (p, _req, res, m) => sendJson(res, 200, await registrationJson(p, await requireRegistration(p, decodeURIComponent(m[1] ?? ''))))],
  [
    // The developer key's scopes: `grants_line_item_scope: false` is the key without the line-item scope.
    'PATCH',
    /^\/registrations\/([^/]+)$/,
    async (p, req, res, m) => {
      const row = await requireRegistration(p, decodeURIComponent(m[1] ?? ''));
      const b = await body(req);
      const grants = optionalBoolean(b, 'grants_line_item_scope', row.grants_line_item_scope === 1);
      await p.db.run('UPDATE lms_registrations SET grants_line_item_scope = ? WHERE client_id = ?', [grants ? 1 : 0, row.client_id]);
      sendJson(res, 200, await registrationJson(p, await requireRegistration(p, row.client_id)));
    },
  ],
  [
    // A second school: another deployment of the same registration.
    'POST',
    /^\/deployments$/,
    async (p, req, res) => {
      const b = await body(req);
      const d = await createDeployment(p, stringField(b, 'client_id', true), stringField(b, 'title') ?? 'School', stringField(b, 'deployment_id'));
      sendJson(res, 201, { deployment_id: d.deployment_id, client_id: d.client_id, title: d.title });
    },
  ],
  [
    // A school moved to another registration (LTI-97).
    'PATCH',
    /^\/deployments\/([^/]+)$/,
    async (p, req, res, m) => {
      const b = await body(req);
      const d = await moveDeployment(p, decodeURIComponent(m[1] ?? ''), stringField(b, 'client_id', true));
      sendJson(res, 200, { deployment_id: d.deployment_id, client_id: d.client_id, title: d.title });
    },
  ],
  // A school's own token lifetimes and line-item scope (decisions LTI-71, LTI-72): null follows the LMS-wide one.
  ['GET', /^\/deployments\/([^/]+)\/settings$/, async (p, _req, res, m) => sendJson(res, 200, await deploymentSettingsJson(p, decodeURIComponent(m[1] ?? '')))],
  ['PATCH', /^\/deployments\/([^/]+)\/settings$/, async (p, req, res, m) => sendJson(res, 200, await putDeploymentSettings(p, decodeURIComponent(m[1] ?? ''), await body(req)))],
  ['DELETE', /^\/deployments\/([^/]+)\/settings$/, async (p, _req, res, m) => sendJson(res, 200, await putDeploymentSettings(p, decodeURIComponent(m[1] ?? ''), 'reset'))],
  // The lists an administrator reads (decision LTI-74).
  ['GET', /^\/users$/, async (p, req, res) => sendJson(res, 200, await listUsers(p, queryOf(req)))],
  ['GET', /^\/courses$/, async (p, req, res) => sendJson(res, 200, await listCourses(p, queryOf(req)))],
  [
    'POST',
    /^\/users$/,
    async (p, req, res) => {
      const b = await body(req);
      const sub = stringField(b, 'sub');
      const user = await createUser(p, {
        ...(sub !== undefined ? { sub } : {}),
        given_name: stringField(b, 'given_name', true),
        family_name: stringField(b, 'family_name', true),
        email: stringField(b, 'email', true),
      });
      sendJson(res, 201, { sub: user.sub, given_name: user.given_name, family_name: user.family_name, email: user.email });
    },
  ],
  [
    'POST',
    /^\/courses$/,
    async (p, req, res) => {
      const b = await body(req);
      const id = stringField(b, 'id');
      const course = await createCourse(p, {
        ...(id !== undefined ? { id } : {}),
        deployment_id: stringField(b, 'deployment_id', true),
        title: stringField(b, 'title', true),
        label: textField(b, 'label') ?? '',
      });
      sendJson(res, 201, await courseJson(p, course));
    },
  ],
  ['GET', /^\/courses\/([^/]+)$/, async (p, _req, res, m) => sendJson(res, 200, await courseJson(p, await requireCourse(p, decodeURIComponent(m[1] ?? ''))))],
  [
    // Rename and re-term.
    'PATCH',
    /^\/courses\/([^/]+)$/,
    async (p, req, res, m) => {
      const b = await body(req);
      const title = stringField(b, 'title');
      const label = textField(b, 'label');
      const course = await updateCourse(p, decodeURIComponent(m[1] ?? ''), { ...(title !== undefined ? { title } : {}), ...(label !== undefined ? { label } : {}) });
      sendJson(res, 200, await courseJson(p, course));
    },
  ],
  [
    'POST',
    /^\/courses\/([^/]+)\/copies$/,
    async (p, req, res, m) => {
      const b = await body(req);
      const title = stringField(b, 'title');
      const label = textField(b, 'label');
      const deployment = stringField(b, 'deployment_id');
      const id = stringField(b, 'id');
      const copy = await copyCourse(p, decodeURIComponent(m[1] ?? ''), {
        ...(id !== undefined ? { id } : {}),
        ...(title !== undefined ? { title } : {}),
        ...(label !== undefined ? { label } : {}),
        ...(deployment !== undefined ? { deployment_id: deployment } : {}),
        with_links: optionalBoolean(b, 'with_links', true),
        with_enrolments: optionalBoolean(b, 'with_enrolments', false),
      });
      sendJson(res, 201, await courseJson(p, copy));
    },
  ],
  [
    'PUT',
    /^\/courses\/([^/]+)\/enrolments\/([^/]+)$/,
    async (p, req, res, m) => {
      const b = await body(req);
      const roles = b['roles'];
      if (!Array.isArray(roles) || roles.some((r) => typeof r !== 'string')) throw new LmsError(400, 'invalid_request', 'roles must be an array of strings');
      await enrol(p, decodeURIComponent(m[1] ?? ''), decodeURIComponent(m[2] ?? ''), roles as string[]);
      sendEmpty(res, 204);
    },
  ],
  [
    'DELETE',
    /^\/courses\/([^/]+)\/enrolments\/([^/]+)$/,
    async (p, _req, res, m) => {
      await unenrol(p, decodeURIComponent(m[1] ?? ''), decodeURIComponent(m[2] ?? ''));
      sendEmpty(res, 204);
    },
  ],
  [
    // A placement made by hand: `line_item: null` is an assessment placement with no gradebook column.
    'POST',
    /^\/courses\/([^/]+)\/links$/,
    async (p, req, res, m) => {
      const b = await body(req);
      const custom = b['custom'] ?? {};
      if (!isObject(custom) || Object.values(custom).some((v) => typeof v !== 'string')) throw new LmsError(400, 'invalid_request', 'custom must be an object of strings');
      const li = b['line_item'];
      let lineItem = null;
      if (li !== undefined && li !== null) {
        if (!isObject(li)) throw new LmsError(400, 'invalid_request', 'line_item must be an object or null');
        const max = li['score_maximum'];
        if (typeof max !== 'number' || !Number.isFinite(max) || max <= 0) throw new LmsError(400, 'invalid_request', 'line_item.score_maximum must be greater than 0');
        lineItem = { label: stringField(li, 'label') ?? stringField(b, 'title', true), scoreMaximum: max, resourceId: stringField(li, 'resource_id') ?? null, tag: stringField(li, 'tag') ?? null };
      }
      const json = await placeResourceLink(p, decodeURIComponent(m[1] ?? ''), {
        title: stringField(b, 'title', true),
        url: stringField(b, 'url') ?? null,
        custom: custom as Record<string, string>,
        lineItem,
      });
      sendJson(res, 201, json);
    },
  ],
  ['GET', /^\/courses\/([^/]+)\/gradebook$/, async (p, _req, res, m) => sendJson(res, 200, await gradebookJson(p, decodeURIComponent(m[1] ?? '')))],
  [
    'DELETE',
    /^\/courses\/([^/]+)\/scores$/,
    async (p, _req, res, m) => {
      await clearScores(p, decodeURIComponent(m[1] ?? ''));
      sendEmpty(res, 204);
    },
  ],
  [
    'GET',
    /^\/links\/([^/]+)$/,
    async (p, _req, res, m) => {
      const link = await resourceLinkOf(p.db, decodeURIComponent(m[1] ?? ''));
      if (!link) throw new LmsError(404, 'not_found', `resource link ${m[1] ?? ''} not found`);
      sendJson(res, 200, await resourceLinkJson(p, link));
    },
  ],
  [
    // A gradebook that refuses a score.
    'PATCH',
    /^\/line-items\/([^/]+)$/,
    async (p, req, res, m) => {
      const b = await body(req);
      const status = b['refuses_scores_with'];
      if (status !== null && typeof status !== 'number') throw new LmsError(400, 'invalid_request', 'refuses_scores_with must be an HTTP status or null');
      sendJson(res, 200, await setRefusal(p, decodeURIComponent(m[1] ?? ''), status));
    },
  ],
  [
    'POST',
    /^\/launches$/,
    async (p, req, res) => {
      const b = await body(req);
      const returnUrl = stringField(b, 'return_url');
      const launch = await issueResourceLinkLaunch(p, {
        resourceLinkId: stringField(b, 'resource_link_id', true),
        sub: stringField(b, 'sub', true),
        ...(returnUrl !== undefined ? { returnUrl } : {}),
      });
      sendJson(res, 201, launch);
    },
  ],
  [
    'POST',
    /^\/deep-links$/,
    async (p, req, res) => {
      const b = await body(req);
      const returnUrl = stringField(b, 'return_url');
      const launch = await issueDeepLinkingLaunch(p, {
        courseId: stringField(b, 'course_id', true),
        sub: stringField(b, 'sub', true),
        ...(returnUrl !== undefined ? { returnUrl } : {}),
      });
      sendJson(res, 201, launch);
    },
  ],
  ['GET', /^\/settings$/, async (p, _req, res) => sendJson(res, 200, await settingsOf(p))],
  [
    // Short token lifetimes.
    'PATCH',
    /^\/settings$/,
    async (p, req, res) => {
      const b = await body(req);
      const now = await settingsOf(p);
      const next: LmsSettings = {
        access_token_ttl_seconds: positiveInteger(b, 'access_token_ttl_seconds', now.access_token_ttl_seconds),
        id_token_ttl_seconds: positiveInteger(b, 'id_token_ttl_seconds', now.id_token_ttl_seconds),
        launch_ttl_seconds: positiveInteger(b, 'launch_ttl_seconds', now.launch_ttl_seconds),
        platform_storage: optionalBoolean(b, 'platform_storage', now.platform_storage),
      };
      await putSettings(p, next);
      sendJson(res, 200, next);
    },
  ],
  [
    'DELETE',
    /^\/settings$/,
    async (p, _req, res) => {
      await putSettings(p, { ...DEFAULT_SETTINGS });
      sendJson(res, 200, await settingsOf(p));
    },
  ],
  [
    'POST',
    /^\/keys\/rotate$/,
    async (p, _req, res) => {
      const kid = await p.keys.rotate(p.clock.nowMs());
      sendJson(res, 201, { kid });
    },
  ],
];

export async function handleControl(platform: Platform, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  if (!authorized(platform, req)) throw new LmsError(401, 'invalid_token', 'the controls need the LMS control token', { 'WWW-Authenticate': 'Bearer realm="lms-controls"' });
  const method = req.method ?? 'GET';
  let pathMatched = false;
  for (const [routeMethod, pattern, route] of ROUTES) {
    const m = pattern.exec(path);
    if (!m) continue;
    pathMatched = true;
    if (routeMethod === method) {
      await route(platform, req, res, m);
      return;
    }
  }
  if (pathMatched) throw new LmsError(405, 'method_not_allowed', `${method} is not allowed on /controls${path}`);
  throw new LmsError(404, 'not_found', `no control at /controls${path}`);
}
