/**
 * Submit a score over real HTTP against the real service (harness: real SQLite, response validation ON),
 * publishing for real over AGS to the gradebook of the tool's Sandbox LMS school (the in-process reference
 * LMS, decisions LTI-44 to LTI-48): both URL forms, both credentials, the permission rules
 * (Authentication rules 5 and 6; decisions S-04, GAP-21, GAP-23, NS-16, NS-21), every message of the
 * contract's grade error table, the attempt record, and the publication outcomes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schemas } from '../../../generated/2026-09-21/schemas.js';
import { AGS_SCOPE } from '../../../server/lti/vocabulary.js';
import type { AttemptRecord } from '../../../server/store/index.js';
import type { PlacedLocation, TestLaunch, TestServer, Tool } from '../harness.js';
import { createTool, launch, lmsAgsToken, lmsScoreOf, placeLocation, postLmsScore, problemOf, startServer, TEST_STORE } from '../harness.js';
import { ManualClock } from '../../store/helpers.js';

let server: TestServer;
let tool: Tool;
let quiz: PlacedLocation;
let student: TestLaunch;
let student2: TestLaunch;
let instructor: TestLaunch;

const SUBMITTED = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

beforeAll(async () => {
  server = await startServer();
  tool = await createTool(server);
  quiz = await placeLocation(server, { app: tool.app.id, type: 'assessment', points: 20, label: 'Week 1 quiz' });
  student = await launch(server, { placed: quiz, groups: ['student'] });
  student2 = await launch(server, { placed: quiz, groups: ['student'] });
  instructor = await launch(server, { placed: quiz, groups: ['instructor'] });
});

afterAll(async () => {
  await server?.stop();
});

function contextsUrl(placed: PlacedLocation, memberId: string, appId = placed.appId, contextId = placed.context.id): string {
  return `${server.url}/v1/contexts/${contextId}/apps/${appId}/locations/${placed.location.id}/members/${memberId}/scores`;
}

function accountUrl(placed: PlacedLocation, memberId: string, appId = placed.appId, contextId = placed.context.id): string {
  return `${server.url}/account/v1/users/${memberId}/apps/${appId}/contexts/${contextId}/locations/${placed.location.id}/scores`;
}

async function post(url: string, auth: string | null, body: unknown, contentType = 'application/json'): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': contentType };
  if (auth !== null) headers['authorization'] = auth;
  return fetch(url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

const apiKeyAuth = (t: Tool = tool) => `Bearer ${t.apiKey}`;

interface Attempt {
  id: string;
  status: 'success' | 'failed';
  score: number;
  max_score: number | null;
  activity_progress: string;
  grading_progress: string;
  submitted: string;
  member: string;
  location: string;
  app: string;
  context: string;
  data: { comment: string; response: { status: number; body: string } | null; error: string; source_type: string; source_id: string };
}

async function attemptOf(res: Response): Promise<Attempt> {
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return JSON.parse(text) as Attempt;
}

async function attemptsOf(placed: PlacedLocation, memberId?: string): Promise<AttemptRecord[]> {
  const out: AttemptRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await server.services.store.attempts.list({
      appId: placed.appId,
      contextId: placed.context.id,
      locationId: placed.location.id,
      ...(memberId ? { memberId } : {}),
      limit: 500,
      ...(cursor ? { cursor } : {}),
    });
    out.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

/** The placement's column in the LMS gradebook and the member's score in it. */
function gradebookScore(placed: PlacedLocation, memberId: string) {
  return lmsScoreOf(server, placed, memberId);
}

