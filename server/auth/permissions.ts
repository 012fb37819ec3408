/**
 * Who may read and write which storage row (and its files, which follow the row's rules): Authentication
 * rule 4 of the contract, plus the provision token's scope (decisions NS-06, GAP-38). `authorizeRow` is a
 * pure function over the principal, the row the URL names and facts looked up beforehand, so every cell
 * of the rules is table-tested without a database; `loadRowFacts` looks the facts up, and `rowGuard`
 * puts both in front of a row or files operation.
 *
 * Order (GAP-23): a row of another tool, or a URL naming nothing, is 404 before any 403.
 */
import { isStaff } from '../launches/groups.js';
import type { MemberRecord, RowKey, RowKind, Store } from '../store/index.js';
import { Problem } from '../http/problem.js';
import type { Guard, GuardContext } from '../http/registry.js';
import { MESSAGES } from './credentials.js';
import type { Principal } from './principal.js';

export type RowAccess = 'read' | 'write';

/** The row a URL names, as written in it (not yet known to exist). */
export interface RowTarget {
  appId: string;
  contextId: string;
  kind: RowKind;
  locationId?: string;
  memberId?: string;
}

/** Looked up before deciding; see `loadRowFacts`. */
export interface RowFacts {
  /** The tool is in the course, and the URL's location (placed there) and member (of the course) exist. */
  exists: boolean;
  /** A session's user's membership in the row's course; null when not a member (or not a session). */
  callerMember: MemberRecord | null;
}

export type RowDecision = { allowed: true } | { allowed: false; problem: Problem };

export const ROW_MESSAGES = {
  notFound: 'row not found',
  notAMember: (contextId: string) => `the session's user is not a member of context ${contextId}`,
  studentWriteShared: 'students may read but not write the context and location rows',
  otherMember: "a student may not access another member's rows",
  provisionScope: 'a provision token may only use the context and location rows its provision request names',
  provisionParentReadOnly: "a provision token may only read the copied course's parent rows",
} as const;

const deny = (problem: Problem): RowDecision => ({ allowed: false, problem });
const allow: RowDecision = { allowed: true };

export function rowNotFound(): Problem {
  return new Problem(404, 'row_not_found', ROW_MESSAGES.notFound);
}

export function authorizeRow(principal: Principal, target: RowTarget, access: RowAccess, facts: RowFacts): RowDecision {
  switch (principal.kind) {
    case 'none':
      return deny(new Problem(401, 'missing_bearer_token', MESSAGES.missingToken));
    case 'apiKey':
      return deny(new Problem(401, 'api_key_not_accepted', MESSAGES.apiKeyNotAccepted));
    case 'session':
    case 'provision':
      break;
  }
  const token = principal.token;
  // Another tool's rows must be indistinguishable from rows that do not exist.
  if (token.appId !== target.appId || !facts.exists) return deny(rowNotFound());

  if (principal.kind === 'provision') {
    const shared = target.kind === 'context' || target.kind === 'location';
    const namesLevel =
      target.kind === 'context' || (target.kind === 'location' && token.locationId !== null && token.locationId === target.locationId);
    if (shared && namesLevel && target.contextId === token.contextId) {
      const level = target.kind === 'context' ? 'context' : 'location';
      return token.provisionLevels.includes(level) ? allow : deny(provisionScope());
    }
    if (shared && namesLevel && token.parentContextId !== null && target.contextId === token.parentContextId) {
      return access === 'read' ? allow : deny(new Problem(403, 'provision_scope', ROW_MESSAGES.provisionParentReadOnly));
    }
    return deny(provisionScope());
  }

  const member = facts.callerMember;
  if (member === null || member.contextId !== target.contextId) {
    return deny(new Problem(403, 'not_a_member', ROW_MESSAGES.notAMember(target.contextId)));
  }
  const staff = isStaff(member.groups);
  if (target.kind === 'context' || target.kind === 'location') {
    if (access === 'read' || staff) return allow;
    return deny(new Problem(403, 'row_read_only', ROW_MESSAGES.studentWriteShared));
  }
  if (target.memberId === member.id || staff) return allow;
  return deny(new Problem(403, 'not_your_row', ROW_MESSAGES.otherMember));
}

function provisionScope(): Problem {
  return new Problem(403, 'provision_scope', ROW_MESSAGES.provisionScope);
}

/**
 * Whether the tool is present in the course: its credential was issued there, it has placed something
 * there, or the course (or a location of it) has been asked to provision for it (a copied course has no
 * placements but is provisioned, S-11).
 */
export async function toolInContext(store: Store, principal: Principal, appId: string, contextId: string): Promise<boolean> {
  if ((principal.kind === 'session' || principal.kind === 'provision') && principal.token.appId === appId) {
    if (principal.token.contextId === contextId || principal.token.parentContextId === contextId) return true;
  }
  if (!(await store.contexts.get(contextId))) return false;
  if ((await store.placements.listByContext(contextId, appId)).length > 0) return true;
  return (await store.provisioning.get({ appId, contextId })) !== null;
}

/** Whether the location is the tool's and is used in the course (placed, provisioned, or named by the credential). */
export async function locationInContext(
  store: Store,
  principal: Principal,
  appId: string,
  contextId: string,
  locationId: string,
): Promise<boolean> {
  const location = await store.locations.get(locationId);
  if (!location || location.appId !== appId) return false;
  if ((principal.kind === 'session' || principal.kind === 'provision') && principal.token.locationId === locationId) {
    const t = principal.token;
    if (t.appId === appId && (t.contextId === contextId || t.parentContextId === contextId)) return true;
  }
  if (await store.placements.isPlaced(appId, contextId, locationId)) return true;
  return (await store.provisioning.get({ appId, contextId, locationId })) !== null;
}

