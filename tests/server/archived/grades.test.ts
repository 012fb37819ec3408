/**
 * Launch-keyed grades over real HTTP under both archived contracts (contract, Submit a grade / Read a
 * grade; decisions NS-19, S-13, S-15, GAP-42, GAP-43): one grade per launch with re-sync, publication
 * through the real publisher to the gradebook of the tool's Sandbox LMS school (over AGS, LTI-48), every message of the archived error table, another
 * tool's launch and grade indistinguishable from unknown ones, and the 2026-08-25 Test-tab trial.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlacedLocation, TestServer } from '../harness.js';
import { lmsScoreOf, placeLocation, readLmsGradebook, startServer } from '../harness.js';
import type { Archived } from './helpers.js';
import { ARCHIVED, call, expectProblem, expectValid, launchAs, pinnedTool } from './helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  await server?.stop();
});

const SUBMITTED = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

describe.each(ARCHIVED)('grades under %s', (version: Archived) => {
  const grades = () => `${server.url}/v1/grades`;
  let tool: Awaited<ReturnType<typeof pinnedTool>>;
  let quiz: PlacedLocation;

  beforeAll(async () => {
    tool = await pinnedTool(server, version);
    quiz = await placeLocation(server, { app: tool.appId, type: 'assessment', points: 20 });
  });

  it('creates the grade of a launch, publishes it (synced) and re-syncs the same grade on resubmission', async () => {
    const student = await launchAs(server, quiz);
    expect(student.raw['grade_passback']).toBe(true);
    const first = await call('POST', grades(), { auth: tool.auth, body: { launch_id: student.launch.id, score: 0.5, comment: 'Good start' } });
    expect(first.status).toBe(200);
    expect(first.headers.get('contract-version')).toBe(version);
    expectValid(version, 'GradeRecord', first.body);
    expect(first.body).toMatchObject({ launch_id: student.launch.id, score: 0.5, sync_status: 'synced', sync_error: null });
    expect(first.body['submitted_at']).toMatch(SUBMITTED);
    expect(first.body['synced_at']).toMatch(SUBMITTED);
    expect(String(first.body['grade_id'])).toMatch(/^grd_/);
    expect('max_score' in first.body).toBe(version === '2026-08-25');

    const second = await call('POST', grades(), {
      auth: tool.auth,
      body: { launch_id: student.launch.id, score: 0.9, activity_progress: 'Submitted', grading_progress: 'Pending' },
    });
    expect(second.status).toBe(200);
    expect(second.body['grade_id']).toBe(first.body['grade_id']);
    expect(second.body['score']).toBe(0.9);
    expect(second.body['sync_status']).toBe('synced');
    expect(String(second.body['submitted_at']) > String(first.body['submitted_at'])).toBe(true);

    const read = await call('GET', `${grades()}/${String(first.body['grade_id'])}`, { auth: tool.auth });
    expect(read.status).toBe(200);
    expectValid(version, 'GradeRecord', read.body);
    expect(read.body).toEqual(second.body);

    // The gradebook column holds the latest score (0.9 of the column's 20 points).
    const { score: mine } = await lmsScoreOf(server, quiz, student.member.id);
    expect(mine).toMatchObject({ score_given: 18, score_maximum: 20, activity_progress: 'Submitted', grading_progress: 'Pending' });
    // Each publication is in the grade history as an attempt of the member at the location (S-13).
    const history = await server.services.store.attempts.list({ appId: tool.appId, memberId: student.member.id });
    expect(history.items.map((a) => [a.score, a.status, a.sourceType, a.submitted])).toEqual(
      expect.arrayContaining([
        [0.5, 'success', 'api_key', first.body['submitted_at']],
        [0.9, 'success', 'api_key', second.body['submitted_at']],
      ]),
    );
  });

  if (version === '2026-08-25') {
    it('max_score sets the column points; without the line-item scope the grade comes back failed with its reason', async () => {
      const own = await pinnedTool(server, version);
      const placed = await placeLocation(server, { app: own.appId, type: 'assessment' });
      const student = await launchAs(server, placed);
      const ok = await call('POST', grades(), { auth: own.auth, body: { launch_id: student.launch.id, score: 0.85, max_score: 50 } });
      expect(ok.body).toMatchObject({ sync_status: 'synced', max_score: 50 });
      const { column } = await lmsScoreOf(server, placed, student.member.id);
      expect(column?.score_maximum).toBe(50);

      // A school whose LMS key withholds the line-item scope (its first token already says so, S-23).
      const withheld = await pinnedTool(server, version);
      const placed2 = await placeLocation(server, { app: withheld.appId, type: 'assessment' });
      await server.services.store.organizations.setGrantsLineItemScope(placed2.organization.id, false);
      const pupil = await launchAs(server, placed2);
      const failed = await call('POST', grades(), { auth: withheld.auth, body: { launch_id: pupil.launch.id, score: 0.5, max_score: 40 } });
      expect(failed.status).toBe(200);
      expectValid(version, 'GradeRecord', failed.body);
      expect(failed.body).toMatchObject({ sync_status: 'failed', synced_at: null, max_score: 40 });
      expect(String(failed.body['sync_error'])).toMatch(/line-item scope/);
      const read = await call('GET', `${grades()}/${String(failed.body['grade_id'])}`, { auth: withheld.auth });
      expect(read.body).toMatchObject({ sync_status: 'failed', sync_error: failed.body['sync_error'] });
      // Retried by posting the same launch again (without max_score the score scope suffices).
      const retried = await call('POST', grades(), { auth: withheld.auth, body: { launch_id: pupil.launch.id, score: 0.5 } });
      expect(retried.body).toMatchObject({ grade_id: failed.body['grade_id'], sync_status: 'synced', sync_error: null, max_score: null });
      const attempts = await server.services.store.attempts.list({ appId: withheld.appId });
      expect(attempts.items.map((a) => a.status).sort()).toEqual(['failed', 'success']);
    });
  } else {
    it('has no max_score: 422 unknown field: max_score (GAP-42)', async () => {
      const student = await launchAs(server, quiz);
      expectProblem(await call('POST', grades(), { auth: tool.auth, body: { launch_id: student.launch.id, score: 0.5, max_score: 10 } }), 422, 'unknown field: max_score', version);
      expect(await server.services.store.launchGrades.getByLaunch(student.launch.id)).toBeNull();
    });
  }

  it('answers every message of the archived error table, storing nothing', async () => {
    const student = await launchAs(server, quiz);
    const post = (body: unknown) => call('POST', grades(), { auth: tool.auth, body });
    const id = student.launch.id;
    expectProblem(await post({ launch_id: id, score: 1.5 }), 422, 'score must be between 0 and 1');
    expectProblem(await post({ launch_id: id, score: -0.1 }), 422, 'score must be between 0 and 1');
    if (version === '2026-08-25') {
      expectProblem(await post({ launch_id: id, score: 0.5, max_score: 0 }), 422, 'max_score must be greater than 0');
      expectProblem(await post({ launch_id: id, score: 0.5, max_score: -3 }), 422, 'max_score must be greater than 0');
    }
    expectProblem(await post({ launch_id: id, score: 0.5, activity_progress: 'Done' }), 422, 'activity_progress must be one of [Completed, Submitted]');
    expectProblem(await post({ launch_id: id, score: 0.5, grading_progress: 'Graded' }), 422, 'grading_progress must be one of [FullyGraded, Pending]');
    expectProblem(await post({ launch_id: id }), 422, 'score is required');
    expectProblem(await post({ launch_id: id, score: '0.5' }), 422, 'score must be a number');
    expectProblem(await post({ score: 0.5 }), 422, 'launch_id is required');
    expectProblem(await post({ launch_id: '', score: 0.5 }), 422, 'launch_id is required');
    expectProblem(await post({ launch_id: id, score: 0.5, extra: 1 }), 422, 'unknown field: extra');
    expectProblem(await post({ launch_id: 'lch_nosuchlaunch0000000000', score: 0.5 }), 404, 'Launch not found');
    expectProblem(await post({ launch_id: 'lch_\u0000', score: 0.5 }), 404, 'Launch not found');

    const page = await placeLocation(server, { app: tool.appId, type: 'content' });
    const reader = await launchAs(server, page);
    expect(reader.raw['grade_passback']).toBe(false);
    expectProblem(
      await post({ launch_id: reader.launch.id, score: 0.5 }),
      422,
      "This launch's location is not an assessment (grade passback is only allowed for assessment locations)",
    );
    const noColumn = await placeLocation(server, { app: tool.appId, type: 'assessment', lineItem: false });
    const unscored = await launchAs(server, noColumn);
    expect(unscored.raw['grade_passback']).toBe(false);
    expectProblem(await post({ launch_id: unscored.launch.id, score: 0.5 }), 422, 'Launch has no grade passback (no LMS line item)');
    expect(await server.services.store.launchGrades.getByLaunch(id)).toBeNull();
    expect(await server.services.store.launchGrades.getByLaunch(reader.launch.id)).toBeNull();
  });

  it('401 before anything else; another tool’s launch and grade look unknown (404)', async () => {
    const student = await launchAs(server, quiz);
    expectProblem(await call('POST', grades(), { body: { launch_id: student.launch.id, score: 2 }, version }), 401, 'Missing Bearer API key');
    expectProblem(await call('POST', grades(), { auth: 'Bearer ltiaas_bad', body: { score: 2 }, version }), 401, 'Invalid API key');
    expectProblem(await call('POST', grades(), { auth: 'Bearer tis_at_not_an_api_key', body: { score: 2 }, version }), 401, 'Invalid API key');
    const other = await pinnedTool(server, version);
    expectProblem(await call('POST', grades(), { auth: other.auth, body: { launch_id: student.launch.id, score: 0.5 } }), 404, 'Launch not found');
    const mine = await call('POST', grades(), { auth: tool.auth, body: { launch_id: student.launch.id, score: 0.5 } });
    expect(mine.status).toBe(200);
    expectProblem(await call('GET', `${grades()}/${String(mine.body['grade_id'])}`, { auth: other.auth }), 404, 'Grade not found');
    expectProblem(await call('GET', `${grades()}/grd_unknown`, { auth: tool.auth }), 404, 'Grade not found');
    expectProblem(await call('GET', `${grades()}/not%20an%20id`, { auth: tool.auth }), 404, 'Grade not found');
    expectProblem(await call('GET', `${grades()}/grd_unknown`, { version }), 401, 'Missing Bearer API key');
  });

  it('a Test-tab launch (in the tool’s Sandbox course): trial under 2026-08-25, unknown under 2026-08-19', async () => {
    const own = await pinnedTool(server, version);
    const placed = await placeLocation(server, { app: own.appId, type: 'assessment' });
    const sandboxCourse = await server.services.store.contexts.create({
      organizationId: placed.organization.id,
      name: 'Sandbox course',
      sandboxAppId: own.appId,
    });
    const trialPlaced = await placeLocation(server, { app: own.appId, type: 'assessment', course: { contextId: sandboxCourse.id } });
    const trial = await launchAs(server, trialPlaced);
    const res = await call('POST', grades(), { auth: own.auth, body: { launch_id: trial.launch.id, score: 0.7 } });
    const history = async () => (await server.services.store.attempts.list({ appId: own.appId })).items.length;
    if (version === '2026-08-25') {
      expect(res.status).toBe(200);
      expectValid(version, 'GradeRecord', res.body);
      expect(String(res.body['grade_id'])).toMatch(/^trial_/);
      expect(res.body).toMatchObject({ launch_id: trial.launch.id, score: 0.7, sync_status: 'synced', sync_error: null });
      expect(res.body['synced_at']).toBe(res.body['submitted_at']);
      expectProblem(await call('GET', `${grades()}/${String(res.body['grade_id'])}`, { auth: own.auth }), 404, 'Grade not found');
    } else {
      expectProblem(res, 404, 'Launch not found', version);
    }
    // Nothing written, nothing published.
    expect(await server.services.store.launchGrades.getByLaunch(trial.launch.id)).toBeNull();
    expect(await history()).toBe(0);
    const book = await readLmsGradebook(server, sandboxCourse);
    expect(book.columns.length).toBeGreaterThan(0);
    expect(book.columns.flatMap((c) => c.scores)).toEqual([]);
  });
});