describe('submit a score: success and the attempt', () => {
  it("publishes a student's own score through grade.submit and records the attempt", async () => {
    expect(student.claims.grade.submit).toBe(contextsUrl(quiz, student.member.id));
    const res = await post(student.claims.grade.submit ?? '', student.auth, { score: 0.85, comment: 'Good work on question 3.' });
    const attempt = await attemptOf(res);
    expect(attempt).toMatchObject({
      status: 'success',
      score: 0.85,
      max_score: null,
      activity_progress: 'Completed',
      grading_progress: 'FullyGraded',
      member: student.member.id,
      location: quiz.location.id,
      app: tool.app.id,
      context: quiz.context.id,
      data: {
        comment: 'Good work on question 3.',
        response: { status: 204, body: '' },
        error: '',
        source_type: 'session',
        source_id: student.user.id,
      },
    });
    expect(attempt.id).toMatch(/^att_[A-Za-z0-9]{20,}$/);
    expect(attempt.submitted).toMatch(SUBMITTED);
    // The payload sent to the LMS (with the student's LMS id) is withheld from the tool.
    expect(JSON.stringify(attempt)).not.toContain(student.user.externalId);

    const { column, score } = await gradebookScore(quiz, student.member.id);
    expect(column).toMatchObject({ label: 'Week 1 quiz', score_maximum: 20 });
    expect(score).toMatchObject({
      score_given: 17,
      score_maximum: 20,
      comment: 'Good work on question 3.',
      activity_progress: 'Completed',
      grading_progress: 'FullyGraded',
      timestamp: attempt.submitted,
    });
  });

  it('accepts the account form with the api.token', async () => {
    const attempt = await attemptOf(
      await post(accountUrl(quiz, student.member.id), student.auth, { score: 0.4, activity_progress: 'Submitted', grading_progress: 'Pending' }),
    );
    expect(attempt).toMatchObject({ status: 'success', activity_progress: 'Submitted', grading_progress: 'Pending', data: { source_type: 'session' } });
    const { score } = await gradebookScore(quiz, student.member.id);
    expect(score).toMatchObject({ score_given: 8, activity_progress: 'Submitted', grading_progress: 'Pending', timestamp: attempt.submitted, comment: null });
  });

  it("accepts the tool's API key on the /contexts/... form, for any member", async () => {
    const attempt = await attemptOf(await post(contextsUrl(quiz, student2.member.id), apiKeyAuth(), { score: 1 }));
    expect(attempt).toMatchObject({ status: 'success', member: student2.member.id, data: { source_type: 'api_key', source_id: '' } });
    expect((await gradebookScore(quiz, student2.member.id)).score).toMatchObject({ score_given: 20, timestamp: attempt.submitted });
  });

  it('lets course staff grade any member, in both URL forms', async () => {
    const staff = [
      instructor,
      await launch(server, { placed: quiz, groups: ['assistant'] }),
      await launch(server, { placed: quiz, groups: ['manager'] }),
    ];
    for (const session of staff) {
      const a = await attemptOf(await post(contextsUrl(quiz, student2.member.id), session.auth, { score: 0.5 }));
      expect(a).toMatchObject({ status: 'success', member: student2.member.id, data: { source_type: 'session', source_id: session.user.id } });
      const b = await attemptOf(await post(accountUrl(quiz, student.member.id), session.auth, { score: 0.6 }));
      expect(b).toMatchObject({ status: 'success', member: student.member.id });
    }
  });

  it('scores a member who never launched the activity', async () => {
    // A member of the course known from another location's launch, who never opened the quiz.
    const reading = await placeLocation(server, { app: tool.app.id, course: { contextId: quiz.context.id }, type: 'content' });
    const reader = await launch(server, { placed: reading, groups: ['student'] });
    const attempt = await attemptOf(await post(contextsUrl(quiz, reader.member.id), instructor.auth, { score: 0.75 }));
    expect(attempt).toMatchObject({ status: 'success', member: reader.member.id });
    expect((await gradebookScore(quiz, reader.member.id)).score).toMatchObject({ score_given: 15, timestamp: attempt.submitted });
    const byKey = await attemptOf(await post(contextsUrl(quiz, reader.member.id), apiKeyAuth(), { score: 0.25 }));
    expect(byKey.status).toBe('success');
  });

  it('records exactly one attempt per call, never updating an earlier one', async () => {
    const before = await attemptsOf(quiz, student.member.id);
    const first = await attemptOf(await post(contextsUrl(quiz, student.member.id), apiKeyAuth(), { score: 0.1 }));
    const second = await attemptOf(await post(contextsUrl(quiz, student.member.id), apiKeyAuth(), { score: 0.2, max_score: 0.5, comment: 'regrade' }));
    const after = await attemptsOf(quiz, student.member.id);
    expect(after).toHaveLength(before.length + 2);
    const unchanged = after.filter((a) => before.some((b) => b.id === a.id));
    expect(unchanged).toEqual(before);
    expect(after.find((a) => a.id === first.id)).toMatchObject({ score: 0.1, status: 'success', submitted: first.submitted });
    expect(second.submitted > first.submitted).toBe(true);
  });
});

