/**
 * Sandbox courses made before the move onto the Sandbox LMS (decisions LTI-53 to LTI-56): a database
 * written as the S-12 code wrote it (the S-12 Sandbox school `{origin}/sandbox-lms`, its trial course
 * `sandbox-trial-course` with the five trial users, a copy, an assessment placed with an S-12 gradebook
 * column, a score in that column, rows under both courses) is moved into the tool's Sandbox LMS school at
 * the Sandbox's first need: the course keeps its ID and people, launches through the LMS, its rows are
 * read under the same context, the old score shows in the Grades tab, and a new grade goes to the LMS.
 * Two instances racing for the first need move everything once. Both stores (the `postgres` project).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Services } from '../../../server/http/services.js';
import { ensureSandbox } from '../../../server/sandbox/index.js';
import { sandboxLmsClient } from '../../../server/sandbox/lms-registration.js';
import { movedCourseId } from '../../../server/sandbox/older-courses.js';
import { isoFromUs } from '../../../server/store/index.js';
import type { ContextRecord, PlacementRecord, Store } from '../../../server/store/index.js';
import type { TestServer } from '../harness.js';
import { openTestStore, startServer } from '../harness.js';
import type { RecordedRequest, ToolServer } from '../outbound/fixtures.js';
import { answer, startToolServer, verifyToken } from '../outbound/fixtures.js';
import type { Builder } from '../dashboard/helpers.js';
import { caller, createBuilder, platformToken } from '../dashboard/helpers.js';
import { launchPageOf } from './launch-chain.js';

type Json = Record<string, unknown>;

const ROLES = ['instructor', 'assistant', 'manager', 'student_1', 'student_2'] as const;
const GROUPS = { instructor: 'instructor', assistant: 'assistant', manager: 'manager', student_1: 'student', student_2: 'student' } as const;

let server: TestServer;
let tool: ToolServer;
let builder: Builder;
let twinStore: Store | null = null;

beforeAll(async () => {
  server = await startServer({ config: { allowLoopbackTools: true } });
  tool = await startToolServer();
  tool.route('/launch', answer.text('<!DOCTYPE html><title>Quiz</title>', 200, 'text/html'));
  builder = await createBuilder(server, caller(server, platformToken(server)), 'Old Sandbox Builder');
});
afterAll(async () => {
  await twinStore?.close();
  await tool?.close();
  await server?.stop();
});

interface OldSandbox {
  appId: string;
  trial: ContextRecord;
  copy: ContextRecord;
  placement: PlacementRecord;
  people: Record<(typeof ROLES)[number], { userId: string; memberId: string }>;
  scoreTimestamp: string;
}

/** A tool's Sandbox as the S-12 code left it in the store, before any need of this process. */
async function oldSandbox(): Promise<OldSandbox> {
  const { store } = server.services;
  const { app } = await store.apps.create({ name: 'Old quiz tool', hosting: 'self_hosted', homeLocation: false, builderId: builder.id });
  await store.apps.setStatus(app.id, 'active');
  await store.apps.update(app.id, { callbackUrl: tool.url('/launch') });
  const client = `sandbox-${app.id}`;
  const school = await store.organizations.upsert({ issuer: `${new URL(server.url).origin}/sandbox-lms`, client, deployment: client, title: 'Sandbox School' });
  const trial = await store.contexts.create({ organizationId: school.id, externalId: 'sandbox-trial-course', name: 'Sandbox course', label: 'SANDBOX-2026F', sandboxAppId: app.id });
  const copy = await store.contexts.create({ organizationId: school.id, name: 'Sandbox course', label: 'SANDBOX-2027S', parentContextId: trial.id, sandboxAppId: app.id });
  const people = {} as OldSandbox['people'];
  for (const role of ROLES) {
    const user = await store.users.upsert({ organizationId: school.id, externalId: `sandbox-${role}`, givenName: role, familyName: 'Trial', fullName: `${role} Trial`, email: `${role}@sandbox.example.org` });
    const member = await store.members.upsert({ contextId: trial.id, userId: user.id, groups: [GROUPS[role]] });
    await store.members.upsert({ contextId: copy.id, userId: user.id, groups: [GROUPS[role]] });
    people[role] = { userId: user.id, memberId: member.id };
  }
  const [location] = await store.locations.syncServed(app.id, [{ extid: 'quiz-old', type: 'assessment', label: 'Old quiz', points: 10 }]);
  if (!location) throw new Error('no location');
  let placement = await store.placements.create({
    appId: app.id,
    contextId: trial.id,
    locationId: location.id,
    entry: { extid: 'quiz-old', type: 'assessment', label: 'Old quiz', description: null, points: 10 },
    resourceLink: `rl_old_${app.id}`,
  });
  // The S-12 column, as `createLineItem` made it for an assessment placement.
  const column = await store.gradebook.createLineItem({
    id: `lit_${app.id.slice(4)}`,
    contextId: trial.id,
    label: 'Old quiz (week 1)',
    scoreMaximum: 10,
    resourceLink: placement.resourceLink,
    placementId: placement.id,
    resourceId: location.id,
  });
  placement = (await store.placements.setLineItem(placement.id, column.id)) ?? placement;
  await store.provisioning.markProvisioned({ appId: app.id, contextId: trial.id });
  await store.provisioning.markProvisioned({ appId: app.id, contextId: trial.id, locationId: location.id });
  const timestampUs = Date.parse('2026-10-01T08:00:00Z') * 1000 + 123456;
  await store.gradebook.putScore({
    lineItemId: column.id,
    userId: people.student_1.userId,
    scoreGiven: 7,
    scoreMaximum: 10,
    comment: 'Kept from S-12',
    activityProgress: 'Completed',
    gradingProgress: 'FullyGraded',
    released: true,
    timestampUs,
  });
  // Posted first, without a comment: the Grades tab still lists the trial users in role order.
  await store.gradebook.putScore({
    lineItemId: column.id,
    userId: people.student_2.userId,
    scoreGiven: 4,
    scoreMaximum: 10,
    activityProgress: 'Submitted',
    gradingProgress: 'Pending',
    released: true,
    timestampUs: timestampUs - 5_000_000,
  });
  await store.rows.putRow({ appId: app.id, contextId: trial.id, kind: 'member', memberId: people.student_1.memberId }, { answers: [3, 1] }, { maxBytes: 65536 });
  await store.rows.putRow({ appId: app.id, contextId: copy.id, kind: 'context' }, { unit: 'copy' }, { maxBytes: 65536 });
  return { appId: app.id, trial, copy, placement, people, scoreTimestamp: isoFromUs(timestampUs) };
}

