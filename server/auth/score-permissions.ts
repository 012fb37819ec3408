/**
 * Who may submit a score for which member: Authentication rules 5 and 6 of the contract with decisions
 * S-04, GAP-21 and NS-16. `authorizeScore` is a pure function over the principal, the URL's target and
 * facts looked up beforehand (`loadScoreFacts`), so every cell is table-tested without a database.
 *
 * Order (GAP-23): credential (401, resolved before this runs; repeated here only for callers outside the
 * pipeline), then the URL (404: a member segment naming no member of the course), then permission (403:
 * the credential's tool, the placement, the session's membership, a student's own member).
 */
import { isStaff } from '../launches/groups.js';
import { Problem } from '../http/problem.js';
import type { Guard, GuardContext } from '../http/registry.js';
import type { MemberRecord, ScoreRead, Store } from '../store/index.js';
import { MESSAGES } from './credentials.js';
import type { Principal } from './principal.js';

/** Which of the two score URLs (decision L-03) the request came in on. */
export type ScoreUrlForm = 'contexts' | 'account';

/** What the URL names, as written in it. */
export interface ScoreTarget {
  appId: string;
  contextId: string;
  locationId: string;
  memberId: string;
}

export interface ScoreFacts {
  /** The URL's member segment names a member of the URL's course. */
  memberInContext: boolean;
  /** The URL's tool has a placement of the URL's location in the course. */
  placed: boolean;
  /** A session's user's membership in the URL's course; null when not a member or not a session. */
  callerMember: Pick<MemberRecord, 'id' | 'contextId' | 'groups'> | null;
}

export type ScoreDecision =
  | { allowed: true; sourceType: 'session' | 'api_key'; sourceId: string }
  | { allowed: false; problem: Problem };

export const SCORE_MESSAGES = {
  memberNotInContext: (memberId: string, contextId: string) => `member ${memberId} is not a member of context ${contextId}`,
  apiKeyWrongTool: (keyApp: string, urlApp: string) => `API key is for tool ${keyApp}, not tool ${urlApp}`,
  tokenWrongTool: (tokenApp: string, urlApp: string) => `api.token is for tool ${tokenApp}, not tool ${urlApp}`,
  noPlacement: (appId: string, locationId: string, contextId: string) =>
    `tool ${appId} has no placement of location ${locationId} in context ${contextId}`,
  notAMember: (contextId: string) => `the session's user is not a member of context ${contextId}`,
  studentOtherMember: "a student's session may only submit scores for its own member",
  provisionToken: "a provision request's api.token cannot submit scores; use the api.token of a launch",
  notAssessment: 'grade passback is only allowed for assessment locations',
} as const;

const deny = (status: number, code: string, detail: string): ScoreDecision => ({
  allowed: false,
  problem: new Problem(status, code, detail),
});

export function authorizeScore(
  principal: Principal,
  target: ScoreTarget,
  form: ScoreUrlForm,
  facts: ScoreFacts,
): ScoreDecision {
  switch (principal.kind) {
    case 'none':
      return deny(401, 'missing_api_key', MESSAGES.missingApiKey);
    case 'apiKey':
      if (form === 'account') return deny(401, 'api_key_not_accepted', MESSAGES.apiKeyNotAccepted);
      break;
    case 'session':
    case 'provision':
      break;
  }

  if (!facts.memberInContext) {
    return deny(404, 'member_not_found', SCORE_MESSAGES.memberNotInContext(target.memberId, target.contextId));
  }

  if (principal.kind === 'apiKey' && principal.app.id !== target.appId) {
    return deny(403, 'wrong_tool', SCORE_MESSAGES.apiKeyWrongTool(principal.app.id, target.appId));
  }
  if ((principal.kind === 'session' || principal.kind === 'provision') && principal.token.appId !== target.appId) {
    return deny(403, 'wrong_tool', SCORE_MESSAGES.tokenWrongTool(principal.token.appId, target.appId));
  }
  // A provision request acts for no person, and scores are published as someone (S-04 decides sources).
  if (principal.kind === 'provision') return deny(403, 'provision_token', SCORE_MESSAGES.provisionToken);

  if (!facts.placed) {
    return deny(403, 'no_placement', SCORE_MESSAGES.noPlacement(target.appId, target.locationId, target.contextId));
  }

  if (principal.kind === 'apiKey') return { allowed: true, sourceType: 'api_key', sourceId: '' };

  const member = facts.callerMember;
  if (member === null || member.contextId !== target.contextId || principal.token.userId === null) {
    return deny(403, 'not_a_member', SCORE_MESSAGES.notAMember(target.contextId));
  }
  if (member.id !== target.memberId && !isStaff(member.groups)) {
    return deny(403, 'not_own_member', SCORE_MESSAGES.studentOtherMember);
  }
  return { allowed: true, sourceType: 'session', sourceId: principal.token.userId };
}