describe('submit a score: round trips to PostgreSQL (issue 30, PERF-170 to PERF-172, PERF-216)', () => {
  /**
   * Every exchange the service's pool has with PostgreSQL during `fn`: `pg` sends one query (or one
   * pipelined batch, PERF-170) per `Client.query` and waits for its answer, so each call is one round trip.
   * The Sandbox LMS's own connections (`tis-lms`) are the school's, not the service's.
   */
  async function exchangesDuring(fn: () => Promise<void>): Promise<string[]> {
    const pg = (await import('pg')).default;
    const schema = (server.services.store.driver as { schema?: string | null }).schema ?? '';
    const seen: string[] = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: unknown, config: unknown, ...rest: unknown[]) {
      const params = (this as unknown as { connectionParameters: { application_name?: string; options?: string } }).connectionParameters;
      if (params.application_name !== 'tis-lms' && (params.options ?? '').includes(schema)) {
        // A pipelined batch (PERF-170) reads as the texts of its statements.
        const text = typeof config === 'string' ? config : ((config as { text?: string }).text ?? String(config));
        seen.push(text.replace(/\s+/g, ' '));
      }
      return (query as (...args: unknown[]) => unknown).call(this, config, ...rest);
    } as typeof query;
    try {
      await fn();
    } finally {
      pg.Client.prototype.query = query;
    }
    return seen;
  }

  it.runIf(TEST_STORE === 'postgres')('a warm score is at most 2 round trips, the credential epoch read in the first, with a session or an API key, with or without Idempotency-Key', async () => {
    const placed = await placeLocation(server, { app: tool.app.id, course: { contextId: quiz.context.id }, type: 'assessment', points: 10 });
    const learner = await launch(server, { placed, groups: ['student'] });
    const url = contextsUrl(placed, learner.member.id);
    const cases: Array<[string, string, Record<string, string>]> = [
      ['session', learner.auth, {}],
      ['API key', apiKeyAuth(), {}],
      ['session with Idempotency-Key', learner.auth, { 'idempotency-key': `warm-${Date.now()}` }],
    ];
    for (const [name, auth, extra] of cases) {
      // Warm: the statements prepared, the LMS's token taken, the pair's facts kept by this instance, and the
      // keys' sweep (at most once a minute, PERF-42) done by a first keyed request.
      const warmHeaders = Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, `${v}-warm`]));
      await attemptOf(await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: auth, ...warmHeaders }, body: JSON.stringify({ score: 0.25, max_score: 1 }) }));
      let attempt: Attempt | undefined;
      const exchanges = await exchangesDuring(async () => {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: auth, ...extra }, body: JSON.stringify({ score: 0.5, max_score: 1 }) });
        attempt = await attemptOf(res);
      });
      expect(attempt?.status, attempt?.data.error).toBe('success');
      expect(exchanges.length, `${name}: ${exchanges.map((e) => e.slice(0, 80)).join(' | ')}`).toBeLessThanOrEqual(2);
      // The epoch the request took on trust is confirmed by the transaction's first exchange (PERF-216).
      expect(exchanges[0], name).toContain('credential_epoch');
    }
    // What was acknowledged is committed, in order, and in the gradebook.
    const recorded = await attemptsOf(placed, learner.member.id);
    expect(recorded.filter((a) => a.status === 'success')).toHaveLength(6);
    expect((await gradebookScore(placed, learner.member.id)).score?.timestamp).toBe(recorded[0]?.submitted);
  });

  // Both stores: on SQLite the handler confirms with a read of its own before the key's claim (PERF-216).
  it('a score that took a stale credential epoch on trust is run again, body and all, and one whose key was rotated meanwhile is refused with nothing published', async () => {
    const own = await createTool(server);
    const placed = await placeLocation(server, { app: own.app.id, type: 'assessment', points: 10 });
    const learner = await launch(server, { placed, groups: ['student'] });
    const url = contextsUrl(placed, learner.member.id);
    // Warm: the key's facts and (on PostgreSQL) the score's facts kept, and an epoch read by this instance.
    await attemptOf(await post(url, apiKeyAuth(own), { score: 0.25, max_score: 1 }));

    // Another tool's rotation moves the epoch without this instance reading it: the next score trusts the
    // old one, finds it stale, and is run again from its start with the body it had read.
    const other = await createTool(server);
    await server.services.store.apps.rotateApiKey(other.app.id);
    const headers = { 'content-type': 'application/json', authorization: apiKeyAuth(own), 'idempotency-key': `stale-${Date.now()}` };
    const body = JSON.stringify({ score: 0.5, max_score: 1, comment: 'run again' });
    let again: Attempt | undefined;
    const exchanges = await exchangesDuring(async () => {
      again = await attemptOf(await fetch(url, { method: 'POST', headers, body }));
    });
    expect(again).toMatchObject({ status: 'success', score: 0.5, data: { comment: 'run again' } });
    if (TEST_STORE === 'postgres') {
      // The trusted transaction (rolled back at its first answer), then the request run again in its own.
      const transactions = exchanges.filter((e) => e.startsWith('BEGIN'));
      expect(transactions[0]).toContain('credential_epoch');
      expect(transactions).toHaveLength(2);
    }
    // The Idempotency-Key the first run claimed in its rolled-back transaction is free for the run that
    // counted: the same request again replays that attempt.
    const replay = await fetch(url, { method: 'POST', headers, body });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await attemptOf(replay)).id).toBe(again?.id);
    let recorded = await attemptsOf(placed, learner.member.id);
    expect(recorded.map((a) => a.score)).toEqual([0.5, 0.25]);
    expect((await gradebookScore(placed, learner.member.id)).score).toMatchObject({ comment: 'run again', timestamp: again?.submitted });

    // The tool's own key rotated meanwhile: the trusted facts said yes, the run with the epoch read says no.
    const rotated = await server.services.store.apps.rotateApiKey(own.app.id);
    const refused = await post(url, apiKeyAuth(own), { score: 0.9, max_score: 1 });
    expect(await problemOf(refused)).toMatchObject({ status: 401, detail: 'Invalid API key' });
    recorded = await attemptsOf(placed, learner.member.id);
    expect(recorded).toHaveLength(2);
    expect((await gradebookScore(placed, learner.member.id)).score).toMatchObject({ comment: 'run again', timestamp: again?.submitted });
    await attemptOf(await post(url, `Bearer ${rotated?.apiKey}`, { score: 1, max_score: 1 }));
  });
});

