/**
 * Every cell of the score permission rules (Authentication rules 5 and 6, decisions S-04, GAP-21, GAP-23,
 * NS-16, NS-21), decided by the pure `authorizeScore` without a database.
 */
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../server/auth/principal.js';
import type { ScoreFacts, ScoreTarget, ScoreUrlForm } from '../../../server/auth/score-permissions.js';
import { authorizeScore } from '../../../server/auth/score-permissions.js';
import type { ApiTokenRecord, AppRecord, MemberGroup } from '../../../server/store/index.js';

const APP = 'app_aaaaaaaaaaaaaaaaaaaaaaaa';
const OTHER_APP = 'app_bbbbbbbbbbbbbbbbbbbbbbbb';
const CTX = 'ctx_cccccccccccccccccccccccc';
const OTHER_CTX = 'ctx_dddddddddddddddddddddddd';
const LOC = 'loc_eeeeeeeeeeeeeeeeeeeeeeee';
const ME = 'mem_ffffffffffffffffffffffff';
const OTHER = 'mem_gggggggggggggggggggggggg';
const USER = 'usr_hhhhhhhhhhhhhhhhhhhhhhhh';

function app(id: string): AppRecord {
  return {
    id,
    name: 'Tool',
    description: null,
    logoUrl: null,
    callbackUrl: null,
    provisionUrl: null,
    locationsUrl: null,
    status: 'active',
    hosting: 'self_hosted',
    contractVersion: '2026-09-21',
    gradesReleased: true,
    apiKeyHint: 'ltiaas_...abcd',
    apiKeyCreatedAt: 0,
    createdAt: 0,
    updatedAt: 0,
  };
}

function token(kind: 'launch' | 'provision', appId = APP): ApiTokenRecord {
  return {
    fingerprint: '0123456789abcdef',
    kind,
    appId,
    contextId: CTX,
    userId: kind === 'launch' ? USER : null,
    memberId: kind === 'launch' ? ME : null,
    locationId: LOC,
    launchId: null,
    parentContextId: null,
    provisionLevels: kind === 'provision' ? ['context', 'location'] : [],
    createdAt: 0,
    expiresAt: Number.MAX_SAFE_INTEGER,
    revokedAt: null,
  };
}

const apiKey = (appId = APP): Principal => ({ kind: 'apiKey', app: app(appId) });
const session = (appId = APP): Principal => ({ kind: 'session', token: token('launch', appId) });
const provision: Principal = { kind: 'provision', token: token('provision') };
const none: Principal = { kind: 'none' };

const target = (memberId = ME): ScoreTarget => ({ appId: APP, contextId: CTX, locationId: LOC, memberId });

function facts(overrides: Partial<ScoreFacts> & { groups?: MemberGroup[] } = {}): ScoreFacts {
  const { groups = ['student'], ...rest } = overrides;
  return { memberInContext: true, placed: true, callerMember: { id: ME, contextId: CTX, groups }, ...rest };
}

interface Row {
  name: string;
  principal: Principal;
  form: ScoreUrlForm;
  target: ScoreTarget;
  facts: ScoreFacts;
  expect: { status: number; detail: string } | { source: 'session' | 'api_key'; id: string };
}

