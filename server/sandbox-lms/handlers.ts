/**
 * The Sandbox LMS operations of the dashboard spec (tag "Sandbox LMS"): the AGS interface of the Sandbox
 * gradebook, served by the service itself (decision S-12). The guard of each resource operation resolves
 * the Sandbox LMS access token (401), the course of the token's school (404) and the scope (403) before the
 * body is read (GAP-23).
 *
 * AGS answers in its own media types (`application/vnd.ims.lis.v2.lineitem+json`, ...), which the typed
 * registry leaves to the handler: those handlers write through `ctx.res` with `res.json`, so the response
 * validator still sees every body, and return `{stream: true}`. The token endpoint answers OAuth 2.0 error
 * objects, not Problems, for the same reason. Request bodies arrive parsed in `ctx.req.body` (see
 * `mount.ts`), and are re-read here with the Sandbox LMS's own messages.
 */
import type { Response } from 'express';
import type { operations } from '../../generated/dashboard/types.js';
import type { Guard, GuardContext, Handlers } from '../http/registry.js';
import { withGuard } from '../http/registry.js';
import type { ContextRecord, LineItemRecord, SandboxLmsTokenRecord } from '../store/index.js';
import {
  contextOfToken,
  createClientLineItem,
  lineItemInContext,
  listLineItems,
  postScore,
  readLineItem,
  replaceLineItem,
} from './gradebook.js';
import type { LineItemFilter } from './gradebook.js';
import { authenticateLmsToken, issueAccessToken, requireScope } from './oauth.js';
import { AGS_MEDIA_TYPES, AGS_SCOPES } from './school.js';

export const SANDBOX_LMS_OPERATION_IDS = [
  'issueSandboxLmsToken',
  'listSandboxLineItems',
  'createSandboxLineItem',
  'getSandboxLineItem',
  'updateSandboxLineItem',
  'postSandboxScore',
] as const;

export type SandboxLmsOperationId = (typeof SANDBOX_LMS_OPERATION_IDS)[number];

interface LmsGuarded {
  token: SandboxLmsTokenRecord;
  context: ContextRecord;
  lineItem: LineItemRecord | null;
}

type LmsParams = { context_id: string; line_item_id?: string };

const READ_SCOPES = [AGS_SCOPES.lineItem, AGS_SCOPES.lineItemReadonly];

/** 401 (token), 404 (course of its school, line item of the course), 403 (scope), in that order. */
function lmsGuard<Op>(scopes: readonly string[]): Guard<Op, LmsGuarded> {
  return async (ctx: GuardContext<Op>) => {
    const store = ctx.services.store;
    const token = await authenticateLmsToken(store, firstHeader(ctx.headers.authorization));
    const params = ctx.params as unknown as LmsParams;
    const context = await contextOfToken(store, token, params.context_id);
    const lineItem = params.line_item_id === undefined ? null : await lineItemInContext(store, context, params.line_item_id);
    requireScope(token, ...scopes);
    return { token, context, lineItem };
  };
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function publicUrlOf(ctx: { services: { config: { publicUrl: string } } }): string {
  return ctx.services.config.publicUrl;
}

/** Writes an AGS body in its media type through `res.json`, so response validation applies. */
function sendAgs(res: Response, status: number, mediaType: string, body: unknown, headers: Record<string, string> = {}): { stream: true } {
  res.status(status);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', mediaType);
  res.setHeader('Cache-Control', 'no-store');
  res.json(body);
  return { stream: true };
}

function lineItemOf(guarded: LmsGuarded): LineItemRecord {
  if (!guarded.lineItem) throw new Error('line item guard did not run');
  return guarded.lineItem;
}

export const sandboxLmsHandlers: Pick<Handlers<operations>, SandboxLmsOperationId> = {
  issueSandboxLmsToken: async (ctx) => {
    const form = (ctx.req.body ?? {}) as Record<string, unknown>;
    const result = await issueAccessToken(
      { repos: ctx.services.store, keys: ctx.services.signer, publicUrl: publicUrlOf(ctx), clock: ctx.services.clock },
      form,
    );
    const headers = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };
    if (result.status === 200) {
      ctx.log.info('sandbox lms token issued', { scope: result.body.scope });
      return { status: 200, body: result.body, headers };
    }
    ctx.log.info('sandbox lms token refused', { error: result.body.error, reason: result.body.error_description });
    ctx.res.status(result.status);
    for (const [name, value] of Object.entries(headers)) ctx.res.setHeader(name, value);
    if (result.status === 401) ctx.res.setHeader('WWW-Authenticate', 'Bearer realm="sandbox-lms", error="invalid_client"');
    ctx.res.json(result.body);
    return { stream: true };
  },

  listSandboxLineItems: withGuard(lmsGuard<operations['listSandboxLineItems']>(READ_SCOPES), async (ctx) => {
    const query = (ctx.query ?? {}) as Record<string, unknown>;
    const filter: LineItemFilter = {};
    if (typeof query['resource_link_id'] === 'string') filter.resource_link_id = query['resource_link_id'];
    if (typeof query['resource_id'] === 'string') filter.resource_id = query['resource_id'];
    if (typeof query['tag'] === 'string') filter.tag = query['tag'];
    const items = await listLineItems(ctx.services.store, publicUrlOf(ctx), ctx.guarded.context, filter);
    return sendAgs(ctx.res, 200, AGS_MEDIA_TYPES.lineItemContainer, items);
  }),

  createSandboxLineItem: withGuard(lmsGuard<operations['createSandboxLineItem']>([AGS_SCOPES.lineItem]), async (ctx) => {
    const item = await createClientLineItem(ctx.services.store, publicUrlOf(ctx), ctx.guarded.context, ctx.req.body);
    ctx.log.info('sandbox lms line item created', { context: ctx.guarded.context.id, line_item: item.id });
    return sendAgs(ctx.res, 201, AGS_MEDIA_TYPES.lineItem, item, { Location: item.id });
  }),

  getSandboxLineItem: withGuard(lmsGuard<operations['getSandboxLineItem']>(READ_SCOPES), async (ctx) => {
    const item = await readLineItem(ctx.services.store, publicUrlOf(ctx), ctx.guarded.context, lineItemOf(ctx.guarded));
    return sendAgs(ctx.res, 200, AGS_MEDIA_TYPES.lineItem, item);
  }),

  updateSandboxLineItem: withGuard(lmsGuard<operations['updateSandboxLineItem']>([AGS_SCOPES.lineItem]), async (ctx) => {
    const item = await replaceLineItem(
      ctx.services.store,
      publicUrlOf(ctx),
      ctx.guarded.context,
      lineItemOf(ctx.guarded),
      ctx.req.body,
    );
    ctx.log.info('sandbox lms line item replaced', { context: ctx.guarded.context.id, score_maximum: item.scoreMaximum });
    return sendAgs(ctx.res, 200, AGS_MEDIA_TYPES.lineItem, item);
  }),

  postSandboxScore: withGuard(lmsGuard<operations['postSandboxScore']>([AGS_SCOPES.score]), async (ctx) => {
    const score = await postScore(ctx.services.store, ctx.guarded.context, lineItemOf(ctx.guarded), ctx.req.body);
    ctx.log.info('sandbox lms score stored', { context: ctx.guarded.context.id, timestamp: score.timestamp });
    return { status: 204 };
  }),
};