describe('submit a score: the facts are decided as of the score (PERF-172)', () => {
  it("a staff member demoted since the last score the instance allowed is refused, and nothing is published", async () => {
    const placed = await placeLocation(server, { app: tool.app.id, course: { contextId: quiz.context.id }, type: 'assessment' });
    const teacher = await launch(server, { placed, groups: ['instructor'] });
    const learner = await launch(server, { placed, groups: ['student'] });
    const url = contextsUrl(placed, learner.member.id);
    // Allowed: on PostgreSQL the instance now keeps these facts for the next score of the pair.
    expect((await attemptOf(await post(url, teacher.auth, { score: 0.5 }))).status).toBe('success');
    // Changed in the store, as another instance's launch would: no instance is told.
    await server.services.store.members.upsert({ contextId: placed.context.id, userId: teacher.user.id, groups: ['student'] });
    const refused = await post(url, teacher.auth, { score: 0.6 });
    expect(refused.status).toBe(403);
    expect(await problemOf(refused)).toMatchObject({ code: 'not_own_member' });
    const recorded = await attemptsOf(placed, learner.member.id);
    expect(recorded).toHaveLength(1);
    expect((await gradebookScore(placed, learner.member.id)).score?.timestamp).toBe(recorded[0]?.submitted);
  });
});

describe('submit a score: submitted is strictly later on every attempt', () => {
  it('for 200 rapid submissions of one member at one location (microsecond strings)', async () => {
    const placed = await placeLocation(server, { app: tool.app.id, course: { contextId: quiz.context.id }, type: 'assessment' });
    const submitted: string[] = [];
    for (let i = 0; i < 200; i += 1) {
      const a = await attemptOf(await post(contextsUrl(placed, student.member.id), apiKeyAuth(), { score: (i % 100) / 100 }));
      expect(a.status, a.data.error).toBe('success');
      submitted.push(a.submitted);
    }
    for (const s of submitted) expect(s).toMatch(SUBMITTED);
    for (let i = 1; i < submitted.length; i += 1) expect(submitted[i]! > submitted[i - 1]!, `${submitted[i]} after ${submitted[i - 1]}`).toBe(true);
    expect((await gradebookScore(placed, student.member.id)).score?.timestamp).toBe(submitted[199]);
  });

  it('for concurrent submissions: all distinct, and the gradebook keeps the latest', async () => {
    const placed = await placeLocation(server, { app: tool.app.id, course: { contextId: quiz.context.id }, type: 'assessment' });
    const attempts = await Promise.all(
      Array.from({ length: 40 }, (_, i) => post(contextsUrl(placed, student2.member.id), apiKeyAuth(), { score: i / 40 }).then(attemptOf)),
    );
    const stamps = attempts.map((a) => a.submitted);
    expect(new Set(stamps).size).toBe(40);
    // A submission overtaken in flight by a later one is refused by the LMS (409): the newer score wins.
    for (const a of attempts.filter((x) => x.status === 'failed')) expect(a.data.response?.status).toBe(409);
    const latest = [...stamps].sort().pop();
    expect((await gradebookScore(placed, student2.member.id)).score?.timestamp).toBe(latest);
  });
});

