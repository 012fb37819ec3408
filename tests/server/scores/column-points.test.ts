/**
 * Scores read as the teacher will see them (decision H-03): without `max_score` the column is left as
 * set, so a score is published against the column's current points, the last `max_score` the service
 * set included: `{score: 0.85, max_score: 50}` then `{score: 0.5}` shows 25 of 50, not 50 of 100.
 * Through the dashboard's Sandbox over HTTP (picker, placement, the Grades tab), and under the archived
 * 2026-08-25 `POST /v1/grades`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lmsScoreOf, placeLocation, startServer, type TestServer } from '../harness.js';
import { answer, startToolServer, type ToolServer } from '../outbound/fixtures.js';
import { caller, createBuilder, platformToken, register, type Builder } from '../dashboard/helpers.js';
import { call, launchAs, pinnedTool } from '../archived/helpers.js';

let server: TestServer;
let tool: ToolServer;
let builder: Builder;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true, locationsTimeoutMs: 2000, provisionTimeoutMs: 2000 } });
  tool = await startToolServer();
  builder = await createBuilder(server, caller(server, platformToken(server)), 'Points Builder');
  tool.route('/locations', answer.json({ locations: { 'quiz-1': { type: 'assessment', label: 'Week 1 quiz', points: 20 } } }));
  tool.route('/launch', answer.text('<!DOCTYPE html><title>Quiz</title>', 200, 'text/html'));
  tool.route('/provision', answer.provisioning());
});
afterAll(async () => {
  await tool?.close();
  await server?.stop();
});

interface Column {
  line_item_id: string;
  score_maximum: number;
  scores: Array<{ member_id: string; score_given: number; score_maximum: number }>;
}

async function sandboxQuiz(): Promise<{ appId: string; apiKey: string; scoreUrl: string; lineItemId: string; memberId: string }> {
  const { appId, apiKey } = await register(builder);
  const set = await builder.call('PATCH', `/apps/${appId}`, {
    callback_url: tool.url('/launch'),
    provision_url: tool.url('/provision'),
    locations_url: tool.url('/locations'),
  });
  expect(set.status).toBe(200);
  expect((await builder.call('POST', `/apps/${appId}/sandbox/picker`)).status).toBe(200);
  const placed = await builder.call<{ line_item_id: string; context_id: string; location: { id: string } }>('POST', `/apps/${appId}/sandbox/placements`, {
    extid: 'quiz-1',
  });
  expect(placed.status).toBe(201);
  const sandbox = await builder.call<{ users: Record<string, { member_id: string }> }>('GET', `/apps/${appId}/sandbox`);
  const memberId = sandbox.body.users['student_1']?.member_id ?? '';
  const { context_id: contextId, location } = placed.body;
  return {
    appId,
    apiKey: apiKey as string,
    lineItemId: placed.body.line_item_id,
    memberId,
    scoreUrl: `${server.url}/v1/contexts/${contextId}/apps/${appId}/locations/${location.id}/members/${memberId}/scores`,
  };
}

async function score(url: string, apiKey: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, { method: 'POST', headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

async function gradesTab(appId: string, lineItemId: string, memberId: string): Promise<{ column: Column; given: Column['scores'][number] | undefined }> {
  const grades = await builder.call<{ columns: Column[] }>('GET', `/apps/${appId}/sandbox/grades`);
  expect(grades.status).toBe(200);
  const column = grades.body.columns.find((c) => c.line_item_id === lineItemId);
  if (!column) throw new Error('no column');
  return { column, given: column.scores.find((s) => s.member_id === memberId) };
}

describe('a score without max_score is published against the column as it stands (H-03)', () => {
  it('the location points when the service never set any: 0.5 of a 20-point column is 10 of 20', async () => {
    const quiz = await sandboxQuiz();
    expect((await score(quiz.scoreUrl, quiz.apiKey, { score: 0.5 }))['status']).toBe('success');
    const { column, given } = await gradesTab(quiz.appId, quiz.lineItemId, quiz.memberId);
    expect(column.score_maximum).toBe(20);
    expect(given).toMatchObject({ score_given: 10, score_maximum: 20 });
  });

  it('{score: 0.85, max_score: 50} then {score: 0.5}: 42.5 of 50, then 25 of 50', async () => {
    const quiz = await sandboxQuiz();
    expect(await score(quiz.scoreUrl, quiz.apiKey, { score: 0.85, max_score: 50 })).toMatchObject({ status: 'success', max_score: 50 });
    let seen = await gradesTab(quiz.appId, quiz.lineItemId, quiz.memberId);
    expect(seen.column.score_maximum).toBe(50);
    expect(seen.given).toMatchObject({ score_given: 42.5, score_maximum: 50 });

    expect(await score(quiz.scoreUrl, quiz.apiKey, { score: 0.5 })).toMatchObject({ status: 'success', max_score: null });
    seen = await gradesTab(quiz.appId, quiz.lineItemId, quiz.memberId);
    expect(seen.column.score_maximum).toBe(50);
    expect(seen.given).toMatchObject({ score_given: 25, score_maximum: 50 });

    // A later max_score moves the column again, and the next score without one follows it.
    await score(quiz.scoreUrl, quiz.apiKey, { score: 1, max_score: 8 });
    await score(quiz.scoreUrl, quiz.apiKey, { score: 0.25 });
    seen = await gradesTab(quiz.appId, quiz.lineItemId, quiz.memberId);
    expect(seen.column.score_maximum).toBe(8);
    expect(seen.given).toMatchObject({ score_given: 2, score_maximum: 8 });
  });

  it('a max_score that failed to publish sets nothing: the next score keeps the column points', async () => {
    const quiz = await sandboxQuiz();
    const sandbox = await builder.call<{ organization: { id: string } }>('GET', `/apps/${quiz.appId}/sandbox`);
    expect((await builder.call('PUT', `/apps/${quiz.appId}/sandbox/school`, { grants_line_item_scope: false })).status).toBe(200);
    expect(sandbox.status).toBe(200);
    expect((await score(quiz.scoreUrl, quiz.apiKey, { score: 0.85, max_score: 50 }))['status']).toBe('failed');
    await score(quiz.scoreUrl, quiz.apiKey, { score: 0.5 });
    const seen = await gradesTab(quiz.appId, quiz.lineItemId, quiz.memberId);
    expect(seen.column.score_maximum).toBe(20);
    expect(seen.given).toMatchObject({ score_given: 10, score_maximum: 20 });
  });
});

describe('the archived 2026-08-25 POST /v1/grades follows the same rule (H-03)', () => {
  it('max_score 50, then a grade without it: 25 of 50 in the gradebook', async () => {
    const pinned = await pinnedTool(server, '2026-08-25');
    const placed = await placeLocation(server, { app: pinned.appId, type: 'assessment', points: 20 });
    const student = await launchAs(server, placed);
    const grades = `${server.url}/v1/grades`;
    const first = await call('POST', grades, { auth: pinned.auth, body: { launch_id: student.launch.id, score: 0.85, max_score: 50 } });
    expect(first.body).toMatchObject({ sync_status: 'synced', max_score: 50 });
    const second = await call('POST', grades, { auth: pinned.auth, body: { launch_id: student.launch.id, score: 0.5 } });
    expect(second.body).toMatchObject({ sync_status: 'synced', max_score: null });
    // The LMS's gradebook (the tool's Sandbox school is a deployment of the Sandbox's LMS).
    const { column, score } = await lmsScoreOf(server, placed, student.member.id);
    expect(column?.score_maximum).toBe(50);
    expect(score).toMatchObject({ score_given: 25, score_maximum: 50 });
  });
});
