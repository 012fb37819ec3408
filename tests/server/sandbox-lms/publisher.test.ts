/**
 * The default publisher against the Sandbox LMS over real HTTP: client-credentials tokens with a signed
 * assertion, token caching, `max_score` with and without the line-item scope, refusals and unreachable
 * LMSes (contract, Submit a score; decisions S-04, S-12).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGS_SCOPES } from '../../../server/sandbox-lms/school.js';
import { createDefaultPublisher, LINE_ITEM_SCOPE_WITHHELD } from '../../../server/scores/index.js';
import type { Publication, Publisher } from '../../../server/scores/index.js';
import { isoFromUs } from '../../../server/store/index.js';
import type { LmsServer, SandboxCourse } from './lms-fixture.js';
import { sandboxCourse, startLmsServer } from './lms-fixture.js';

let lms: LmsServer;
let requests: Array<{ method: string; url: string }>;
let publisher: Publisher;

beforeAll(async () => {
  lms = await startLmsServer();
  requests = [];
  publisher = createDefaultPublisher({
    signer: lms.signer,
    publicUrl: () => lms.config.publicUrl,
    clock: lms.clock,
    fetch: (input, init) => {
      requests.push({ method: init.method ?? 'GET', url: input });
      return fetch(input, init);
    },
  });
});

afterAll(async () => {
  await lms.stop();
});

let tick = 0;
/** Strictly increasing timestamps with microseconds, as the service hands them out. */
function nextTimestamp(): string {
  tick += 1;
  return isoFromUs(Date.now() * 1000 + tick);
}