describe('submit a score: submitted is strictly later even when the clock does not move', () => {
  it('a frozen clock: every call in one millisecond gets a later microsecond, and each publishes', async () => {
    // The whole service on a clock that stays on one millisecond (set to now, so token lifetimes hold).
    const clock = new ManualClock(Date.now());
    const frozen = await startServer({ clock });
    try {
      const t = await createTool(frozen);
      const placed = await placeLocation(frozen, { app: t.app.id, type: 'assessment', points: 10 });
      const learner = await launch(frozen, { placed, groups: ['student'] });
      const url = `${frozen.url}/v1/contexts/${placed.context.id}/apps/${t.app.id}/locations/${placed.location.id}/members/${learner.member.id}/scores`;
      const submitted: string[] = [];
      for (let i = 0; i < 12; i += 1) {
        // Both sources alternate: the session and the API key share one sequence per student and location.
        const a = await attemptOf(await post(url, i % 2 === 0 ? learner.auth : `Bearer ${t.apiKey}`, { score: i / 12 }));
        expect(a.status, a.data.error).toBe('success');
        submitted.push(a.submitted);
      }
      const concurrent = await Promise.all(Array.from({ length: 12 }, (_, i) => post(url, `Bearer ${t.apiKey}`, { score: i / 12 }).then(attemptOf)));
      const millisecond = new Date(clock.ms).toISOString().slice(0, 23);
      for (const stamp of submitted) expect(stamp.slice(0, 23)).toBe(millisecond);
      for (let i = 1; i < submitted.length; i += 1) expect(submitted[i]! > submitted[i - 1]!, `${submitted[i]} after ${submitted[i - 1]}`).toBe(true);
      const all = [...submitted, ...concurrent.map((a) => a.submitted)];
      expect(new Set(all).size).toBe(24);
      for (const stamp of concurrent.map((a) => a.submitted)) expect(stamp > submitted.at(-1)!).toBe(true);
    } finally {
      await frozen.stop();
    }
  });
});

