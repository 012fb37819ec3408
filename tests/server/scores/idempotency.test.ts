/**
 * `Idempotency-Key` on score submissions (decision H-07), over real HTTP with publication to the gradebook
 * of the tool's Sandbox LMS school (LTI-48): the same key and request within 24 hours answer the first attempt and publish nothing again;
 * the same key with another request is 422; without the header every call publishes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AttemptRecord } from '../../../server/store/index.js';
import type { PlacedLocation, TestLaunch, TestServer, Tool } from '../harness.js';
import { createTool, launch, lmsScoreOf, placeLocation, startServer } from '../harness.js';

let server: TestServer;
let tool: Tool;

beforeAll(async () => {
  server = await startServer();
  tool = await createTool(server);
});
afterAll(async () => {
  await server?.stop();
});

async function course(): Promise<{ placed: PlacedLocation; student: TestLaunch; url: string }> {
  const placed = await placeLocation(server, { app: tool.app.id, type: 'assessment', points: 10 });
  const student = await launch(server, { placed, groups: ['student'] });
  const url = `${server.url}/v1/contexts/${placed.context.id}/apps/${tool.app.id}/locations/${placed.location.id}/members/${student.member.id}/scores`;
  return { placed, student, url };
}

function post(url: string, body: unknown, key?: string, auth = `Bearer ${tool.apiKey}`): Promise<Response> {
  const headers: Record<string, string> = { Authorization: auth, 'Content-Type': 'application/json' };
  if (key !== undefined) headers['Idempotency-Key'] = key;
  return fetch(url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

async function attempts(placed: PlacedLocation): Promise<AttemptRecord[]> {
  return (await server.services.store.attempts.list({ appId: tool.app.id, contextId: placed.context.id, locationId: placed.location.id, limit: 100 })).items;
}


describe('Idempotency-Key on score submissions (H-07)', () => {
  it('the same key and body answer the first attempt again and publish nothing', async () => {
    const { placed, student, url } = await course();
    const first = await post(url, { score: 0.7, comment: 'first' }, 'attempt-1');
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const firstBody = (await first.json()) as { id: string; submitted: string };
    // Same JSON value, members in another order and other white space: the same request.
    const again = await post(url, '{ "comment": "first", "score": 0.7 }', 'attempt-1');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(firstBody);
    expect(await attempts(placed)).toHaveLength(1);
    // The LMS's column holds the one publication: the first attempt's score and timestamp.
    const { score } = await lmsScoreOf(server, placed, student.member.id);
    expect(score).toMatchObject({ score_given: 7, comment: 'first', timestamp: firstBody.submitted });
  });

  it('the same key with a different body (or URL) is 422 and publishes nothing', async () => {
    const { placed, url } = await course();
    expect((await post(url, { score: 0.4 }, 'k-2')).status).toBe(200);
    const other = await post(url, { score: 0.9 }, 'k-2');
    expect(other.status).toBe(422);
    expect(await other.json()).toMatchObject({
      code: 'idempotency_key_reused',
      detail: 'Idempotency-Key "k-2" was used within the last 24 hours for a different score submission',
    });
    const second = await course();
    expect((await post(second.url, { score: 0.4 }, 'k-2')).status).toBe(422);
    expect(await attempts(placed)).toHaveLength(1);
    expect(await attempts(second.placed)).toHaveLength(0);
  });

  it('without the header every call publishes; a refused request does not use up its key', async () => {
    const { placed, url } = await course();
    for (let i = 0; i < 3; i += 1) expect((await post(url, { score: 0.5 })).status).toBe(200);
    expect(await attempts(placed)).toHaveLength(3);
    expect((await post(url, { score: 7 }, 'k-3')).status).toBe(422);
    const accepted = await post(url, { score: 0.6 }, 'k-3');
    expect(accepted.status).toBe(200);
    expect(accepted.headers.get('idempotent-replayed')).toBeNull();
    expect(await attempts(placed)).toHaveLength(4);
  });

  it('keys are the tool’s own: another tool may use the same key', async () => {
    const { url } = await course();
    const other = await createTool(server);
    const placed = await placeLocation(server, { app: other.app.id, type: 'assessment' });
    const pupil = await launch(server, { placed, groups: ['student'] });
    const otherUrl = `${server.url}/v1/contexts/${placed.context.id}/apps/${other.app.id}/locations/${placed.location.id}/members/${pupil.member.id}/scores`;
    expect((await post(url, { score: 0.5 }, 'shared-key')).status).toBe(200);
    const theirs = await post(otherUrl, { score: 0.5 }, 'shared-key', `Bearer ${other.apiKey}`);
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
  });

  it('concurrent requests with one key record one attempt; the others replay it or are told to retry (409)', async () => {
    const { placed, url } = await course();
    const answers = await Promise.all(Array.from({ length: 5 }, () => post(url, { score: 0.3 }, 'race')));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    for (const a of answers.filter((x) => x.status === 409)) expect(a.headers.get('retry-after')).toBe('1');
    expect(answers.filter((a) => a.status === 200 && a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(await attempts(placed)).toHaveLength(1);
    const replay = await post(url, { score: 0.3 }, 'race');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });

  it('a key after 24 hours names nothing: the request publishes again', async () => {
    const { placed, url } = await course();
    expect((await post(url, { score: 0.2 }, 'old-key')).status).toBe(200);
    await server.services.store.driver.run('UPDATE score_idempotency SET created_at = created_at - ? WHERE idempotency_key = ?', [24 * 3600 * 1000 + 1, 'old-key']);
    const later = await post(url, { score: 0.2 }, 'old-key');
    expect(later.status).toBe(200);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(await attempts(placed)).toHaveLength(2);
  });

  it('a key that breaks its shape is refused before anything is published', async () => {
    const { placed, url } = await course();
    const bad = await post(url, { score: 0.5 }, 'x'.repeat(256));
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect(await attempts(placed)).toHaveLength(0);
  });
});
