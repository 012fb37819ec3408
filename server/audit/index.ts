/**
 * The audit log of the platform team's and builders' actions (decision OPS-03): who, what, when, from where.
 * Any part of the service that changes something on a person's say-so records it here, with the caller's
 * dashboard principal and the client address the request came from (H-21), ideally inside the transaction
 * of the change itself so that an action and its entry commit together:
 *
 *   await store.transaction(async (tx) => {
 *     ... the change through tx ...
 *     await recordAction(tx, ctx.guarded, { action: 'lms.register', target: registration.id });
 *   });
 *
 * `action` is `<subject>.<verb>` in lower case; `detail` says what else matters and never carries a secret.
 */
import type { DashboardPrincipal } from '../dashboard/credentials.js';
import type { AuditRecord, JsonObject, Repositories } from '../store/index.js';

/** The bootstrap token's name in the log: it is nobody's in particular. */
export const PLATFORM_TOKEN_ACTOR = 'platform token';

export interface AuditedAction {
  action: string;
  /** The ID of what was acted on (a tool, a builder, an operator, a registration). */
  target: string | null;
  /** The tool the action is about, when it is about one (the dashboard filters by it). */
  appId?: string | null;
  detail?: JsonObject;
}

export function auditActor(principal: DashboardPrincipal): AuditRecord['actor'] {
  if (principal.kind === 'builder') return { kind: 'builder', id: principal.builder.id, name: principal.builder.name };
  if (principal.operator !== null) return { kind: 'operator', id: principal.operator.id, name: principal.operator.name };
  return { kind: 'platform_token', id: null, name: PLATFORM_TOKEN_ACTOR };
}

/** Appends one entry; pass the transaction's repositories to commit it with the change. */
export async function recordAction(
  store: Pick<Repositories, 'audit'>,
  caller: { principal: DashboardPrincipal; clientAddress: string | null },
  action: AuditedAction,
): Promise<AuditRecord> {
  if (!/^[a-z_]+\.[a-z_]+$/.test(action.action)) throw new Error(`audit action must be <subject>.<verb>, got ${action.action}`);
  return store.audit.append({
    actor: auditActor(caller.principal),
    clientAddress: caller.clientAddress,
    action: action.action,
    target: action.target,
    appId: action.appId ?? null,
    detail: action.detail ?? {},
  });
}