describe('submit a score: permission (401, 404, 403 in the order of GAP-23)', () => {
  it('answers 401 with the messages of NS-21', async () => {
    const url = contextsUrl(quiz, student.member.id);
    const cases: Array<[string | null, string, string]> = [
      [null, url, 'Missing Bearer API key'],
      ['Bearer ltiaas_app_aaaaaaaaaaaaaaaaaaaaaaaa_' + 'x'.repeat(43), url, 'Invalid API key'],
      ['Bearer tis_at_' + 'y'.repeat(43), url, 'Invalid bearer token'],
      [apiKeyAuth(), accountUrl(quiz, student.member.id), 'API key is not accepted on this URL; use the api.token of a launch'],
      [null, accountUrl(quiz, student.member.id), 'Missing Bearer API key'],
    ];
    for (const [auth, target, detail] of cases) {
      const res = await post(target, auth, { score: 0.5 });
      expect(res.status).toBe(401);
      expect((await problemOf(res)).detail).toBe(detail);
    }
  });

  it('answers 401 for a rotated key and a suspended tool', async () => {
    const other = await createTool(server);
    const placed = await placeLocation(server, { app: other.app.id });
    const someone = await launch(server, { placed });
    const rotated = await server.services.store.apps.rotateApiKey(other.app.id);
    const old = await post(contextsUrl(placed, someone.member.id), apiKeyAuth(other), { score: 0.5 });
    expect((await problemOf(old)).detail).toBe('Invalid API key');
    await server.services.store.apps.setStatus(other.app.id, 'suspended');
    const suspended = await post(contextsUrl(placed, someone.member.id), `Bearer ${rotated?.apiKey ?? ''}`, { score: 0.5 });
    expect(suspended.status).toBe(401);
    expect((await problemOf(suspended)).detail).toBe(`tool ${other.app.id} is suspended`);
    const session = await post(contextsUrl(placed, someone.member.id), someone.auth, { score: 0.5 });
    expect((await problemOf(session)).detail).toBe(`tool ${other.app.id} is suspended`);
  });

  it('answers 404 for a member segment naming no member of the course (GAP-21)', async () => {
    const elsewhere = await placeLocation(server, { app: tool.app.id });
    const outsider = await launch(server, { placed: elsewhere });
    for (const [url, auth] of [
      [contextsUrl(quiz, outsider.member.id), apiKeyAuth()],
      [contextsUrl(quiz, outsider.member.id), instructor.auth],
      [accountUrl(quiz, 'mem_doesnotexistanywhere00'), instructor.auth],
    ] as const) {
      const res = await post(url, auth, { score: 0.5 });
      expect(res.status).toBe(404);
      const memberId = url.includes('mem_doesnotexist') ? 'mem_doesnotexistanywhere00' : outsider.member.id;
      expect((await problemOf(res)).detail).toBe(`member ${memberId} is not a member of context ${quiz.context.id}`);
    }
  });

  it("answers 403 for another tool's API key or api.token (S-04)", async () => {
    const other = await createTool(server);
    const placed = await placeLocation(server, { app: other.app.id });
    const otherSession = await launch(server, { placed });
    const byKey = await post(contextsUrl(quiz, student.member.id), apiKeyAuth(other), { score: 0.5 });
    expect(byKey.status).toBe(403);
    expect((await problemOf(byKey)).detail).toBe(`API key is for tool ${other.app.id}, not tool ${tool.app.id}`);
    for (const url of [contextsUrl(quiz, student.member.id), accountUrl(quiz, student.member.id)]) {
      const byToken = await post(url, otherSession.auth, { score: 0.5 });
      expect(byToken.status).toBe(403);
      expect((await problemOf(byToken)).detail).toBe(`api.token is for tool ${other.app.id}, not tool ${tool.app.id}`);
    }
  });

  it('answers 403 for a location the tool has not placed in the course, with both credentials (GAP-21)', async () => {
    const otherCourse = await placeLocation(server, { app: tool.app.id });
    const teacher = await launch(server, { placed: otherCourse, groups: ['instructor'] });
    const pupil = await launch(server, { placed: otherCourse, groups: ['student'] });
    // The quiz's location, in a course where only another location is placed.
    const url = (form: 'contexts' | 'account') =>
      form === 'contexts'
        ? contextsUrl(quiz, pupil.member.id, tool.app.id, otherCourse.context.id)
        : accountUrl(quiz, pupil.member.id, tool.app.id, otherCourse.context.id);
    const detail = `tool ${tool.app.id} has no placement of location ${quiz.location.id} in context ${otherCourse.context.id}`;
    for (const [target, auth] of [
      [url('contexts'), apiKeyAuth()],
      [url('contexts'), teacher.auth],
      [url('account'), teacher.auth],
      [url('account'), pupil.auth],
    ] as const) {
      const res = await post(target, auth, { score: 0.5 });
      expect(res.status).toBe(403);
      expect((await problemOf(res)).detail).toBe(detail);
    }
  });

  it("answers 403 when the session's user is not a member of the URL's course (GAP-21)", async () => {
    const elsewhere = await placeLocation(server, { app: tool.app.id });
    const stranger = await launch(server, { placed: elsewhere, groups: ['instructor'] });
    for (const url of [contextsUrl(quiz, student.member.id), accountUrl(quiz, student.member.id)]) {
      const res = await post(url, stranger.auth, { score: 0.5 });
      expect(res.status).toBe(403);
      expect((await problemOf(res)).detail).toBe(`the session's user is not a member of context ${quiz.context.id}`);
    }
  });

  it("answers 403 for a student's session aimed at another member (NS-16)", async () => {
    for (const url of [contextsUrl(quiz, student2.member.id), accountUrl(quiz, student2.member.id), contextsUrl(quiz, instructor.member.id)]) {
      const res = await post(url, student.auth, { score: 1 });
      expect(res.status).toBe(403);
      expect(await problemOf(res)).toMatchObject({
        code: 'not_own_member',
        detail: "a student's session may only submit scores for its own member",
      });
    }
  });

  it('checks permission before the body (403 before 422) and the credential before everything', async () => {
    const badBody = { score: 7, points: 3 };
    const forbidden = await post(contextsUrl(quiz, student2.member.id), student.auth, badBody);
    expect(forbidden.status).toBe(403);
    const unknownMember = await post(contextsUrl(quiz, 'mem_nobody'), apiKeyAuth(), 'not json');
    expect(unknownMember.status).toBe(404);
    const anonymous = await post(contextsUrl(quiz, 'mem_nobody'), null, 'not json', 'text/plain');
    expect(anonymous.status).toBe(401);
    const wrongType = await post(contextsUrl(quiz, student2.member.id), student.auth, 'score=1', 'application/x-www-form-urlencoded');
    expect(wrongType.status).toBe(403);
  });
});