/** What `authorizeScore` decides on, out of the score's joined read. */
export function factsOf(read: ScoreRead): ScoreFacts {
  const memberInContext = read.member !== null;
  return { memberInContext, placed: memberInContext && read.placed, callerMember: read.callerMember };
}

/**
 * Looks up the facts `authorizeScore` decides on, in the one statement that also reads what the score is
 * published against (PERF-70): the score path reads each row once per request, and the guard still
 * decides before the body is read (GAP-23).
 */
export async function loadScoreFacts(
  store: Pick<Store, 'placements'>,
  principal: Principal,
  target: ScoreTarget,
): Promise<ScoreFacts & { read: ScoreRead }> {
  const read = await store.placements.scoreRead(target.contextId, target.appId, target.locationId, target.memberId, callerUserIdOf(principal));
  return { ...factsOf(read), read };
}

function callerUserIdOf(principal: Principal): string | null {
  return principal.kind === 'session' ? principal.token.userId : null;
}

/**
 * The facts of scores this instance allowed, by what the request names (PostgreSQL only, decision PERF-172).
 * The guard decides on them before the body is read, without a round trip; the score's transaction reads
 * them again in its first exchange (`submitScore`'s recheck) and decides on that read, which replaces or
 * drops the kept one. So what is published, and whether, is always decided as of the transaction, in every
 * instance; kept facts only spare the guard its statement. Refusals are never kept (a newly placed
 * location, a new member are seen at once).
 */
const MAX_KEPT_FACTS = 4_096;
const keptFacts = new WeakMap<object, Map<string, ScoreRead>>();

function keptOf(store: object): Map<string, ScoreRead> {
  let kept = keptFacts.get(store);
  if (!kept) {
    kept = new Map();
    keptFacts.set(store, kept);
  }
  return kept;
}

function factsKey(target: ScoreTarget, callerUserId: string | null): string {
  return `${target.contextId}\n${target.appId}\n${target.locationId}\n${target.memberId}\n${callerUserId ?? ''}`;
}

/** Keeps the facts of an allowed score (or forgets them, `null`): the transaction's fresh read, or the guard's. */
export function keepScoreFacts(store: object, target: ScoreTarget, callerUserId: string | null, read: ScoreRead | null): void {
  const kept = keptOf(store);
  const key = factsKey(target, callerUserId);
  if (read === null) {
    kept.delete(key);
    return;
  }
  // A bound on memory, not a policy: past it the instance starts over.
  if (kept.size >= MAX_KEPT_FACTS && !kept.has(key)) kept.clear();
  kept.set(key, read);
}

export interface ScoreGuardResult {
  target: ScoreTarget;
  form: ScoreUrlForm;
  principal: Principal;
  sourceType: 'session' | 'api_key';
  sourceId: string;
  /** The URL's member as the guard read it, so the score path does not read it again (PERF-41). */
  member: MemberRecord | null;
  /** What the score is published against, read with the guard's facts (PERF-70). */
  scored: ScoreRead['scored'];
  /**
   * The facts were this instance's kept ones (PERF-172), not read for this request: the score's transaction
   * reads them again and decides on that read.
   */
  kept: boolean;
  /** The session's user whose membership the facts hold (null for an API key). */
  callerUserId: string | null;
}

type ScorePathParams = { context_id: string; app_id: string; location_id: string; member_id: string };

/** The guard of both score operations: 404 and 403 before the body is read (GAP-23). */
export function scoreGuard<Op extends { parameters: { path: ScorePathParams } }>(
  form: ScoreUrlForm,
): Guard<Op, ScoreGuardResult> {
  const guard: Guard<Op, ScoreGuardResult> = async (ctx: GuardContext<Op>) => {
    const params = ctx.params as unknown as ScorePathParams;
    const target: ScoreTarget = {
      appId: params.app_id,
      contextId: params.context_id,
      locationId: params.location_id,
      memberId: params.member_id,
    };
    const store = ctx.services.store;
    const callerUserId = callerUserIdOf(ctx.principal);
    // Kept facts only where the transaction reads them again in its first exchange (PostgreSQL).
    const keeps = store.pipelined !== undefined;
    const kept = keeps ? keptOf(store).get(factsKey(target, callerUserId)) : undefined;
    const read = kept ?? (await loadScoreFacts(store, ctx.principal, target)).read;
    const decision = authorizeScore(ctx.principal, target, form, factsOf(read));
    if (!decision.allowed) {
      if (keeps) keepScoreFacts(store, target, callerUserId, null);
      throw decision.problem;
    }
    if (keeps && !kept) keepScoreFacts(store, target, callerUserId, read);
    return {
      target,
      form,
      principal: ctx.principal,
      sourceType: decision.sourceType,
      sourceId: decision.sourceId,
      member: read.member,
      scored: read.scored,
      kept: kept !== undefined,
      callerUserId,
    };
  };
  // A warm score's guard spends no statement (kept facts), so the epoch is read in the score transaction's
  // first exchange and confirmed there, before anything is claimed, published or written (PERF-216).
  guard.handlerConfirmsEpoch = true;
  return guard;
}
