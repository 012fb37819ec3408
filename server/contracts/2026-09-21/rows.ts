/**
 * The four storage rows (decision L-02): read, replace, patch. The row guard (server/auth) has already
 * answered 404 for a row that is not there for the tool and 403 for a caller rule 4 refuses; what is
 * left here, in the order of decision GAP-23, is the request (a malformed patch, a write over the size
 * limit: 422), then the state (a context or location level not yet provisioned: 422), then the work.
 */
import type { operations } from '../../../generated/2026-09-21/types.js';
import type { RowGuardResult } from '../../auth/permissions.js';
import { rowGuard } from '../../auth/permissions.js';
import { Problem } from '../../http/problem.js';
import type { Handlers } from '../../http/registry.js';
import { withGuard } from '../../http/registry.js';
import type { Services } from '../../http/services.js';
import type { JsonObject, RowKey, RowKind, RowMemberSet, SerializedRow, Store } from '../../store/index.js';
import { InvalidRowBodyError, RowTooLargeError, rowMaxBytes, serializeRow } from '../../store/index.js';
import { schemas } from '../../../generated/2026-09-21/schemas.js';
import { applyPatch, validatePatchShape } from '../../../rules/json-patch.js';
import { parsePointer } from '../../../rules/json-pointer.js';
import { fillMessage } from '../../../rules/messages.js';
import type { PatchOperation } from '../../../rules/json-patch.js';

export type RowOperationId =
  | 'getContextRow'
  | 'putContextRow'
  | 'patchContextRow'
  | 'getLocationRow'
  | 'putLocationRow'
  | 'patchLocationRow'
  | 'getMemberRow'
  | 'putMemberRow'
  | 'patchMemberRow'
  | 'getMemberLocationRow'
  | 'putMemberLocationRow'
  | 'patchMemberLocationRow';

/** What the handlers below need from a request: the services and the row the guard resolved. */
interface RowRequest {
  services: Services;
  guarded: RowGuardResult;
}

/** How a contract's rows differ; every other rule of the rows is the same in all three contracts. */
export interface RowRules {
  /**
   * Context and location rows wait for their level's provision PUT (2026-09-21, 2026-08-25). 2026-08-19
   * has no provisioning: every level is ready when first needed, and no row answers "not provisioned".
   */
  provisioning: boolean;
}

/** The row's object as the response body; `{}` for a row never written. */
type RowBody = Record<string, unknown>;

// --- messages -------------------------------------------------------------------------------------

export function rowTooLarge(kind: RowKind, size: number, maxBytes: number = rowMaxBytes(kind)): Problem {
  return new Problem(422, 'row_too_large', fillMessage(schemas.Row['x-messages'].too_large, { size, max_bytes: maxBytes, kind }));
}

export function notProvisioned(key: RowKey): Problem {
  const detail =
    key.kind === 'location' || key.kind === 'member_location'
      ? `location ${key.locationId} in context ${key.contextId} is not provisioned yet: the tool must PUT its provision URL first`
      : `context ${key.contextId} is not provisioned yet: the tool must PUT its provision URL first`;
  return new Problem(422, 'level_not_provisioned', detail);
}

// --- shared with the files handlers ----------------------------------------------------------------

/**
 * Context and location rows, and their files, exist only once the tool has PUT the level's provision
 * URL; member rows are open from the first launch and never answer this.
 */
export async function requireProvisioned(store: Store, key: RowKey): Promise<void> {
  if (key.kind === 'context') {
    if (!(await store.provisioning.isProvisioned({ appId: key.appId, contextId: key.contextId }))) throw notProvisioned(key);
  } else if (key.kind === 'location') {
    const level = { appId: key.appId, contextId: key.contextId, locationId: key.locationId };
    if (!(await store.provisioning.isProvisioned(level))) throw notProvisioned(key);
  }
}

// --- the operations --------------------------------------------------------------------------------

async function readRow({ services, guarded }: RowRequest, rules: RowRules): Promise<RowBody> {
  if (rules.provisioning) await requireProvisioned(services.store, guarded.key);
  // Stored as compact JSON text and parsed once to go through the response validator; serializing it
  // again gives back the same text, key order included (decision GAP-37).
  // The guard's own statement read the row with the caller's membership (PERF-180).
  const text = guarded.stored !== undefined ? (guarded.stored ?? '{}') : await services.store.rows.getRow(guarded.key);
  return JSON.parse(text) as RowBody;
}

/** UTF-8 bytes of the compact JSON of `value` (decision GAP-06). */
export function compactJsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

async function replaceRow({ services, guarded }: RowRequest, body: unknown, rules: RowRules): Promise<void> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new Problem(422, 'invalid_row_body', schemas.Row['x-messages'].not_an_object);
  }
  // Serialized once: the size judged here is the text written (PERF-82).
  let row: SerializedRow;
  try {
    row = serializeRow(body, rowMaxBytes(guarded.key.kind));
  } catch (err) {
    if (err instanceof RowTooLargeError) throw rowTooLarge(guarded.key.kind, err.size, err.maxBytes);
    throw err;
  }
  if (rules.provisioning) await requireProvisioned(services.store, guarded.key);
  await services.store.rows.putSerialized(guarded.key, row);
}