describe('submit a score: the request (Errors › Grade submission)', () => {
  const cases: Array<[string, unknown, string]> = [
    ['score missing', {}, 'score is required'],
    ['score null', { score: null }, 'score must be a number'],
    ['score a string', { score: '0.5' }, 'score must be a number'],
    ['score above 1', { score: 1.5 }, 'score must be between 0 and 1'],
    ['score below 0', { score: -0.1 }, 'score must be between 0 and 1'],
    ['max_score zero', { score: 0.5, max_score: 0 }, 'max_score must be greater than 0'],
    ['max_score negative', { score: 0.5, max_score: -10 }, 'max_score must be greater than 0'],
    ['max_score a string', { score: 0.5, max_score: '50' }, 'max_score must be a number'],
    ['activity_progress unknown', { score: 0.5, activity_progress: 'Started' }, 'activity_progress must be one of [Completed, Submitted]'],
    ['activity_progress lower case', { score: 0.5, activity_progress: 'completed' }, 'activity_progress must be one of [Completed, Submitted]'],
    ['grading_progress unknown', { score: 0.5, grading_progress: 'PendingManual' }, 'grading_progress must be one of [FullyGraded, Pending]'],
    ['grading_progress a number', { score: 0.5, grading_progress: 1 }, 'grading_progress must be one of [FullyGraded, Pending]'],
    ['an unknown field', { score: 0.5, points: 20 }, 'unknown field: points'],
    ['comment not a string', { score: 0.5, comment: 5 }, 'comment must be a string'],
    ['a body that is an array', [0.5], 'the score submission must be a JSON object'],
    ['a body that is a number', 0.5, 'the score submission must be a JSON object'],
  ];

  it.each(cases)('%s → 422 with the exact message, nothing published or recorded', async (_name, body, detail) => {
    const before = (await attemptsOf(quiz)).length;
    const stamp = (await gradebookScore(quiz, student.member.id)).score?.timestamp;
    for (const [url, auth] of [
      [contextsUrl(quiz, student.member.id), student.auth],
      [accountUrl(quiz, student.member.id), student.auth],
      [contextsUrl(quiz, student.member.id), apiKeyAuth()],
    ] as const) {
      const res = await post(url, auth, body);
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect((await problemOf(res)).detail).toBe(detail);
    }
    expect((await attemptsOf(quiz)).length).toBe(before);
    expect((await gradebookScore(quiz, student.member.id)).score?.timestamp).toBe(stamp);
  });

  it('answers a body of 5,000 unknown fields with the first, listing the first 100 of them only (H-23)', async () => {
    const body: Record<string, unknown> = { score: 0.5 };
    for (let i = 0; i < 5000; i += 1) body[`extra_${i}`] = i;
    const res = await post(contextsUrl(quiz, student.member.id), apiKeyAuth(), body);
    expect(res.status).toBe(422);
    const problem = await problemOf(res);
    expect(problem.detail).toBe('unknown field: extra_0');
    // The cap is the spec's own (Problem.errors.maxItems), which response validation holds the answer to.
    const errors = problem.body['errors'] as Array<{ path: string; message: string }>;
    expect(errors).toHaveLength(schemas.Problem.properties.errors.maxItems);
    expect(errors[0]).toEqual({ path: '/body/extra_0', message: 'unknown field: extra_0' });
    expect(errors.at(-1)?.path).toBe('/body/extra_99');
  });

  it('answers an empty body 422 score is required, malformed JSON 400 and another media type 415', async () => {
    const url = contextsUrl(quiz, student.member.id);
    const empty = await fetch(url, { method: 'POST', headers: { authorization: apiKeyAuth(), 'content-type': 'application/json' } });
    expect(empty.status).toBe(422);
    expect((await problemOf(empty)).detail).toBe('score is required');
    const malformed = await post(url, apiKeyAuth(), '{"score": 0.5');
    expect(malformed.status).toBe(400);
    const form = await post(url, apiKeyAuth(), 'score=0.5', 'application/x-www-form-urlencoded');
    expect(form.status).toBe(415);
    expect((await problemOf(form)).detail).toBe('Content-Type must be application/json');
  });

  it('answers 422 for a location that is not an assessment (after the body)', async () => {
    const practice = await placeLocation(server, { app: tool.app.id, course: { contextId: quiz.context.id }, type: 'practice' });
    const before = (await attemptsOf(practice)).length;
    for (const [url, auth] of [
      [contextsUrl(practice, student.member.id), apiKeyAuth()],
      [accountUrl(practice, student.member.id), student.auth],
    ] as const) {
      const res = await post(url, auth, { score: 0.5 });
      expect(res.status).toBe(422);
      expect(await problemOf(res)).toMatchObject({ code: 'not_assessment', detail: 'grade passback is only allowed for assessment locations' });
    }
    expect((await post(contextsUrl(practice, student.member.id), apiKeyAuth(), { score: 2 })).status).toBe(422);
    expect((await attemptsOf(practice)).length).toBe(before);
  });
});

