/**
 * The default publisher (`server/scores/`) against a real LMS over real HTTP: the tool's Sandbox school,
 * a deployment of the service's in-process reference LMS (decisions LTI-40, LTI-44, LTI-48), reached as any
 * school's LMS is (`ltiPlatforms`, the service's registration with it). Client-credentials tokens with a
 * signed assertion, token reuse, `max_score` with and without the line-item scope, refusals carrying the
 * LMS's answer, and unreachable LMSes (contract, Submit a score; decisions S-04, S-23, LTI-16, LTI-51).
 *
 * The publisher here is built like the service's own, but sends through `fetch` (not the platform's
 * `exchange`) so the test sees every request it makes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ltiPlatforms } from '../../../server/lti/platforms.js';
import { AGS_SCOPE } from '../../../server/lti/vocabulary.js';
import { sandboxLmsClient } from '../../../server/sandbox/lms-registration.js';
import type { LmsPlatform, Publication, Publisher } from '../../../server/scores/index.js';
import { createDefaultPublisher, LINE_ITEM_SCOPE_WITHHELD } from '../../../server/scores/index.js';
import type { OrganizationRecord } from '../../../server/store/index.js';
import { isoFromUs } from '../../../server/store/index.js';
import type { PlacedLocation, TestLaunch, TestServer, Tool } from '../harness.js';
import { createTool, launch, lmsAgsToken, lmsScoreOf, placeLocation, startServer } from '../harness.js';

let server: TestServer;
let tool: Tool;
let requests: Array<{ method: string; url: string }>;
let publisher: Publisher;

/** The school's LMS as the service reaches it, sending through `fetch` with every request seen by `seen`. */
function platformsSeenBy(seen: (url: string, init: RequestInit) => void, change: (p: LmsPlatform) => Partial<LmsPlatform> = () => ({})) {
  const platforms = ltiPlatforms(server.services.store, server.services.lti.lms);
  return async (organization: OrganizationRecord): Promise<LmsPlatform | null> => {
    const found = await platforms(organization);
    if (!found) return null;
    const { exchange: _exchange, ...platform } = found;
    const send = platform.fetch ?? ((input: string, init: RequestInit) => fetch(input, init));
    const changed = { ...platform, ...change(platform) };
    const through = changed.fetch ?? send;
    return {
      ...changed,
      fetch: (input, init) => {
        seen(input, init);
        return through(input, init);
      },
    };
  };
}

function publisherSeenBy(seen: (url: string, init: RequestInit) => void, change?: (p: LmsPlatform) => Partial<LmsPlatform>): Publisher {
  return createDefaultPublisher({
    signer: server.services.signer,
    schools: platformsSeenBy(seen, change),
  });
}

beforeAll(async () => {
  server = await startServer();
  tool = await createTool(server);
  requests = [];
  publisher = publisherSeenBy((url, init) => requests.push({ method: init.method ?? 'GET', url }));
});

afterAll(async () => {
  await server?.stop();
});

let tick = 0;
/** Strictly increasing timestamps with microseconds, as the service hands them out. */
function nextTimestamp(): string {
  tick += 1;
  return isoFromUs(Date.now() * 1000 + tick);
}

interface Course {
  placed: PlacedLocation;
  student: TestLaunch;
  student2: TestLaunch;
}

/** An assessment with its LMS column, and two students enrolled in the LMS course. */
async function course(points?: number): Promise<Course> {
  const placed = await placeLocation(server, { app: tool.app.id, type: 'assessment', ...(points !== undefined ? { points } : {}) });
  return { placed, student: await launch(server, { placed }), student2: await launch(server, { placed }) };
}

function publication(c: Course, overrides: Partial<Publication> = {}): Publication {
  return {
    app: tool.app,
    organization: c.placed.organization,
    context: c.placed.context,
    location: c.placed.location,
    placement: c.placed.placement,
    member: c.student.member,
    user: c.student.user,
    score: 0.85,
    maxScore: null,
    comment: '',
    activityProgress: 'Completed',
    gradingProgress: 'FullyGraded',
    timestamp: nextTimestamp(),
    ...overrides,
  };
}

/** The last path segment of a URL: what an LMS request was for (`token`, `scores`, a line item). */
function last(url: string): string {
  return new URL(url).pathname.split('/').pop() ?? '';
}

/** The LMS's own ID of a column, the last segment of its AGS URL. */
function lmsLineItemId(c: Course): string {
  return decodeURIComponent(last(c.placed.placement.lineItemId ?? ''));
}