describe('older Sandbox courses at first need', () => {
  it('move into the Sandbox LMS: same course, people and rows; launches and grades through the LMS', async () => {
    const old = await oldSandbox();
    const appId = old.appId;

    // Two instances on one store race for the first need (the twin has its own store connection and
    // process memory): one trial course, the old one, and each record moved once.
    twinStore = await openTestStore(server.dataDir);
    const twin: Services = { ...server.services, store: twinStore, sandboxLms: Object.create(server.services.sandboxLms) as Services['sandboxLms'] };
    const [mine, theirs] = await Promise.all([ensureSandbox(server.services, appId), ensureSandbox(twin, appId)]);
    expect(mine.trial.id).toBe(old.trial.id);
    expect(theirs.trial.id).toBe(old.trial.id);
    expect(mine.trial.externalId).toBe(`sandbox-${appId}-trial`);

    const sandbox = await builder.call<Json & { users: Record<string, { member_id: string; user_id: string }>; copies: Json[]; placements: Json[] }>('GET', `/apps/${appId}/sandbox`);
    expect(sandbox.status).toBe(200);
    expect(sandbox.body['context']).toBe(old.trial.id);
    expect(sandbox.body['organization']).toMatchObject({ issuer: `${server.url}/lms`, deployment: `sandbox-${appId}` });
    for (const role of ROLES) expect(sandbox.body.users[role]).toMatchObject({ member_id: old.people[role].memberId, user_id: old.people[role].userId });
    expect(sandbox.body.copies.map((c) => c['context'])).toEqual([old.copy.id]);
    expect(sandbox.body.placements).toHaveLength(1);
    const placed = sandbox.body.placements[0] as Json;
    expect(placed).toMatchObject({ id: old.placement.id, resource_link: old.placement.resourceLink });
    expect(String(placed['line_item_id'])).toMatch(new RegExp(`^${server.url}/lms/`));

    // The copy is an LMS course copy of the trial course, under an ID of the tool's.
    const copy = await server.services.store.contexts.get(old.copy.id);
    expect(copy?.externalId).toBe(movedCourseId(appId, old.copy.id));
    const lmsCopy = await sandboxLmsClient(server.services).course(movedCourseId(appId, old.copy.id));
    expect(lmsCopy.history).toContain(`sandbox-${appId}-trial`);
    expect(lmsCopy.enrolments.map((e) => e.sub).sort()).toEqual(ROLES.map((r) => `sandbox-${r}`).sort());
    expect(await server.services.store.rows.getRow({ appId, contextId: old.copy.id, kind: 'context' })).toBe('{"unit":"copy"}');

    // The old score, carried into the LMS's gradebook, in the Grades tab.
    const before = await builder.call<{ context_id: string; columns: Array<Json & { scores: Json[] }> }>('GET', `/apps/${appId}/sandbox/grades`);
    expect(before.status).toBe(200);
    expect(before.body.context_id).toBe(old.trial.id);
    expect(before.body.columns).toHaveLength(1);
    expect(before.body.columns[0]).toMatchObject({ line_item_id: placed['line_item_id'], placement_id: old.placement.id, label: 'Old quiz (week 1)', score_maximum: 10, grades_released: true });
    expect(before.body.columns[0]?.scores).toEqual([
      expect.objectContaining({ role: 'student_1', member_id: old.people.student_1.memberId, score_given: 7, score_maximum: 10, comment: 'Kept from S-12', timestamp: old.scoreTimestamp }),
      expect.objectContaining({ role: 'student_2', member_id: old.people.student_2.memberId, score_given: 4, comment: null, activity_progress: 'Submitted', grading_progress: 'Pending' }),
    ]);

    // A student's launch through the LMS lands in the same course, as the same member.
    const link = await builder.call<{ launch_url: string }>('POST', `/apps/${appId}/sandbox/placements/${old.placement.id}/launches`, { as: 'student_1' });
    expect(link.status).toBe(201);
    expect(link.body.launch_url).toMatch(new RegExp(`^${server.url}/lms/launch/`));
    const page = await fetch(await launchPageOf(link.body.launch_url));
    const html = await page.text();
    expect(page.status, html).toBe(200);
    const action = /<form id="launch" method="post" action="([^"]+)"/.exec(html)?.[1] ?? '';
    const launchData = /name="launch_data" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const sent = tool.to('/launch').length;
    const posted = await fetch(action.replace(/&amp;/g, '&'), { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ launch_data: launchData }).toString() });
    expect(posted.status).toBe(200);
    const claims = await verifyToken(server, (tool.to('/launch')[sent] as RecordedRequest).form.get('launch_data') ?? '', appId);
    expect(claims).toMatchObject({ context: old.trial.id, user: { member: old.people.student_1.memberId } });
    const apiToken = (claims['api'] as { token: string }).token;

    // The row written before the move, read by the tool under the same context and member.
    const row = await fetch((claims['storage'] as { member: string }).member, { headers: { Authorization: `Bearer ${apiToken}` } });
    expect(row.status).toBe(200);
    expect(await row.json()).toEqual({ answers: [3, 1] });

    // A new grade goes to the LMS's gradebook.
    const scored = await fetch((claims['grade'] as { submit: string }).submit, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ score: 0.9 }),
    });
    expect(scored.status).toBe(200);
    const attempt = (await scored.json()) as Json;
    expect(attempt['status']).toBe('success');
    const after = await builder.call<{ columns: Array<Json & { scores: Json[] }> }>('GET', `/apps/${appId}/sandbox/grades`);
    expect(after.body.columns).toHaveLength(1);
    expect(after.body.columns[0]?.scores).toEqual([
      expect.objectContaining({ role: 'student_1', score_given: 9, score_maximum: 10, timestamp: attempt['submitted'] }),
      expect.objectContaining({ role: 'student_2', score_given: 4 }),
    ]);
    const book = await sandboxLmsClient(server.services).gradebook(`sandbox-${appId}-trial`);
    expect(book.columns.map((c) => c.scores.map((s) => [s.userId, s.scoreGiven]).sort())).toEqual([[['sandbox-student_1', 9], ['sandbox-student_2', 4]]]);

    // The S-12 columns were read once: nothing of the course is left in the S-12 gradebook.
    expect(await server.services.store.gradebook.listLineItems(old.trial.id)).toEqual([]);
  });

  it('moves as a copy when the LMS school has its trial course already, its members joined to the school\'s people', async () => {
    const { store } = server.services;
    const registered = await builder.call<{ app: { id: string } }>('POST', '/apps', { name: 'Used since the move', hosting: 'self_hosted' });
    expect(registered.status).toBe(201);
    const appId = registered.body.app.id;
    const home = await ensureSandbox(server.services, appId);
    // A course of the S-12 school this process has not seen (another instance's, before the upgrade).
    const client = `sandbox-${appId}`;
    const school = await store.organizations.upsert({ issuer: 'https://old.example.edu/sandbox-lms', client, deployment: client, title: 'Sandbox School' });
    const older = await store.contexts.create({ organizationId: school.id, externalId: 'sandbox-trial-course', name: 'Older course', label: 'SANDBOX-2025F', sandboxAppId: appId });
    const members: Record<string, string> = {};
    for (const role of ROLES) {
      const user = await store.users.upsert({ organizationId: school.id, externalId: `sandbox-${role}` });
      members[role] = (await store.members.upsert({ contextId: older.id, userId: user.id, groups: [GROUPS[role]] })).id;
    }
    await store.rows.putRow({ appId, contextId: older.id, kind: 'member', memberId: members['student_2'] ?? '' }, { kept: true }, { maxBytes: 65536 });

    // The next process's first need.
    const restarted: Services = { ...server.services, sandboxLms: Object.create(server.services.sandboxLms) as Services['sandboxLms'] };
    const again = await ensureSandbox(restarted, appId);
    expect(again.trial.id).toBe(home.trial.id);
    const moved = await store.contexts.get(older.id);
    expect(moved).toMatchObject({ organizationId: home.school.id, externalId: movedCourseId(appId, older.id), sandboxAppId: appId });
    const sandbox = await builder.call<{ copies: Array<{ context: string; users: Record<string, { member_id: string; user_id: string }> }>; users: Record<string, { user_id: string }> }>('GET', `/apps/${appId}/sandbox`);
    expect(sandbox.body.copies.map((c) => c.context)).toEqual([older.id]);
    for (const role of ROLES) {
      expect(sandbox.body.copies[0]?.users[role]?.member_id).toBe(members[role]);
      expect(sandbox.body.copies[0]?.users[role]?.user_id).toBe(sandbox.body.users[role]?.user_id);
    }
    expect(await store.rows.getRow({ appId, contextId: older.id, kind: 'member', memberId: members['student_2'] ?? '' })).toBe('{"kept":true}');
    const lmsCourse = await sandboxLmsClient(server.services).course(movedCourseId(appId, older.id));
    expect(lmsCourse).toMatchObject({ deployment_id: `sandbox-${appId}`, title: 'Older course', label: 'SANDBOX-2025F' });
  });
});