describe('submit a score: publication outcomes', () => {
  it('sets the column points with max_score when the school grants the line-item scope', async () => {
    const placed = await placeLocation(server, { app: tool.app.id, course: { contextId: quiz.context.id }, points: 20 });
    const attempt = await attemptOf(await post(contextsUrl(placed, student.member.id), apiKeyAuth(), { score: 0.85, max_score: 50 }));
    expect(attempt).toMatchObject({ status: 'success', max_score: 50, data: { error: '' } });
    const { column, score } = await gradebookScore(placed, student.member.id);
    expect(column?.score_maximum).toBe(50);
    expect(score).toMatchObject({ score_given: 42.5, score_maximum: 50, timestamp: attempt.submitted });
  });

  it('fails max_score without the line-item scope, publishing nothing (S-04)', async () => {
    const other = await createTool(server);
    const placed = await placeLocation(server, { app: other.app.id, points: 20 });
    const pupil = await launch(server, { placed });
    await server.services.store.organizations.setGrantsLineItemScope(placed.organization.id, false);
    const attempt = await attemptOf(await post(contextsUrl(placed, pupil.member.id), pupil.auth, { score: 0.85, max_score: 50 }));
    expect(attempt).toMatchObject({
      status: 'failed',
      max_score: 50,
      data: {
        response: null,
        error: "max_score needs the LMS line-item scope, which this school's LMS developer key does not grant; nothing was published",
        source_type: 'session',
      },
    });
    const { column, score } = await gradebookScore(placed, pupil.member.id);
    expect(column?.score_maximum).toBe(20);
    expect(score).toBeNull();
    // The score scope alone still publishes.
    const plain = await attemptOf(await post(contextsUrl(placed, pupil.member.id), pupil.auth, { score: 0.85 }));
    expect(plain.status).toBe('success');
    expect((await gradebookScore(placed, pupil.member.id)).score).toMatchObject({ score_given: 17, score_maximum: 20 });
  });

  it("answers an LMS refusal (a stale timestamp) with 200 failed and the LMS's answer", async () => {
    const placed = await placeLocation(server, { app: tool.app.id, course: { contextId: quiz.context.id } });
    // The LMS's column already holds a score of the student stamped an hour ahead.
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const planted = await postLmsScore(server, tool.app.id, placed.placement.lineItemId ?? '', {
      userId: student.user.externalId,
      scoreGiven: 1,
      scoreMaximum: 100,
      timestamp: future,
    });
    expect(planted.status).toBe(204);
    const attempt = await attemptOf(await post(contextsUrl(placed, student.member.id), apiKeyAuth(), { score: 0.5 }));
    expect(attempt.status).toBe('failed');
    expect(attempt.data.response?.status).toBe(409);
    expect(JSON.parse(attempt.data.response?.body ?? '{}')).toMatchObject({ error: 'conflict' });
    expect(attempt.data.error).toMatch(
      new RegExp(`^the LMS refused the score \\(HTTP 409\\): conflict: line item \\S+ already holds a score for ${student.user.externalId} with a timestamp as new or newer$`),
    );
    // The column keeps the LMS's newer score.
    expect((await gradebookScore(placed, student.member.id)).score).toMatchObject({ score_given: 1, timestamp: future });
    expect((await attemptsOf(placed, student.member.id)).map((a) => a.id)).toEqual([attempt.id]);
  });

  it('answers a deleted gradebook column with 200 failed and the 404', async () => {
    const placed = await placeLocation(server, { app: tool.app.id, course: { contextId: quiz.context.id } });
    // Deleted in the LMS (AGS DELETE on the line item), as a teacher deletes a column.
    const lineItemUrl = placed.placement.lineItemId ?? '';
    const { token, fetch: send } = await lmsAgsToken(server, tool.app.id, [AGS_SCOPE.lineItem]);
    expect((await send(lineItemUrl, { method: 'DELETE', headers: { Authorization: `Bearer ${token}` } })).status).toBe(204);
    const attempt = await attemptOf(await post(accountUrl(placed, student.member.id), student.auth, { score: 0.5 }));
    expect(attempt).toMatchObject({ status: 'failed', data: { response: { status: 404 } } });
    const lmsLineItemId = decodeURIComponent(new URL(lineItemUrl).pathname.split('/').pop() ?? '');
    expect(attempt.data.error).toBe(
      `the LMS refused the score (HTTP 404): not_found: line item ${lmsLineItemId} not found in course ${placed.context.externalId}`,
    );
  });

  it('answers a placement without a line item with 200 failed, response null', async () => {
    const placed = await placeLocation(server, { app: tool.app.id, course: { contextId: quiz.context.id }, lineItem: false });
    const teacher = await launch(server, { placed, groups: ['instructor'] });
    expect(teacher.claims.grade.submit).toBeNull();
    for (const [url, auth] of [
      [contextsUrl(placed, student.member.id), apiKeyAuth()],
      [accountUrl(placed, student.member.id), teacher.auth],
    ] as const) {
      const attempt = await attemptOf(await post(url, auth, { score: 0.5 }));
      expect(attempt).toMatchObject({
        status: 'failed',
        data: { response: null, error: `location ${placed.location.id} has no line item in the LMS gradebook of context ${placed.context.id}` },
      });
    }
    expect(await attemptsOf(placed)).toHaveLength(2);
  });
});
