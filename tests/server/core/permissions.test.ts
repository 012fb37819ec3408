/**
 * Authentication rule 4, every cell: principal × row kind × access × whose row, plus the provision
 * token's scope (NS-06, GAP-38) and the 404 for another tool's row or a row that is not there.
 */
import { describe, expect, it } from 'vitest';
import type { RowAccess, RowFacts, RowTarget } from '../../../server/auth/permissions.js';
import { authorizeRow, ROW_MESSAGES } from '../../../server/auth/permissions.js';
import type { Principal } from '../../../server/auth/principal.js';
import type { ApiTokenRecord, AppRecord, MemberGroup, MemberRecord, RowKind } from '../../../server/store/index.js';

const APP = 'app_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const OTHER_APP = 'app_bbbbbbbbbbbbbbbbbbbbbbbbbb';
const CTX = 'ctx_course';
const PARENT = 'ctx_parent';
const OTHER_CTX = 'ctx_other';
const LOC = 'loc_quiz';
const OTHER_LOC = 'loc_other';
const ME = 'mem_me';
const PEER = 'mem_peer';

function token(over: Partial<ApiTokenRecord>): ApiTokenRecord {
  return {
    fingerprint: '0123456789abcdef',
    kind: 'launch',
    appId: APP,
    contextId: CTX,
    userId: 'usr_me',
    memberId: ME,
    locationId: LOC,
    launchId: 'lch_1',
    parentContextId: null,
    provisionLevels: [],
    createdAt: 0,
    expiresAt: Number.MAX_SAFE_INTEGER,
    revokedAt: null,
    ...over,
  };
}

const session = (over: Partial<ApiTokenRecord> = {}): Principal => ({ kind: 'session', token: token(over) });
const provision = (over: Partial<ApiTokenRecord> = {}): Principal => ({
  kind: 'provision',
  token: token({ kind: 'provision', userId: null, memberId: null, launchId: null, ...over }),
});

function member(groups: MemberGroup[], contextId = CTX): MemberRecord {
  return { id: ME, contextId, userId: 'usr_me', groups, createdAt: 0, updatedAt: 0 };
}

function target(kind: RowKind, over: Partial<RowTarget> = {}): RowTarget {
  const t: RowTarget = { appId: APP, contextId: CTX, kind };
  if (kind === 'location' || kind === 'member_location') t.locationId = LOC;
  if (kind === 'member' || kind === 'member_location') t.memberId = ME;
  return { ...t, ...over };
}

type Expect = 'allow' | 403 | 404 | 401;

function decide(principal: Principal, t: RowTarget, access: RowAccess, facts: RowFacts): { result: Expect; detail?: string } {
  const d = authorizeRow(principal, t, access, facts);
  if (d.allowed) return { result: 'allow' };
  return { result: d.problem.status as Expect, detail: d.problem.detail };
}

const exists = (callerMember: MemberRecord | null): RowFacts => ({ exists: true, callerMember });

