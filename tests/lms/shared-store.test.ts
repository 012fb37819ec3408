/**
 * Two reference LMS processes on one PostgreSQL schema are one LMS (decision LTI-80): each has its own port
 * and control token, both have the same issuer (as behind a load balancer), and the test sends each request
 * to one or the other. What must be single-use or ordered holds across them: the message hint, the
 * registration token, the AGS "as new or newer" check; the first start makes one key set.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReferenceLms } from '../../lms/app.ts';
import type { RunningLms } from '../../lms/app.ts';
import { lmsStoreFor, LMS_POSTGRES } from './stores.ts';
import type { Registered } from './tool.ts';
import { LmsWorld, registerThroughDynamicRegistration, TestTool } from './tool.ts';

const SCORE_TYPE = 'application/vnd.ims.lis.v1.score+json';

/** A URL the LMS handed out (on the shared issuer), sent to one process's own port instead. */
function at(lms: RunningLms, url: string): string {
  const u = new URL(url);
  return `${lms.url}${u.pathname}${u.search}`;
}

function scoresUrl(lineItemUrl: string): string {
  const url = new URL(lineItemUrl);
  url.pathname = `${url.pathname}/scores`;
  return url.toString();
}

describe.runIf(LMS_POSTGRES)('two reference LMS processes on one PostgreSQL schema', () => {
  const store = lmsStoreFor('postgres');
  let a: RunningLms;
  let b: RunningLms;
  let tool: TestTool;
  let reg: Registered;
  let onA: LmsWorld;
  let onB: LmsWorld;

  beforeAll(async () => {
    await store.open();
    a = await startReferenceLms({ store: store.location() });
    // B answers for A's issuer: one LMS, two processes. Its `url` is that issuer; requests "to B" go to its port.
    const second = await startReferenceLms({ store: store.location(), issuer: a.url });
    b = { ...second, url: `http://127.0.0.1:${(second.server.address() as AddressInfo).port}` };
    tool = await TestTool.start();
    reg = await registerThroughDynamicRegistration(a, tool);
    onA = LmsWorld.on(a, tool, reg);
    onB = LmsWorld.on(b, tool, reg);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await tool?.stop();
    await store.drop();
  });

  it('makes one key set when processes start at once, and every process publishes and signs with it', async () => {
    const racing = await Promise.all([0, 1, 2].map(() => startReferenceLms({ store: store.location('canvas'), profile: 'canvas' })));
    try {
      const sets = await Promise.all(racing.map(async (lms) => ((await (await fetch(`${lms.url}/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid)));
      expect(sets[0]).toHaveLength(1);
      expect(sets[1]).toEqual(sets[0]);
      expect(sets[2]).toEqual(sets[0]);
    } finally {
      await Promise.all(racing.map((lms) => lms.stop()));
    }
    expect(await (await fetch(`${a.url}/jwks`)).json()).toEqual(await (await fetch(`${b.url}/jwks`)).json());
  });

  it('keeps each process its own control token while the data is shared', async () => {
    expect(a.controlToken).not.toBe(b.controlToken);
    const foreign = await fetch(`${b.url}/controls/registrations`, { headers: { Authorization: `Bearer ${a.controlToken}` } });
    expect(foreign.status).toBe(401);
    // The registration made through A is B's too, and an ID taken on A is taken on B.
    const listed = await onB.controlJson<{ registrations: { client_id: string }[] }>('GET', '/registrations');
    expect(listed.registrations.map((r) => r.client_id)).toEqual([reg.clientId]);
    const id = `course-${randomBytes(4).toString('hex')}`;
    await onA.controlJson('POST', '/courses', { id, deployment_id: reg.deploymentId, title: 'Chosen', label: 'C-1' });
    expect((await onB.control('POST', '/courses', { id, deployment_id: reg.deploymentId, title: 'Again', label: 'C-2' })).status).toBe(409);
  });

  it('spends a registration token once, whichever process each racing registration reaches', async () => {
    const initiated = await onA.controlJson<{ registration_token: string }>('POST', '/registrations/initiate', { tool_url: `${tool.url}/lti/register` });
    const answers = await Promise.all(
      [a, b, a, b].map((lms) =>
        fetch(`${lms.url}/register`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${initiated.registration_token}` },
          body: JSON.stringify(tool.registration()),
        }),
      ),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 401, 401, 401]);
  });

  it('completes on B a launch started on A, and a hint used on one process is refused on the other', async () => {
    const c = await onA.course();
    // The hint is issued by A; the browser's authentication request reaches B, which answers the id_token.
    const toB = (auth: URL): void => {
      auth.host = new URL(b.url).host;
    };
    const trip = await onA.loginRoundTrip(await onA.launchUrl(c.linkId, c.sub), toB);
    const idToken = trip.form.fields['id_token'] ?? '';
    const { payload } = await jwtVerify(idToken, createRemoteJWKSet(new URL(`${a.url}/jwks`)), { issuer: a.issuer, audience: reg.clientId });
    expect(payload).toMatchObject({ sub: c.sub, nonce: trip.nonce });

    // Used on A, refused on B.
    let replay: URL | null = null;
    const used = await onA.loginRoundTrip(await onA.launchUrl(c.linkId, c.sub), (auth) => {
      replay = new URL(auth);
    });
    expect(used.form.fields).toHaveProperty('id_token');
    const again = await fetch(at(b, String(replay)), { redirect: 'manual' });
    expect(await again.text()).toContain('lti_message_hint is unknown, used or expired');

    // Racing on both processes, one authentication request gets the id_token.
    let racing: URL | null = null;
    await onA.loginRoundTrip(await onA.launchUrl(c.linkId, c.sub), (auth) => {
      racing = new URL(auth);
      // Sent nowhere yet: the round trip's own request is spent on a hint that names nobody.
      auth.searchParams.set('lti_message_hint', 'none');
    });
    const pages = await Promise.all([a, b, a, b, a, b].map(async (lms) => (await fetch(at(lms, String(racing)), { redirect: 'manual' })).text()));
    expect(pages.filter((p) => p.includes('name="id_token"'))).toHaveLength(1);
  });

  it("orders a column's scores per person across processes: A's score is in B's gradebook, an older one on B is 409", async () => {
    const c = await onA.course();
    const bearer = await onA.bearer();
    const post = (lms: RunningLms, timestamp: string, given: number): Promise<Response> =>
      fetch(at(lms, scoresUrl(c.lineItemUrl ?? '')), {
        method: 'POST',
        headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': SCORE_TYPE },
        body: JSON.stringify({ userId: c.sub, scoreGiven: given, scoreMaximum: 10, activityProgress: 'Completed', gradingProgress: 'FullyGraded', timestamp }),
      });
    expect((await post(a, '2026-11-25T10:00:00.000002Z', 8)).status).toBe(204);
    const book = await onB.controlJson<{ columns: { scores: { scoreGiven: number; timestamp: string }[] }[] }>('GET', `/courses/${c.courseId}/gradebook`);
    expect(book.columns[0]?.scores).toEqual([expect.objectContaining({ scoreGiven: 8, timestamp: '2026-11-25T10:00:00.000002Z' })]);
    expect((await post(b, '2026-11-25T10:00:00.000001Z', 3)).status).toBe(409);
    expect((await post(b, '2026-11-25T10:00:00.000002Z', 3)).status).toBe(409);

    // A burst over both processes: whatever order they land in, the column ends on the latest timestamp.
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) => post(i % 2 === 0 ? a : b, `2026-11-25T11:00:${String(i).padStart(2, '0')}Z`, i % 11)),
    );
    expect(burst.every((r) => r.status === 204 || r.status === 409)).toBe(true);
    const end = await onA.controlJson<{ columns: { scores: { scoreGiven: number; timestamp: string }[] }[] }>('GET', `/courses/${c.courseId}/gradebook`);
    expect(end.columns[0]?.scores).toEqual([expect.objectContaining({ scoreGiven: 11 % 11, timestamp: '2026-11-25T11:00:11Z' })]);
  });
});