/**
 * `known.callerMember`: the caller's membership in the target's course as a statement of this request
 * already read it (`RowsRepo.readForRequest`), instead of reading it again.
 */
export async function loadRowFacts(
  store: Store,
  principal: Principal,
  target: RowTarget,
  known?: { callerMember: MemberRecord | null },
): Promise<RowFacts> {
  const callerMember =
    known !== undefined
      ? known.callerMember
      : principal.kind === 'session' && principal.token.userId !== null
        ? await store.members.find(target.contextId, principal.token.userId)
        : null;
  const credentialApp = principal.kind === 'session' || principal.kind === 'provision' ? principal.token.appId : null;
  // No lookups for another tool's URL: the answer is 404 whatever exists.
  if (credentialApp !== target.appId) return { exists: false, callerMember };
  let exists = await toolInContext(store, principal, target.appId, target.contextId);
  if (exists && target.locationId !== undefined) {
    exists = await locationInContext(store, principal, target.appId, target.contextId, target.locationId);
  }
  if (exists && target.memberId !== undefined) {
    // The caller's own row (the common case) was found in this course by the read above.
    exists =
      (callerMember !== null && callerMember.id === target.memberId && callerMember.contextId === target.contextId) ||
      (await store.members.getInContext(target.contextId, target.memberId)) !== null;
  }
  return { exists, callerMember };
}

export function rowKeyOf(target: RowTarget): RowKey {
  const base = { appId: target.appId, contextId: target.contextId };
  switch (target.kind) {
    case 'context':
      return { ...base, kind: 'context' };
    case 'location':
      return { ...base, kind: 'location', locationId: target.locationId ?? '' };
    case 'member':
      return { ...base, kind: 'member', memberId: target.memberId ?? '' };
    case 'member_location':
      return { ...base, kind: 'member_location', locationId: target.locationId ?? '', memberId: target.memberId ?? '' };
  }
}

export interface RowGuardResult {
  target: RowTarget;
  key: RowKey;
  access: RowAccess;
  principal: Principal;
  /** The caller's membership when a session (null for a provision token). */
  callerMember: MemberRecord | null;
  /**
   * The row's stored text as the guard's own statement read it (null: never written), for a guard made
   * with `readsRow`; undefined otherwise.
   */
  stored?: string | null | undefined;
}

type RowPathParams = { context_id: string; app_id: string; location_id?: string; member_id?: string };

export function rowTargetFrom(kind: RowKind, params: RowPathParams): RowTarget {
  const target: RowTarget = { appId: params.app_id, contextId: params.context_id, kind };
  if ((kind === 'location' || kind === 'member_location') && params.location_id !== undefined) {
    target.locationId = params.location_id;
  }
  if ((kind === 'member' || kind === 'member_location') && params.member_id !== undefined) {
    target.memberId = params.member_id;
  }
  return target;
}

/** Reads are GET (and HEAD); everything else writes. */
export function accessOfMethod(method: string): RowAccess {
  return method === 'GET' || method === 'HEAD' ? 'read' : 'write';
}

/**
 * The guard of every row and files operation: 404 for a row that is not there for the tool, 403 for a
 * principal rule 4 refuses. The unprovisioned-level 422 is state and is the handler's (GAP-23).
 *
 * Its first statement (PERF-180) reads, together, the credential epoch the request took on trust (and
 * confirms it before anything else happens), the caller's membership, and with `readsRow` the row itself
 * (a GET answers with it; a PATCH on PostgreSQL, `'postgres'`, starts from it): a warm GET of one's own
 * member row is that one statement and nothing else.
 */
export function rowGuard<Op extends { parameters: { path: RowPathParams } }>(
  kind: RowKind,
  options: { readsRow?: boolean | 'postgres' } = {},
): Guard<Op, RowGuardResult> {
  const guard: Guard<Op, RowGuardResult> = async (ctx: GuardContext<Op>) => {
    const params = ctx.params as unknown as RowPathParams;
    const target = rowTargetFrom(kind, params);
    const access = accessOfMethod(ctx.method);
    const principal = ctx.principal;
    const store = ctx.services.store;
    const userId = principal.kind === 'session' ? principal.token.userId : null;
    const ownTool = (principal.kind === 'session' || principal.kind === 'provision') && principal.token.appId === target.appId;
    let known: { callerMember: MemberRecord | null } | undefined;
    let stored: string | null | undefined;
    if (userId !== null || ctx.epoch?.pending()) {
      const readsRow = options.readsRow === 'postgres' ? store.driver.dialect === 'postgres' : options.readsRow === true;
      const read = await store.rows.readForRequest(rowKeyOf(target), { userId, row: readsRow && ownTool });
      await ctx.epoch?.confirm(read.epoch);
      known = { callerMember: read.member };
      stored = read.body;
    }
    const facts = await loadRowFacts(store, principal, target, known);
    const decision = authorizeRow(principal, target, access, facts);
    if (!decision.allowed) throw decision.problem;
    return { target, key: rowKeyOf(target), access, principal, callerMember: facts.callerMember, stored };
  };
  guard.confirmsEpoch = true;
  return guard;
}