function publication(c: SandboxCourse, overrides: Partial<Publication> = {}): Publication {
  return {
    app: c.app,
    organization: c.school,
    context: c.context,
    location: c.location,
    placement: c.placement,
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

describe('AGS publisher → Sandbox LMS', () => {
  it('publishes a score scaled to the column, with its comment and timestamp', async () => {
    const c = await sandboxCourse(lms, 20);
    const p = publication(c, { comment: 'Good work on question 3.' });
    const outcome = await publisher.publish(p);
    expect(outcome).toEqual({ status: 'success', response: { status: 204, body: '' }, error: '' });
    const stored = await lms.store.gradebook.getScore(c.lineItem.id, c.student.user.id);
    expect(stored).toMatchObject({
      scoreGiven: 17,
      scoreMaximum: 20,
      comment: 'Good work on question 3.',
      activityProgress: 'Completed',
      gradingProgress: 'FullyGraded',
      timestamp: p.timestamp,
    });
  });

  it('gets one token and reuses it for later publications', async () => {
    const c = await sandboxCourse(lms);
    requests.length = 0;
    await publisher.publish(publication(c, { score: 0.5 }));
    await publisher.publish(publication(c, { score: 0.6 }));
    await Promise.all([0.1, 0.2, 0.3].map((score) => publisher.publish(publication(c, { member: c.student2.member, user: c.student2.user, score }))));
    const tokenCalls = requests.filter((r) => r.url.endsWith('/sandbox-lms/token'));
    expect(tokenCalls).toHaveLength(1);
    expect(requests.filter((r) => r.url.endsWith('/scores'))).toHaveLength(5);
  });

  it('sets the column points from max_score before publishing when the line-item scope is granted', async () => {
    const c = await sandboxCourse(lms, 20);
    const outcome = await publisher.publish(publication(c, { score: 0.85, maxScore: 50 }));
    expect(outcome).toMatchObject({ status: 'success', error: '' });
    expect((await lms.store.gradebook.getLineItem(c.lineItem.id))?.scoreMaximum).toBe(50);
    expect(await lms.store.gradebook.getScore(c.lineItem.id, c.student.user.id)).toMatchObject({ scoreGiven: 42.5, scoreMaximum: 50 });
  });

  it('fails max_score without the line-item scope and publishes nothing', async () => {
    const c = await sandboxCourse(lms, 20);
    await lms.store.organizations.setGrantsLineItemScope(c.school.id, false);
    const outcome = await publisher.publish(publication(c, { maxScore: 50 }));
    expect(outcome).toEqual({ status: 'failed', response: null, error: LINE_ITEM_SCOPE_WITHHELD });
    expect((await lms.store.gradebook.getLineItem(c.lineItem.id))?.scoreMaximum).toBe(20);
    expect(await lms.store.gradebook.getScore(c.lineItem.id, c.student.user.id)).toBeNull();
    // Without max_score the score scope alone is enough.
    const plain = await publisher.publish(publication(c, { score: 0.5 }));
    expect(plain.status).toBe('success');
    expect(await lms.store.gradebook.getScore(c.lineItem.id, c.student.user.id)).toMatchObject({ scoreGiven: 10, scoreMaximum: 20 });
  });

  it('reports an LMS refusal (stale timestamp) with the LMS answer', async () => {
    const c = await sandboxCourse(lms);
    const later = nextTimestamp();
    expect((await publisher.publish(publication(c, { timestamp: later }))).status).toBe('success');
    const earlier = isoFromUs(Date.now() * 1000 - 60_000_000);
    const outcome = await publisher.publish(publication(c, { timestamp: earlier }));
    expect(outcome.status).toBe('failed');
    expect(outcome.response?.status).toBe(409);
    expect(JSON.parse(outcome.response?.body ?? '{}')).toMatchObject({ status: 409, code: 'stale_timestamp' });
    expect(outcome.error).toBe(
      `the LMS refused the score (HTTP 409): score timestamp ${earlier} is not later than the last score's timestamp ${later}`,
    );
  });

  it('reports a deleted column as a refusal (404)', async () => {
    const c = await sandboxCourse(lms);
    await lms.store.gradebook.deleteLineItem(c.lineItem.id);
    const outcome = await publisher.publish(publication(c));
    expect(outcome.status).toBe('failed');
    expect(outcome.response?.status).toBe(404);
    expect(outcome.error).toBe(`the LMS refused the score (HTTP 404): line item ${c.lineItem.id} not found in context ${c.context.id}`);
  });

  it('fails a placement without a line item without any HTTP call', async () => {
    const c = await sandboxCourse(lms);
    requests.length = 0;
    const outcome = await publisher.publish(publication(c, { placement: { ...c.placement, lineItemId: null } }));
    expect(outcome).toEqual({
      status: 'failed',
      response: null,
      error: `location ${c.location.id} has no line item in the LMS gradebook of context ${c.context.id}`,
    });
    expect(requests).toHaveLength(0);
  });

  it('fails, once, when the LMS cannot be reached', async () => {
    const c = await sandboxCourse(lms);
    const calls: string[] = [];
    const offline = createDefaultPublisher({
      signer: lms.signer,
      publicUrl: () => lms.config.publicUrl,
      // A port nothing listens on: the connection is refused.
      sandboxTransportOrigin: () => 'http://127.0.0.1:9',
      fetch: (input, init) => {
        calls.push(input);
        return fetch(input, init);
      },
    });
    const outcome = await offline.publish(publication(c));
    expect(outcome.status).toBe('failed');
    expect(outcome.response).toBeNull();
    expect(outcome.error).toMatch(/^the LMS could not be reached at http:\/\/127\.0\.0\.1:\d+: /);
    expect(calls).toHaveLength(1);
  });

  it('gets a fresh token after the LMS forgets a cached one, without retrying further', async () => {
    const c = await sandboxCourse(lms);
    expect((await publisher.publish(publication(c))).status).toBe('success');
    await lms.store.driver.run('DELETE FROM sandbox_lms_tokens');
    requests.length = 0;
    expect((await publisher.publish(publication(c))).status).toBe('success');
    expect(requests.map((r) => `${r.method} ${new URL(r.url).pathname.split('/').pop()}`)).toEqual(['POST scores', 'POST token', 'POST scores']);
  });

  it('leaves a school without a grade service failed', async () => {
    const c = await sandboxCourse(lms);
    const school = await lms.store.organizations.upsert({ issuer: 'https://lms.example.edu', client: 'c1', deployment: 'd1', title: 'Elsewhere' });
    const outcome = await publisher.publish(publication(c, { organization: school }));
    expect(outcome).toEqual({
      status: 'failed',
      response: null,
      error: `the LMS of school ${school.id} has no grade service registered with this service`,
    });
  });

  it('asks for the line-item scope only when max_score is sent', async () => {
    const c = await sandboxCourse(lms);
    const bodies: string[] = [];
    const fresh = createDefaultPublisher({
      signer: lms.signer,
      publicUrl: () => lms.config.publicUrl,
      fetch: (input, init) => {
        if (input.endsWith('/token')) bodies.push(String(init.body));
        return fetch(input, init);
      },
    });
    await fresh.publish(publication(c));
    await fresh.publish(publication(c, { maxScore: 30 }));
    await fresh.publish(publication(c, { score: 0.2 }));
    expect(bodies.map((b) => new URLSearchParams(b).get('scope'))).toEqual([
      AGS_SCOPES.score,
      `${AGS_SCOPES.score} ${AGS_SCOPES.lineItem}`,
    ]);
  });
});