/** Thrown inside the row lock to abort the transaction with the contract's answer. */
class PatchRefused extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail);
  }
}

async function patchRow({ services, guarded }: RowRequest, body: unknown, rules: RowRules): Promise<void> {
  const shape = validatePatchShape(body);
  if (!shape.ok) {
    throw new Problem(422, 'invalid_patch', shape.message, {
      errors: shape.errors.map((e) => ({ path: `/body${e.path}`, message: e.message })),
    });
  }
  if (rules.provisioning) await requireProvisioned(services.store, guarded.key);
  const maxBytes = rowMaxBytes(guarded.key.kind);
  const patch: readonly PatchOperation[] = shape.patch;
  try {
    // Read, apply and write in one transaction under the row lock: concurrent patches serialize, and a
    // refusal rolls back with the row as it was.
    await services.store.rows.patchRow(
      guarded.key,
      (current) => {
        // "Missing intermediate objects are created by an add" (contract; decision S-17).
        const result = applyPatch(current, patch, { createIntermediates: true });
        if (!result.ok) {
          throw new PatchRefused(
            new Problem(422, 'patch_failed', result.error.message, {
              errors: [{ path: `/body${result.error.field}`, message: result.error.message }],
            }),
          );
        }
        const next = result.doc;
        if (typeof next !== 'object' || next === null || Array.isArray(next)) {
          throw new PatchRefused(new Problem(422, 'patch_failed', 'patch failed: the result is not a JSON object, and a row holds one object'));
        }
        return next as JsonObject;
      },
      { maxBytes, memberSet: memberSetOf(patch), read: guarded.stored },
    );
  } catch (err) {
    if (err instanceof PatchRefused) throw err.problem;
    if (err instanceof RowTooLargeError) throw rowTooLarge(guarded.key.kind, err.size, err.maxBytes);
    if (err instanceof InvalidRowBodyError) throw new Problem(422, 'patch_failed', err.message);
    throw err;
  }
}

/**
 * A one-operation `add` or `replace` sets one member: the store may do that in a single statement
 * (PERF-51), and falls back to running the patch whenever the row is not as that needs.
 */
function memberSetOf(patch: readonly PatchOperation[]): RowMemberSet | undefined {
  const only = patch.length === 1 ? patch[0] : undefined;
  if (!only || (only.op !== 'add' && only.op !== 'replace')) return undefined;
  const pointer = parsePointer(only.path);
  if (!pointer.ok || pointer.tokens.length === 0) return undefined;
  return { tokens: pointer.tokens, value: only.value, mustExist: only.op === 'replace' };
}

type Ops = operations;

/**
 * The twelve row handlers under one contract's rules. Typed by the current contract's operations; the
 * archived contracts' row operations come from the same path files, and their indexes check that these
 * handlers satisfy their own generated types too.
 */
export function rowHandlersFor(rules: RowRules): Pick<Handlers<Ops>, RowOperationId> {
  // A GET answers with the row its guard read (PERF-180); a PATCH on PostgreSQL starts from it (PERF-182),
  // where SQLite's one-member PATCH is one UPDATE and would not use it.
  const readsRow = { readsRow: true };
  const patchReadsRow = { readsRow: 'postgres' as const };
  const read = async (ctx: RowRequest) => ({ status: 200 as const, body: await readRow(ctx, rules) });
  const replace = async (ctx: RowRequest & { body: unknown }) => {
    await replaceRow(ctx, ctx.body, rules);
    return { status: 204 as const };
  };
  const patch = async (ctx: RowRequest & { body: unknown }) => {
    await patchRow(ctx, ctx.body, rules);
    return { status: 204 as const };
  };
  return {
    getContextRow: withGuard(rowGuard<Ops['getContextRow']>('context', readsRow), read),
    putContextRow: withGuard(rowGuard<Ops['putContextRow']>('context'), replace),
    patchContextRow: withGuard(rowGuard<Ops['patchContextRow']>('context', patchReadsRow), patch),

    getLocationRow: withGuard(rowGuard<Ops['getLocationRow']>('location', readsRow), read),
    putLocationRow: withGuard(rowGuard<Ops['putLocationRow']>('location'), replace),
    patchLocationRow: withGuard(rowGuard<Ops['patchLocationRow']>('location', patchReadsRow), patch),

    getMemberRow: withGuard(rowGuard<Ops['getMemberRow']>('member', readsRow), read),
    putMemberRow: withGuard(rowGuard<Ops['putMemberRow']>('member'), replace),
    patchMemberRow: withGuard(rowGuard<Ops['patchMemberRow']>('member', patchReadsRow), patch),

    getMemberLocationRow: withGuard(rowGuard<Ops['getMemberLocationRow']>('member_location', readsRow), read),
    putMemberLocationRow: withGuard(rowGuard<Ops['putMemberLocationRow']>('member_location'), replace),
    patchMemberLocationRow: withGuard(rowGuard<Ops['patchMemberLocationRow']>('member_location', patchReadsRow), patch),
  };
}

export const rowHandlers = rowHandlersFor({ provisioning: true });
