/**
 * Builders, teams, tools and the grade history (tags Builders, Apps, Grade history). Registration takes a
 * builder's credential and makes the builder the tool's first team member (NS-10); the tool starts in
 * draft with its Sandbox. Settings are all or nothing and check endpoint URLs by the contract's rules when
 * written (and the outbound client checks them again on every call).
 */
import { developmentOnlyFields } from '../outbound/development-urls.js';
import { schemas } from '../../generated/dashboard/schemas.js';
import type { components, operations } from '../../generated/dashboard/types.js';
import { isDevelopmentOnlyUrl, type EndpointRule } from '../../rules/endpoint-url.js';
import { recordAction } from '../audit/index.js';
import { Problem } from '../http/problem.js';
import type { Handlers } from '../http/registry.js';
import { withGuard } from '../http/registry.js';
import type { Services } from '../http/services.js';
import type { EndpointField } from '../outbound/index.js';
import { ensureSandbox } from '../sandbox/index.js';
import { attemptJson } from '../scores/submit.js';
import type { AppRecord, AppSettingsPatch, BuilderRecord } from '../store/index.js';
import { createRepositories, InvalidCursorError, isoFromMs, NoApiKeyError, UniqueViolationError } from '../store/index.js';
import { logoUrl, unprocessable } from './bodies.js';
import { appGuard, dashboardGuard } from './guard.js';
import { invalidCursor, makeCursor, pageOf, queryString, readListQuery } from './lists.js';
import { emailTaken } from './operators.js';

type AppJson = components['schemas']['App'];
type BuilderJson = components['schemas']['Builder'];
type SettingsJson = components['schemas']['AppSettingsPatch'];

export const APP_OPERATION_IDS = [
  'getMe',
  'listBuilders',
  'createBuilder',
  'listApps',
  'registerApp',
  'getApp',
  'updateAppSettings',
  'listAppBuilders',
  'addAppBuilder',
  'removeAppBuilder',
  'activateApp',
  'suspendApp',
  'rotateAppKey',
  'listAppGrades',
] as const;

export type AppOperationId = (typeof APP_OPERATION_IDS)[number];

const ENDPOINT_FIELDS = ['callback_url', 'provision_url', 'locations_url'] as const;
const NO_STORE = { 'Cache-Control': 'no-store' } as const;

export function appJson(app: AppRecord): AppJson {
  const hosted = app.hosting === 'hosted';
  return {
    id: app.id,
    name: app.name,
    description: app.description,
    logo_url: app.logoUrl,
    callback_url: hosted ? null : app.callbackUrl,
    provision_url: hosted ? null : app.provisionUrl,
    locations_url: hosted ? null : app.locationsUrl,
    status: app.status,
    hosting: app.hosting,
    contract_version: app.contractVersion as AppJson['contract_version'],
    api_key_hint: hosted ? null : app.apiKeyHint,
    grades_released: app.gradesReleased,
    development_only_urls: hosted ? [] : developmentOnlyFields(app),
    created: isoFromMs(app.createdAt),
    updated: isoFromMs(app.updatedAt),
  };
}

export function builderJson(builder: BuilderRecord): BuilderJson {
  return { id: builder.id, name: builder.name, email: builder.email ?? '', created: isoFromMs(builder.createdAt) };
}

const RULE_CODES: Readonly<Record<EndpointRule, string>> = {
  absolute_https: 'url_not_https',
  no_credentials: 'url_has_credentials',
  resolvable: 'url_unresolvable',
  public_address: 'url_not_public',
};

/** An endpoint URL as written in the settings: checked by the URL rules now, stored as normalised. */
async function endpointUrl(services: Services, field: EndpointField, value: unknown): Promise<string | null> {
  if ((value === null || value === '') && field !== 'callback_url') return null;
  const check = await services.outbound.check(value, field);
  if (!check.ok) {
    const problem = unprocessable(RULE_CODES[check.rule], check.message);
    // A developer's tool on this machine: say how to allow it, without changing the rule's message (OPS-43).
    const local = !services.outbound.allowLoopback && typeof value === 'string' && isDevelopmentOnlyUrl(value);
    if (local && (check.rule === 'absolute_https' || check.rule === 'public_address')) {
      throw new Problem(problem.status, problem.code, problem.detail, { hint: schemas.AppSettingsPatch['x-messages'].development_hint });
    }
    throw problem;
  }
  return check.url;
}

