/**
 * The platform team's named operators and the audit log (tag Operators; decisions OPS-02, OPS-03). An
 * operator is a builder record of the `platform` role: one token table, one verification path, and the
 * bootstrap token (`PLATFORM_TOKEN` or `DATA_DIR/platform-token`) keeps working beside them. What people
 * see says operator, not builder: `opr_` IDs, `tiso_` tokens, its own messages (OPS-51).
 */
import { responses } from '../../generated/dashboard/schemas.js';
import type { components, operations } from '../../generated/dashboard/types.js';
import { fillMessage } from '../../rules/messages.js';
import { recordAction } from '../audit/index.js';
import { Problem } from '../http/problem.js';
import type { Handlers } from '../http/registry.js';
import { withGuard } from '../http/registry.js';
import type { AuditPosition, AuditRecord, BuilderRecord, Store } from '../store/index.js';
import { isoFromMs, UniqueViolationError } from '../store/index.js';
import { dashboardGuard } from './guard.js';
import { invalidCursor, makeCursor, queryString, readListQuery } from './lists.js';

export const OPERATOR_OPERATION_IDS = ['listOperators', 'createOperator', 'revokeOperator', 'listAuditLog'] as const;

type OperatorJson = components['schemas']['Operator'];
type AuditEntryJson = components['schemas']['AuditEntry'];

export function operatorJson(operator: BuilderRecord): OperatorJson {
  return {
    id: operator.id,
    name: operator.name,
    email: operator.email ?? '',
    token_hint: operator.tokenHint,
    created: isoFromMs(operator.createdAt),
    revoked: operator.revokedAt === null ? null : isoFromMs(operator.revokedAt),
  };
}

export function auditEntryJson(entry: AuditRecord): AuditEntryJson {
  return {
    id: entry.id,
    at: isoFromMs(entry.at),
    actor: entry.actor,
    action: entry.action,
    target: entry.target,
    client_address: entry.clientAddress,
    detail: entry.detail,
  };
}

/**
 * 409 for an email already held: operators and builders share one table and so one email namespace, and
 * the message names which holds it (OPS-51).
 */
export async function emailTaken(store: Pick<Store, 'builders'>, email: string): Promise<Problem> {
  const holder = await store.builders.findByEmail(email);
  const messages = responses.EmailTaken['x-messages'];
  return holder?.role === 'platform'
    ? new Problem(409, 'operator_email_taken', fillMessage(messages.operator_email_taken, { email }))
    : new Problem(409, 'builder_email_taken', fillMessage(messages.builder_email_taken, { email }));
}

function isPosition(value: unknown): value is AuditPosition {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === 'number' && typeof value[1] === 'string';
}

export const operatorHandlers: Pick<Handlers<operations>, (typeof OPERATOR_OPERATION_IDS)[number]> = {
  listOperators: withGuard(dashboardGuard<operations['listOperators']>('platform'), async (ctx) => {
    const operators = await ctx.services.store.builders.listOperators();
    return { status: 200, body: { operators: operators.map(operatorJson) } };
  }),
  createOperator: withGuard(dashboardGuard<operations['createOperator']>('platform'), async (ctx) => {
    const name = ctx.body.name;
    const email = ctx.body.email.toLowerCase();
    if (await ctx.services.store.builders.findByEmail(email)) throw await emailTaken(ctx.services.store, email);
    let created;
    try {
      created = await ctx.services.store.transaction(async (tx) => {
        const made = await tx.builders.create({ name, email, role: 'platform' });
        await recordAction(tx, ctx.guarded, { action: 'operator.create', target: made.builder.id, detail: { name } });
        return made;
      });
    } catch (err) {
      if (err instanceof UniqueViolationError) throw await emailTaken(ctx.services.store, email);
      throw err;
    }
    ctx.log.info('operator created', { operator: created.builder.id });
    return { status: 201, body: { operator: operatorJson(created.builder), token: created.token }, headers: { 'Cache-Control': 'no-store' } };
  }),
  revokeOperator: withGuard(dashboardGuard<operations['revokeOperator']>('platform'), async (ctx) => {
    const id = ctx.params.operator_id;
    const revoked = await ctx.services.store.transaction(async (tx) => {
      const before = await tx.builders.get(id);
      if (!before || before.role !== 'platform') return null;
      const after = await tx.builders.revokeOperator(id);
      // Revoking twice answers 204 again but records one revocation.
      if (before.revokedAt === null) await recordAction(tx, ctx.guarded, { action: 'operator.revoke', target: id, detail: { name: before.name } });
      return after;
    });
    if (!revoked) throw new Problem(404, 'operator_not_found', `no operator ${id}`);
    ctx.log.info('operator revoked', { operator: id });
    return { status: 204 };
  }),
  listAuditLog: withGuard(dashboardGuard<operations['listAuditLog']>('platform'), async (ctx) => {
    const now = ctx.services.clock.nowMs();
    const appId = queryString(ctx.req, 'app_id');
    const listKey = `audit:${appId ?? ''}`;
    const query = readListQuery(ctx.req, listKey, now);
    if (query.position !== undefined && !isPosition(query.position)) throw invalidCursor();
    const { items, more } = await ctx.services.store.audit.list({
      ...(appId !== undefined ? { appId } : {}),
      ...(query.position !== undefined ? { after: query.position as AuditPosition } : {}),
      limit: query.limit,
    });
    const last = items[items.length - 1];
    return {
      status: 200,
      body: { entries: items.map(auditEntryJson), next_cursor: more && last ? makeCursor(listKey, [last.at, last.id], now) : null },
    };
  }),
};