const rows: Row[] = [
  // 401 (normally answered before the guard; kept for callers outside the pipeline)
  { name: 'no credential', principal: none, form: 'contexts', target: target(), facts: facts(), expect: { status: 401, detail: 'Missing Bearer API key' } },
  {
    name: 'API key on the account form',
    principal: apiKey(),
    form: 'account',
    target: target(),
    facts: facts(),
    expect: { status: 401, detail: 'API key is not accepted on this URL; use the api.token of a launch' },
  },
  // 404 before any 403 (GAP-23)
  {
    name: 'member not in the course (API key)',
    principal: apiKey(),
    form: 'contexts',
    target: target(OTHER),
    facts: facts({ memberInContext: false }),
    expect: { status: 404, detail: `member ${OTHER} is not a member of context ${CTX}` },
  },
  {
    name: 'member not in the course beats wrong tool',
    principal: apiKey(OTHER_APP),
    form: 'contexts',
    target: target(OTHER),
    facts: facts({ memberInContext: false }),
    expect: { status: 404, detail: `member ${OTHER} is not a member of context ${CTX}` },
  },
  {
    name: 'member not in the course (session, account form)',
    principal: session(),
    form: 'account',
    target: target(OTHER),
    facts: facts({ memberInContext: false }),
    expect: { status: 404, detail: `member ${OTHER} is not a member of context ${CTX}` },
  },
  // 403 wrong tool (contract table, S-04)
  {
    name: 'API key of another tool',
    principal: apiKey(OTHER_APP),
    form: 'contexts',
    target: target(),
    facts: facts(),
    expect: { status: 403, detail: `API key is for tool ${OTHER_APP}, not tool ${APP}` },
  },
  {
    name: 'api.token of another tool',
    principal: session(OTHER_APP),
    form: 'contexts',
    target: target(),
    facts: facts(),
    expect: { status: 403, detail: `api.token is for tool ${OTHER_APP}, not tool ${APP}` },
  },
  {
    name: 'api.token of another tool, account form',
    principal: session(OTHER_APP),
    form: 'account',
    target: target(),
    facts: facts(),
    expect: { status: 403, detail: `api.token is for tool ${OTHER_APP}, not tool ${APP}` },
  },
  {
    name: 'wrong tool beats no placement',
    principal: apiKey(OTHER_APP),
    form: 'contexts',
    target: target(),
    facts: facts({ placed: false }),
    expect: { status: 403, detail: `API key is for tool ${OTHER_APP}, not tool ${APP}` },
  },
  // 403 no placement, both credentials (GAP-21)
  {
    name: 'no placement, API key',
    principal: apiKey(),
    form: 'contexts',
    target: target(),
    facts: facts({ placed: false }),
    expect: { status: 403, detail: `tool ${APP} has no placement of location ${LOC} in context ${CTX}` },
  },
  {
    name: 'no placement, session',
    principal: session(),
    form: 'contexts',
    target: target(),
    facts: facts({ placed: false }),
    expect: { status: 403, detail: `tool ${APP} has no placement of location ${LOC} in context ${CTX}` },
  },
  {
    name: 'no placement, session, account form',
    principal: session(),
    form: 'account',
    target: target(),
    facts: facts({ placed: false }),
    expect: { status: 403, detail: `tool ${APP} has no placement of location ${LOC} in context ${CTX}` },
  },
  // 403 the session's user is not a member of the URL's course (GAP-21)
  {
    name: 'session user not a member',
    principal: session(),
    form: 'contexts',
    target: target(OTHER),
    facts: facts({ callerMember: null }),
    expect: { status: 403, detail: `the session's user is not a member of context ${CTX}` },
  },
  {
    name: "session user's membership is of another course",
    principal: session(),
    form: 'account',
    target: target(OTHER),
    facts: facts({ callerMember: { id: ME, contextId: OTHER_CTX, groups: ['instructor'] } }),
    expect: { status: 403, detail: `the session's user is not a member of context ${CTX}` },
  },
  // NS-16: a student's session grades only its own member
  {
    name: 'student grading another member',
    principal: session(),
    form: 'contexts',
    target: target(OTHER),
    facts: facts({ groups: ['student'] }),
    expect: { status: 403, detail: "a student's session may only submit scores for its own member" },
  },
  {
    name: 'student grading another member, account form',
    principal: session(),
    form: 'account',
    target: target(OTHER),
    facts: facts({ groups: ['student'] }),
    expect: { status: 403, detail: "a student's session may only submit scores for its own member" },
  },
  {
    name: 'member with no group grading another member',
    principal: session(),
    form: 'contexts',
    target: target(OTHER),
    facts: facts({ groups: [] }),
    expect: { status: 403, detail: "a student's session may only submit scores for its own member" },
  },
  // A provision request's token acts for nobody.
  {
    name: 'provision token',
    principal: provision,
    form: 'contexts',
    target: target(),
    facts: facts({ callerMember: null }),
    expect: { status: 403, detail: "a provision request's api.token cannot submit scores; use the api.token of a launch" },
  },
  // Allowed
  { name: 'student grading itself', principal: session(), form: 'contexts', target: target(), facts: facts(), expect: { source: 'session', id: USER } },
  { name: 'student grading itself, account form', principal: session(), form: 'account', target: target(), facts: facts(), expect: { source: 'session', id: USER } },
  ...(['instructor', 'assistant', 'manager'] as const).flatMap((group): Row[] => [
    {
      name: `${group} grading another member`,
      principal: session(),
      form: 'contexts',
      target: target(OTHER),
      facts: facts({ groups: [group] }),
      expect: { source: 'session', id: USER },
    },
    {
      name: `${group} grading another member, account form`,
      principal: session(),
      form: 'account',
      target: target(OTHER),
      facts: facts({ groups: ['student', group] }),
      expect: { source: 'session', id: USER },
    },
  ]),
  { name: 'API key, any member', principal: apiKey(), form: 'contexts', target: target(OTHER), facts: facts({ callerMember: null }), expect: { source: 'api_key', id: '' } },
];

describe('authorizeScore', () => {
  it.each(rows.map((r) => [r.name, r] as const))('%s', (_name, row) => {
    const decision = authorizeScore(row.principal, row.target, row.form, row.facts);
    if ('status' in row.expect) {
      expect(decision.allowed).toBe(false);
      if (decision.allowed) return;
      expect(decision.problem.status).toBe(row.expect.status);
      expect(decision.problem.detail).toBe(row.expect.detail);
    } else {
      expect(decision).toEqual({ allowed: true, sourceType: row.expect.source, sourceId: row.expect.id });
    }
  });
});