describe('authorizeRow: sessions (rule 4)', () => {
  const kinds: RowKind[] = ['context', 'location', 'member', 'member_location'];
  const accesses: RowAccess[] = ['read', 'write'];
  type Who = 'student' | 'instructor' | 'assistant' | 'manager' | 'no group';
  const groupsOf: Record<Who, MemberGroup[]> = {
    student: ['student'],
    instructor: ['instructor'],
    assistant: ['assistant'],
    manager: ['manager'],
    'no group': [],
  };
  // [who, kind, whose row ('own' | 'peer'), access] → expected
  const cases: Array<[Who, RowKind, 'own' | 'peer', RowAccess, Expect, string | undefined]> = [];
  for (const who of Object.keys(groupsOf) as Who[]) {
    const staff = who === 'instructor' || who === 'assistant' || who === 'manager';
    for (const kind of kinds) {
      for (const access of accesses) {
        for (const whose of ['own', 'peer'] as const) {
          if ((kind === 'context' || kind === 'location') && whose === 'peer') continue;
          let expected: Expect = 'allow';
          let detail: string | undefined;
          if (kind === 'context' || kind === 'location') {
            if (access === 'write' && !staff) [expected, detail] = [403, ROW_MESSAGES.studentWriteShared];
          } else if (whose === 'peer' && !staff) {
            [expected, detail] = [403, ROW_MESSAGES.otherMember];
          }
          cases.push([who, kind, whose, access, expected, detail]);
        }
      }
    }
  }

  it.each(cases)('%s, %s row (%s), %s → %s', (who, kind, whose, access, expected, detail) => {
    const t = target(kind, kind === 'member' || kind === 'member_location' ? { memberId: whose === 'own' ? ME : PEER } : {});
    const out = decide(session(), t, access, exists(member(groupsOf[who])));
    expect(out.result).toBe(expected);
    if (detail) expect(out.detail).toBe(detail);
  });

  it.each(kinds.flatMap((k) => accesses.map((a) => [k, a] as const)))('a non-member gets 403 on the %s row (%s)', (kind, access) => {
    const out = decide(session({ contextId: OTHER_CTX }), target(kind), access, exists(null));
    expect(out).toEqual({ result: 403, detail: ROW_MESSAGES.notAMember(CTX) });
  });

  it.each(kinds)('another tool\'s %s row is 404, whatever the caller is', (kind) => {
    const staff = member(['instructor']);
    expect(decide(session(), target(kind, { appId: OTHER_APP }), 'read', exists(staff)).result).toBe(404);
    expect(decide(provision({ provisionLevels: ['context', 'location'] }), target(kind, { appId: OTHER_APP }), 'read', exists(null)).result).toBe(404);
  });

  it.each(kinds)('a %s row that is not there is 404 before any 403', (kind) => {
    expect(decide(session(), target(kind, { memberId: PEER }), 'write', { exists: false, callerMember: member(['student']) })).toEqual({
      result: 404,
      detail: ROW_MESSAGES.notFound,
    });
  });

  it('a membership in another course does not count', () => {
    expect(decide(session(), target('member'), 'read', exists(member(['instructor'], OTHER_CTX))).result).toBe(403);
  });
});

describe('authorizeRow: credentials that carry no user', () => {
  const app = { id: APP } as AppRecord;
  it('an API key is refused on every row (GAP-28)', () => {
    const out = decide({ kind: 'apiKey', app }, target('context'), 'read', exists(null));
    expect(out.result).toBe(401);
  });
  it('no credential is 401', () => {
    expect(decide({ kind: 'none' }, target('context'), 'read', exists(null)).result).toBe(401);
  });
});

describe('authorizeRow: provision tokens (NS-06, GAP-38)', () => {
  const courseLevel = provision({ locationId: null, provisionLevels: ['context'] });
  const locationLevel = provision({ locationId: LOC, provisionLevels: ['context', 'location'] });
  const copyLocation = provision({ locationId: LOC, provisionLevels: ['context', 'location'], parentContextId: PARENT });
  const none = exists(null);
  const cases: Array<[string, Principal, RowTarget, RowAccess, Expect]> = [
    ['course level: context row read', courseLevel, target('context'), 'read', 'allow'],
    ['course level: context row write', courseLevel, target('context'), 'write', 'allow'],
    ['course level: a location row', courseLevel, target('location'), 'read', 403],
    ['location level: context row write', locationLevel, target('context'), 'write', 'allow'],
    ['location level: its location row read', locationLevel, target('location'), 'read', 'allow'],
    ['location level: its location row write', locationLevel, target('location'), 'write', 'allow'],
    ['location level: another location row', locationLevel, target('location', { locationId: OTHER_LOC }), 'read', 403],
    ['member row', locationLevel, target('member'), 'read', 403],
    ['member_location row', locationLevel, target('member_location'), 'write', 403],
    ['another course', locationLevel, target('context', { contextId: OTHER_CTX }), 'read', 403],
    ['copy: parent context row read', copyLocation, target('context', { contextId: PARENT }), 'read', 'allow'],
    ['copy: parent context row write', copyLocation, target('context', { contextId: PARENT }), 'write', 403],
    ['copy: parent location row read', copyLocation, target('location', { contextId: PARENT }), 'read', 'allow'],
    ['copy: parent location row write', copyLocation, target('location', { contextId: PARENT }), 'write', 403],
    ['copy: parent row of another location', copyLocation, target('location', { contextId: PARENT, locationId: OTHER_LOC }), 'read', 403],
    ['copy: parent member row', copyLocation, target('member', { contextId: PARENT }), 'read', 403],
    ['copy: its own rows still writable', copyLocation, target('location'), 'write', 'allow'],
  ];
  it.each(cases)('%s', (_name, principal, t, access, expected) => {
    expect(decide(principal, t, access, none).result).toBe(expected);
  });
});