/**
 * The settings patch, checked whole before anything is written (all or nothing). The validator has
 * checked every field's shape; what is left is the tool's state and the URL rules.
 */
async function readSettings(services: Services, app: AppRecord, input: SettingsJson): Promise<AppSettingsPatch> {
  if (app.hosting === 'hosted' && ENDPOINT_FIELDS.some((f) => f in input)) {
    throw unprocessable('hosted_no_urls', 'hosted tools have no endpoint URLs');
  }
  const patch: AppSettingsPatch = {};
  if (input.name !== undefined) patch.name = input.name;
  if (input.description !== undefined) patch.description = input.description;
  const logo = logoUrl(input.logo_url);
  if (logo !== undefined) patch.logoUrl = logo;
  if (input.contract_version !== undefined) patch.contractVersion = input.contract_version;
  if ('callback_url' in input) patch.callbackUrl = await endpointUrl(services, 'callback_url', input['callback_url']);
  if ('provision_url' in input) patch.provisionUrl = await endpointUrl(services, 'provision_url', input['provision_url']);
  if ('locations_url' in input) patch.locationsUrl = await endpointUrl(services, 'locations_url', input['locations_url']);
  return patch;
}

export const appHandlers: Pick<Handlers<operations>, AppOperationId> = {
  getMe: withGuard(dashboardGuard<operations['getMe']>('any'), async (ctx) => {
    const { principal } = ctx.guarded;
    return {
      status: 200,
      body: principal.kind === 'platform' ? { kind: 'platform', builder: null } : { kind: 'builder', builder: builderJson(principal.builder) },
    };
  }),

  listBuilders: withGuard(dashboardGuard<operations['listBuilders']>('platform'), async (ctx) => {
    const now = ctx.services.clock.nowMs();
    const query = readListQuery(ctx.req, 'builders', now);
    const builders = (await ctx.services.store.builders.list()).filter((b) => b.role === 'builder');
    const { page, nextCursor } = pageOf(builders, (b) => [b.createdAt, b.id], query, 'builders', now);
    return { status: 200, body: { builders: page.map(builderJson), next_cursor: nextCursor } };
  }),

  createBuilder: withGuard(dashboardGuard<operations['createBuilder']>('platform'), async (ctx) => {
    const name = ctx.body.name;
    const email = ctx.body.email.toLowerCase();
    const taken = (): Promise<Problem> => emailTaken(ctx.services.store, email);
    if (await ctx.services.store.builders.findByEmail(email)) throw await taken();
    let created;
    try {
      created = await ctx.services.store.builders.create({ name, email });
    } catch (err) {
      if (err instanceof UniqueViolationError) throw await taken();
      throw err;
    }
    await recordAction(ctx.services.store, ctx.guarded, { action: 'builder.create', target: created.builder.id, detail: { name } });
    ctx.log.info('builder created', { builder: created.builder.id });
    return { status: 201, body: { builder: builderJson(created.builder), token: created.token }, headers: NO_STORE };
  }),

  listApps: withGuard(dashboardGuard<operations['listApps']>('any'), async (ctx) => {
    const { principal } = ctx.guarded;
    const now = ctx.services.clock.nowMs();
    const statusRaw = queryString(ctx.req, 'status');
    const listKey = `apps:${principal.kind === 'platform' ? 'platform' : principal.builder.id}:${statusRaw ?? ''}`;
    const query = readListQuery(ctx.req, listKey, now);
    const all =
      principal.kind === 'platform'
        ? await ctx.services.store.apps.list()
        : await ctx.services.store.apps.listForBuilder(principal.builder.id);
    const newestFirst = all.filter((a) => statusRaw === undefined || a.status === statusRaw).reverse();
    const { page, nextCursor } = pageOf(newestFirst, (a) => [a.createdAt, a.id], query, listKey, now);
    return { status: 200, body: { apps: page.map(appJson), next_cursor: nextCursor } };
  }),

  registerApp: withGuard(dashboardGuard<operations['registerApp']>('builder'), async (ctx) => {
    const { principal } = ctx.guarded;
    if (principal.kind !== 'builder') throw new Error('the guard lets only builders register');
    const { name, hosting, description, contract_version: contractVersion } = ctx.body;
    const logo = logoUrl(ctx.body.logo_url);
    const { app, apiKey } = await ctx.services.store.apps.create({
      name,
      hosting,
      builderId: principal.builder.id,
      ...(description !== undefined ? { description } : {}),
      ...(logo !== undefined ? { logoUrl: logo } : {}),
      ...(contractVersion !== undefined ? { contractVersion } : {}),
    });
    // The Sandbox is created with the tool (GAP-24). Its LMS being unavailable must not lose the tool whose
    // API key this answer alone carries: every Sandbox operation makes what is missing at its next need.
    try {
      await ensureSandbox(ctx.services, app.id);
    } catch (err) {
      if (!(err instanceof Problem && err.status === 503)) throw err;
      ctx.log.warn('the Sandbox of a new tool waits for its LMS', { app: app.id, reason: err.detail });
    }
    await recordAction(ctx.services.store, { principal, clientAddress: ctx.guarded.clientAddress }, { action: 'app.register', target: app.id, appId: app.id, detail: { name, hosting } });
    ctx.log.info('tool registered', { app: app.id, builder: principal.builder.id, hosting });
    return {
      status: 201,
      body: { app: appJson(app), api_key: apiKey },
      headers: { ...NO_STORE, Location: `/dashboard/v1/apps/${app.id}` },
    };
  }),

  getApp: withGuard(appGuard<operations['getApp']>(), async (ctx) => ({ status: 200, body: appJson(ctx.guarded.app) })),

  updateAppSettings: withGuard(appGuard<operations['updateAppSettings']>(), async (ctx) => {
    const patch = await readSettings(ctx.services, ctx.guarded.app, ctx.body);
    const app = ctx.guarded.app;
    const updated = await ctx.services.store.transaction(async (tx) => {
      const changed = await tx.apps.update(app.id, patch);
      if (changed) await recordAction(tx, ctx.guarded, { action: 'app.settings', target: app.id, appId: app.id, detail: { fields: Object.keys(ctx.body) } });
      return changed;
    });
    if (!updated) throw new Problem(404, 'app_not_found', `app ${app.id} not found`);
    ctx.log.info('tool settings changed', { app: updated.id, fields: Object.keys(patch) });
    return { status: 200, body: appJson(updated) };
  }),

  listAppBuilders: withGuard(appGuard<operations['listAppBuilders']>(), async (ctx) => {
    const team = await ctx.services.store.builders.listForApp(ctx.guarded.app.id);
    return { status: 200, body: { builders: team.map(builderJson) } };
  }),

  addAppBuilder: withGuard(appGuard<operations['addAppBuilder']>(), async (ctx) => {
    const email = ctx.body.email.toLowerCase();
    const { store } = ctx.services;
    const builder = await store.builders.findByEmail(email);
    if (!builder || builder.role !== 'builder') throw new Problem(404, 'builder_not_found', `no builder has the email ${email}`);
    const app = ctx.guarded.app;
    if ((await store.builders.appRole(app.id, builder.id)) !== null) return { status: 200, body: builderJson(builder) };
    await store.transaction(async (tx) => {
      await tx.builders.addToApp(app.id, builder.id, 'member');
      await recordAction(tx, ctx.guarded, { action: 'app.team_add', target: app.id, appId: app.id, detail: { builder: builder.id } });
    });
    ctx.log.info('builder added to team', { app: app.id, builder: builder.id });
    return { status: 201, body: builderJson(builder) };
  }),

  removeAppBuilder: withGuard(appGuard<operations['removeAppBuilder']>(), async (ctx) => {
    const app = ctx.guarded.app;
    const builderId = ctx.params.builder_id;
    const { store } = ctx.services;
    const removed = await store.driver.transaction(async (db) => {
      // The tool's row is locked first, so two removals at once cannot both see a second builder.
      await db.get(`SELECT id FROM apps WHERE id = ?${db.forUpdate}`, [app.id]);
      const tx = createRepositories(db, ctx.services.clock);
      const team = await tx.builders.listForApp(app.id);
      if (!team.some((b) => b.id === builderId)) return 'not_on_team' as const;
      if (team.length === 1) return 'last' as const;
      await tx.builders.removeFromApp(app.id, builderId);
      await recordAction(tx, ctx.guarded, { action: 'app.team_remove', target: app.id, appId: app.id, detail: { builder: builderId } });
      return 'removed' as const;
    });
    if (removed === 'not_on_team') {
      throw new Problem(404, 'team_member_not_found', `builder ${builderId} is not on the team of app ${app.id}`);
    }
    if (removed === 'last') throw new Problem(409, 'last_builder', `app ${app.id} must keep at least one builder`);
    ctx.log.info('builder removed from team', { app: app.id, builder: builderId });
    return { status: 204 };
  }),

  activateApp: withGuard(appGuard<operations['activateApp']>('platform'), async (ctx) => {
    const result = await ctx.services.store.transaction(async (tx) => {
      const changed = await tx.apps.setStatus(ctx.guarded.app.id, 'active');
      if (changed) {
        await recordAction(tx, ctx.guarded, { action: 'app.activate', target: changed.app.id, appId: changed.app.id, detail: { previous: changed.previous } });
      }
      return changed;
    });
    if (!result) throw new Problem(404, 'app_not_found', `app ${ctx.guarded.app.id} not found`);
    ctx.log.info('tool activated', { app: result.app.id, previous: result.previous });
    return { status: 200, body: appJson(result.app) };
  }),

  suspendApp: withGuard(appGuard<operations['suspendApp']>('platform'), async (ctx) => {
    const result = await ctx.services.store.transaction(async (tx) => {
      const changed = await tx.apps.setStatus(ctx.guarded.app.id, 'suspended');
      if (changed) {
        await recordAction(tx, ctx.guarded, { action: 'app.suspend', target: changed.app.id, appId: changed.app.id, detail: { previous: changed.previous } });
      }
      return changed;
    });
    if (!result) throw new Problem(404, 'app_not_found', `app ${ctx.guarded.app.id} not found`);
    ctx.log.info('tool suspended', { app: result.app.id, previous: result.previous });
    return { status: 200, body: appJson(result.app) };
  }),

  rotateAppKey: withGuard(appGuard<operations['rotateAppKey']>(), async (ctx) => {
    const app = ctx.guarded.app;
    let rotated;
    try {
      rotated = await ctx.services.store.transaction(async (tx) => {
        const done = await tx.apps.rotateApiKey(app.id);
        if (done) await recordAction(tx, ctx.guarded, { action: 'app.rotate_key', target: app.id, appId: app.id, detail: { api_key_hint: done.apiKeyHint } });
        return done;
      });
    } catch (err) {
      if (err instanceof NoApiKeyError) throw new Problem(409, 'hosted_no_api_key', 'hosted tools have no API key');
      throw err;
    }
    if (!rotated) throw new Problem(404, 'app_not_found', `app ${app.id} not found`);
    ctx.log.info('API key rotated', { app: app.id });
    return { status: 200, body: { api_key: rotated.apiKey, api_key_hint: rotated.apiKeyHint }, headers: NO_STORE };
  }),

  listAppGrades: withGuard(appGuard<operations['listAppGrades']>(), async (ctx) => {
    const app = ctx.guarded.app;
    const now = ctx.services.clock.nowMs();
    const filters: Record<string, string | undefined> = {
      contextId: queryString(ctx.req, 'context_id'),
      locationId: queryString(ctx.req, 'location_id'),
      memberId: queryString(ctx.req, 'member_id'),
    };
    const listKey = `grades:${app.id}:${filters['contextId'] ?? ''}:${filters['locationId'] ?? ''}:${filters['memberId'] ?? ''}`;
    const query = readListQuery(ctx.req, listKey, now);
    if (query.position !== undefined && typeof query.position !== 'string') {
      throw invalidCursor();
    }
    let result;
    try {
      result = await ctx.services.store.attempts.list({
        appId: app.id,
        ...(filters['contextId'] !== undefined ? { contextId: filters['contextId'] } : {}),
        ...(filters['locationId'] !== undefined ? { locationId: filters['locationId'] } : {}),
        ...(filters['memberId'] !== undefined ? { memberId: filters['memberId'] } : {}),
        limit: query.limit,
        ...(typeof query.position === 'string' ? { cursor: query.position } : {}),
      });
    } catch (err) {
      if (err instanceof InvalidCursorError) throw invalidCursor();
      throw err;
    }
    return {
      status: 200,
      body: {
        attempts: result.items.map(attemptJson) as components['schemas']['GradeAttemptList']['attempts'],
        points: Object.fromEntries(result.items.flatMap((a) => (a.points === null ? [] : [[a.id, a.points]]))),
        next_cursor: result.nextCursor === null ? null : makeCursor(listKey, result.nextCursor, now),
      },
    };
  }),
};