describe('AGS publisher → the Sandbox LMS', () => {
  it('publishes a score scaled to the column, with its comment and timestamp', async () => {
    const c = await course(20);
    const p = publication(c, { comment: 'Good work on question 3.' });
    const outcome = await publisher.publish(p);
    expect(outcome).toEqual({ status: 'success', response: { status: 204, body: '' }, error: '' });
    expect((await lmsScoreOf(server, c.placed, c.student.member.id)).score).toMatchObject({
      user_id: c.student.user.externalId,
      score_given: 17,
      score_maximum: 20,
      comment: 'Good work on question 3.',
      activity_progress: 'Completed',
      grading_progress: 'FullyGraded',
      timestamp: p.timestamp,
    });
  });

  it('gets one token and reuses it for later publications', async () => {
    const c = await course();
    // Another publisher, so no token of an earlier test is cached.
    const seen: string[] = [];
    const fresh = publisherSeenBy((url) => seen.push(url));
    await fresh.publish(publication(c, { score: 0.5 }));
    await fresh.publish(publication(c, { score: 0.6 }));
    await Promise.all([0.1, 0.2, 0.3].map((score) => fresh.publish(publication(c, { member: c.student2.member, user: c.student2.user, score }))));
    expect(seen.filter((u) => last(u) === 'token')).toHaveLength(1);
    expect(seen.filter((u) => last(u) === 'scores')).toHaveLength(5);
  });

  it('sets the column points from max_score before publishing when the line-item scope is granted', async () => {
    const c = await course(20);
    const outcome = await publisher.publish(publication(c, { score: 0.85, maxScore: 50 }));
    expect(outcome).toMatchObject({ status: 'success', error: '' });
    const { column, score } = await lmsScoreOf(server, c.placed, c.student.member.id);
    expect(column?.score_maximum).toBe(50);
    expect(score).toMatchObject({ score_given: 42.5, score_maximum: 50 });
  });

  it('fails max_score for a school recorded as withholding the line-item scope, asking nothing and publishing nothing', async () => {
    const other = await createTool(server);
    const placed = await placeLocation(server, { app: other.app.id, type: 'assessment', points: 20 });
    const student = await launch(server, { placed });
    const school = await server.services.store.organizations.setGrantsLineItemScope(placed.organization.id, false);
    const c: Course = { placed: { ...placed, organization: school ?? placed.organization }, student, student2: student };
    requests.length = 0;
    const outcome = await publisher.publish(publication(c, { app: other.app, maxScore: 50 }));
    expect(outcome).toEqual({ status: 'failed', response: null, error: LINE_ITEM_SCOPE_WITHHELD });
    expect(requests).toEqual([]);
    const { column, score } = await lmsScoreOf(server, placed, student.member.id);
    expect(column?.score_maximum).toBe(20);
    expect(score).toBeNull();
    // Without max_score the score scope alone is enough.
    const plain = await publisher.publish(publication(c, { app: other.app, score: 0.5 }));
    expect(plain.status).toBe('success');
    expect((await lmsScoreOf(server, placed, student.member.id)).score).toMatchObject({ score_given: 10, score_maximum: 20 });
  });

  it("fails max_score when the LMS's developer key withholds the line-item scope (its token endpoint refuses it)", async () => {
    const c = await course(20);
    const lms = sandboxLmsClient(server.services);
    const registration = (await server.services.store.lti.findGradeService(c.placed.organization.issuer, c.placed.organization.client))!;
    await lms.setLineItemScope(registration.clientId, false);
    try {
      const bodies: string[] = [];
      const fresh = publisherSeenBy((url, init) => {
        if (last(url) === 'token') bodies.push(String(init.body));
      });
      const outcome = await fresh.publish(publication(c, { maxScore: 50 }));
      expect(outcome).toEqual({ status: 'failed', response: null, error: LINE_ITEM_SCOPE_WITHHELD });
      expect(bodies.map((b) => new URLSearchParams(b).get('scope'))).toEqual([`${AGS_SCOPE.score} ${AGS_SCOPE.lineItem}`]);
      const { column, score } = await lmsScoreOf(server, c.placed, c.student.member.id);
      expect(column?.score_maximum).toBe(20);
      expect(score).toBeNull();
      expect((await fresh.publish(publication(c, { score: 0.5 }))).status).toBe('success');
    } finally {
      await lms.setLineItemScope(registration.clientId, true);
    }
  });

  it("reports an LMS refusal (a stale timestamp) with the LMS's answer; the column keeps the later score", async () => {
    const c = await course();
    const later = nextTimestamp();
    expect((await publisher.publish(publication(c, { score: 0.9, timestamp: later }))).status).toBe('success');
    const earlier = isoFromUs(Date.now() * 1000 - 60_000_000);
    const outcome = await publisher.publish(publication(c, { score: 0.1, timestamp: earlier }));
    expect(outcome.status).toBe('failed');
    expect(outcome.response?.status).toBe(409);
    expect(JSON.parse(outcome.response?.body ?? '{}')).toMatchObject({ error: 'conflict' });
    expect(outcome.error).toBe(
      `the LMS refused the score (HTTP 409): conflict: line item ${lmsLineItemId(c)} already holds a score for ${c.student.user.externalId} with a timestamp as new or newer`,
    );
    expect((await lmsScoreOf(server, c.placed, c.student.member.id)).score).toMatchObject({ score_given: 90, timestamp: later });
  });

  it('reports a column the gradebook refuses scores for with its status and answer', async () => {
    const c = await course();
    await sandboxLmsClient(server.services).refuseScores(lmsLineItemId(c), 503);
    const outcome = await publisher.publish(publication(c));
    expect(outcome).toMatchObject({ status: 'failed', response: { status: 503 } });
    expect(outcome.error).toBe(`the LMS refused the score (HTTP 503): score_refused: the gradebook refuses scores for line item ${lmsLineItemId(c)}`);
  });

  it('reports a deleted column as a refusal (404)', async () => {
    const c = await course();
    const { token, fetch: send } = await lmsAgsToken(server, tool.app.id, [AGS_SCOPE.lineItem]);
    expect((await send(c.placed.placement.lineItemId ?? '', { method: 'DELETE', headers: { Authorization: `Bearer ${token}` } })).status).toBe(204);
    const outcome = await publisher.publish(publication(c));
    expect(outcome.status).toBe('failed');
    expect(outcome.response?.status).toBe(404);
    expect(outcome.error).toBe(`the LMS refused the score (HTTP 404): not_found: line item ${lmsLineItemId(c)} not found in course ${c.placed.context.externalId}`);
  });

  it('fails a placement without a line item without any HTTP call', async () => {
    const c = await course();
    requests.length = 0;
    const outcome = await publisher.publish(publication(c, { placement: { ...c.placed.placement, lineItemId: null } }));
    expect(outcome).toEqual({
      status: 'failed',
      response: null,
      error: `location ${c.placed.location.id} has no line item in the LMS gradebook of context ${c.placed.context.id}`,
    });
    expect(requests).toHaveLength(0);
  });

  it('fails, once, when the LMS cannot be reached', async () => {
    const c = await course();
    const calls: string[] = [];
    const offline = publisherSeenBy(
      (url) => calls.push(url),
      // A port nothing listens on: the connection is refused.
      (p) => ({ transport: (url) => p.transport(url).replace(/^http:\/\/127\.0\.0\.1:\d+/, 'http://127.0.0.1:9'), fetch: (input, init) => fetch(input, init) }),
    );
    const outcome = await offline.publish(publication(c));
    expect(outcome.status).toBe('failed');
    expect(outcome.response).toBeNull();
    expect(outcome.error).toMatch(/^the LMS token endpoint could not be reached at http:\/\/127\.0\.0\.1:\d+: /);
    expect(calls).toEqual([expect.stringMatching(/^http:\/\/127\.0\.0\.1:9\/.*\/token$/)]);
  });

  it('gets a fresh token after the LMS forgets a cached one, without retrying further', async () => {
    const c = await course();
    // A publisher holding one cached token (the shared one may hold a second, with the line-item scope).
    const seen: Array<{ method: string; url: string }> = [];
    const fresh = publisherSeenBy((url, init) => seen.push({ method: init.method ?? 'GET', url }));
    expect((await fresh.publish(publication(c))).status).toBe('success');
    await (await server.services.sandboxLms.ready()).platform.db.run('DELETE FROM lms_access_tokens');
    seen.length = 0;
    const again = await fresh.publish(publication(c));
    expect(again.status, JSON.stringify(again)).toBe('success');
    expect(seen.map((r) => `${r.method} ${last(r.url)}`)).toEqual(['POST scores', 'POST token', 'POST scores']);
  });

  it('drops every cached token of the client after a 401, so the retry asks for a fresh one and succeeds', async () => {
    const c = await course(20);
    // Two cached tokens of one client: the score scope alone, and the score plus line-item scopes.
    const seen: Array<{ method: string; url: string }> = [];
    const fresh = publisherSeenBy((url, init) => seen.push({ method: init.method ?? 'GET', url }));
    expect((await fresh.publish(publication(c))).status).toBe('success');
    expect((await fresh.publish(publication(c, { maxScore: 20 }))).status).toBe('success');
    expect(seen.filter((r) => last(r.url) === 'token')).toHaveLength(2);
    await (await server.services.sandboxLms.ready()).platform.db.run('DELETE FROM lms_access_tokens');
    seen.length = 0;
    const again = await fresh.publish(publication(c));
    expect(again.status, JSON.stringify(again)).toBe('success');
    expect(seen.map((r) => `${r.method} ${last(r.url)}`)).toEqual(['POST scores', 'POST token', 'POST scores']);
  });

  it('leaves a school without a grade service failed', async () => {
    const c = await course();
    const school = await server.services.store.organizations.upsert({ issuer: 'https://lms.example.edu', client: 'c1', deployment: 'd1', title: 'Elsewhere' });
    const outcome = await publisher.publish(publication(c, { organization: school }));
    expect(outcome).toEqual({
      status: 'failed',
      response: null,
      error: `the LMS of school ${school.id} has no grade service registered with this service`,
    });
  });

  it('asks for the line-item scope only when max_score is sent', async () => {
    const c = await course();
    const bodies: string[] = [];
    const fresh = publisherSeenBy((url, init) => {
      if (last(url) === 'token') bodies.push(String(init.body));
    });
    await fresh.publish(publication(c));
    await fresh.publish(publication(c, { maxScore: 30 }));
    await fresh.publish(publication(c, { score: 0.2 }));
    expect(bodies.map((b) => new URLSearchParams(b).get('scope'))).toEqual([AGS_SCOPE.score, `${AGS_SCOPE.score} ${AGS_SCOPE.lineItem}`]);
  });
});
