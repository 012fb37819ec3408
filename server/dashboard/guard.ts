/**
 * Who may call what (decisions GAP-01, GAP-23, S-07), before the body is read: the credential (401),
 * then the tool the URL names (404, also for a builder not on the tool's team, so a builder learns
 * nothing about other builders' tools), then the credential's kind (403).
 */
import { Problem } from '../http/problem.js';
import type { Guard, GuardContext } from '../http/registry.js';
import type { AppRecord } from '../store/index.js';
import type { DashboardPrincipal } from './credentials.js';
import { authenticateDashboard } from './credentials.js';

export type Access = 'any' | 'platform' | 'builder';

export interface DashboardGuarded {
  principal: DashboardPrincipal;
  /** Where the request came from (H-21): the audit log records it with the caller. */
  clientAddress: string;
  /** The tool of `{app_id}`, already known to be visible to the caller. */
  app: AppRecord | null;
}

export interface AppGuarded extends DashboardGuarded {
  app: AppRecord;
}

export function appNotFound(appId: string): Problem {
  return new Problem(404, 'app_not_found', `app ${appId} not found`);
}

export const PLATFORM_ONLY = "this operation takes the platform team's credential";
export const BUILDER_ONLY = 'registering a tool takes a builder credential; the platform team adds builders to a tool afterwards';

/** Whether the caller sees the tool: the platform team every tool, a builder the tools of its teams. */
export async function canSee(ctx: Pick<GuardContext<unknown>, 'services'>, principal: DashboardPrincipal, appId: string): Promise<boolean> {
  if (principal.kind === 'platform') return true;
  return (await ctx.services.store.builders.appRole(appId, principal.builder.id)) !== null;
}

async function guardWith<Op>(ctx: GuardContext<Op>, access: Access): Promise<DashboardGuarded> {
  const principal = await authenticateDashboard(ctx.services.store, ctx.services.platformCredential, ctx.headers.authorization);
  const appId = (ctx.params as { app_id?: string }).app_id;
  let app: AppRecord | null = null;
  if (appId !== undefined) {
    app = await ctx.services.store.apps.get(appId);
    if (!app || !(await canSee(ctx, principal, app.id))) throw appNotFound(appId);
  }
  if (access === 'platform' && principal.kind !== 'platform') throw new Problem(403, 'platform_only', PLATFORM_ONLY);
  if (access === 'builder' && principal.kind !== 'builder') throw new Problem(403, 'builder_only', BUILDER_ONLY);
  return { principal, app, clientAddress: ctx.clientAddress };
}

export function dashboardGuard<Op>(access: Access = 'any'): Guard<Op, DashboardGuarded> {
  return (ctx) => guardWith(ctx, access);
}

/** For operations under `/apps/{app_id}`: the tool is always there. */
export function appGuard<Op>(access: Access = 'any'): Guard<Op, AppGuarded> {
  return async (ctx) => {
    const guarded = await guardWith(ctx, access);
    if (!guarded.app) throw new Error(`${ctx.operationId} has no app_id`);
    return guarded as AppGuarded;
  };
}
