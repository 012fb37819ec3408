/**
 * The Sandbox LMS over real HTTP (dashboard spec, tag "Sandbox LMS"; decision S-12): the token endpoint's
 * assertion checks and scopes, and the line item and score operations with their errors. Responses are
 * validated against the spec by the pipeline (a response that breaks it answers 500 here).
 */
import { randomUUID } from 'node:crypto';
import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSandboxGradebook } from '../../../server/sandbox-lms/gradebook.js';
import { AGS_MEDIA_TYPES, AGS_SCOPES, sandboxClientId, sandboxTokenUrl } from '../../../server/sandbox-lms/school.js';
import type { LmsServer, SandboxCourse } from './lms-fixture.js';
import { sandboxCourse, startLmsServer } from './lms-fixture.js';

let lms: LmsServer;
let course: SandboxCourse;

beforeAll(async () => {
  lms = await startLmsServer();
  course = await sandboxCourse(lms, 20);
});

afterAll(async () => {
  await lms.stop();
});

const FORM = 'application/x-www-form-urlencoded';
const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

function claims(c: SandboxCourse, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const iat = Math.floor(lms.clock.nowMs() / 1000);
  const client = sandboxClientId(c.app.id);
  return { iss: client, sub: client, aud: sandboxTokenUrl(lms.config.publicUrl), iat, exp: iat + 300, jti: randomUUID(), ...overrides };
}

async function tokenRequest(form: Record<string, string>, contentType = FORM): Promise<Response> {
  return fetch(`${lms.url}/sandbox-lms/token`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: new URLSearchParams(form).toString(),
  });
}

async function requestToken(assertion: string, scope: string): Promise<Response> {
  return tokenRequest({ grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: assertion, scope });
}

async function accessToken(c: SandboxCourse, scope = `${AGS_SCOPES.score} ${AGS_SCOPES.lineItem}`): Promise<string> {
  const res = await requestToken(await lms.signer.sign(claims(c)), scope);
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

const lineItemsUrl = (c: SandboxCourse) => `${lms.url}/sandbox-lms/contexts/${c.context.id}/lineitems`;
const lineItemUrl = (c: SandboxCourse, id = c.lineItem.id) => `${lineItemsUrl(c)}/${id}`;

async function problem(res: Response): Promise<{ status: number; detail: string; code: string }> {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  return (await res.json()) as { status: number; detail: string; code: string };
}

describe('Sandbox LMS token endpoint', () => {
  it('issues a token for exactly the scopes asked, not cacheable', async () => {
    const res = await requestToken(await lms.signer.sign(claims(course)), AGS_SCOPES.score);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: AGS_SCOPES.score });
    expect(body['access_token']).toMatch(/^sbx_at_[A-Za-z0-9_-]{43}$/);
  });

  const refusals: Array<[string, () => Promise<Record<string, unknown>>, Record<string, string>, number]> = [
    ['an expired assertion', () => Promise.resolve(claims(course, { iat: Math.floor(Date.now() / 1000) - 900, exp: Math.floor(Date.now() / 1000) - 600 })), { error: 'invalid_client', error_description: 'client assertion has expired' }, 401],
    ['another audience', () => Promise.resolve(claims(course, { aud: 'https://lms.example.edu/token' })), { error: 'invalid_client' }, 401],
    ['sub unlike iss', () => Promise.resolve(claims(course, { sub: 'someone-else' })), { error: 'invalid_client' }, 401],
    ['no jti', () => Promise.resolve(claims(course, { jti: undefined })), { error: 'invalid_client' }, 401],
    ['a lifetime over 300 s', () => Promise.resolve(claims(course, { exp: Math.floor(Date.now() / 1000) + 3600 })), { error: 'invalid_client', error_description: 'client assertion may live at most 300 seconds' }, 401],
    ['a client that is no Sandbox school', () => Promise.resolve(claims(course, { iss: 'sandbox-app_nobody', sub: 'sandbox-app_nobody' })), { error: 'invalid_client', error_description: 'client sandbox-app_nobody is not a Sandbox school' }, 401],
  ];
  it.each(refusals)('refuses %s', async (_name, make, expected, status) => {
    const body = await make();
    const res = await requestToken(await lms.signer.sign(body), AGS_SCOPES.score);
    expect(res.status).toBe(status);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toMatchObject(expected);
  });

  it('refuses an assertion signed with a key the service does not publish', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT(claims(course) as never).setProtectedHeader({ alg: 'RS256', kid: 'forged', typ: 'JWT' }).sign(privateKey);
    const res = await requestToken(forged, AGS_SCOPES.score);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('refuses a replayed assertion', async () => {
    const assertion = await lms.signer.sign(claims(course));
    expect((await requestToken(assertion, AGS_SCOPES.score)).status).toBe(200);
    const again = await requestToken(assertion, AGS_SCOPES.score);
    expect(again.status).toBe(401);
    expect(await again.json()).toEqual({ error: 'invalid_client', error_description: 'client assertion jti was used before' });
  });

  it('withholds the line-item scope when the school does', async () => {
    const c = await sandboxCourse(lms);
    await lms.store.organizations.setGrantsLineItemScope(c.school.id, false);
    const res = await requestToken(await lms.signer.sign(claims(c)), `${AGS_SCOPES.score} ${AGS_SCOPES.lineItem}`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'invalid_scope', error_description: `the school does not grant ${AGS_SCOPES.lineItem}` });
    expect((await requestToken(await lms.signer.sign(claims(c)), AGS_SCOPES.score)).status).toBe(200);
  });

  it('answers malformed requests with RFC 6749 errors', async () => {
    const assertion = await lms.signer.sign(claims(course));
    const cases: Array<[Record<string, string>, Record<string, string>]> = [
      [{ grant_type: 'password', client_assertion_type: JWT_BEARER, client_assertion: assertion, scope: AGS_SCOPES.score }, { error: 'unsupported_grant_type', error_description: 'only client_credentials is supported' }],
      [{ grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, scope: AGS_SCOPES.score }, { error: 'invalid_request', error_description: 'client_assertion is required' }],
      [{ grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: assertion }, { error: 'invalid_request', error_description: 'scope is required' }],
      [{ grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: assertion, scope: 'https://example.com/other' }, { error: 'invalid_scope', error_description: 'unknown scope https://example.com/other' }],
    ];
    for (const [form, expected] of cases) {
      const res = await tokenRequest(form);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(expected);
    }
    const json = await tokenRequest({ grant_type: 'client_credentials' }, 'application/json');
    expect(json.status).toBe(400);
    expect(await json.json()).toEqual({ error: 'invalid_request', error_description: `Content-Type must be ${FORM}` });
  });
});

describe('Sandbox LMS line items and scores', () => {
  it('answers 401 without, with an unknown and with an expired token', async () => {
    const none = await fetch(lineItemsUrl(course));
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await problem(none)).detail).toBe('Missing bearer token');
    const unknown = await fetch(lineItemsUrl(course), { headers: { authorization: 'Bearer sbx_at_' + 'x'.repeat(43) } });
    expect((await problem(unknown)).detail).toBe('Invalid bearer token');
    const token = await accessToken(course);
    lms.clock.offsetMs = 3_601_000;
    try {
      const expired = await fetch(lineItemsUrl(course), { headers: { authorization: `Bearer ${token}` } });
      expect(expired.status).toBe(401);
      expect((await problem(expired)).detail).toBe('Expired bearer token');
    } finally {
      lms.clock.offsetMs = 0;
    }
  });

  it("answers 404 for another school's course and a line item of no course, before 403", async () => {
    const other = await sandboxCourse(lms);
    const token = await accessToken(course, AGS_SCOPES.score);
    const foreign = await fetch(lineItemsUrl(other), { headers: { authorization: `Bearer ${token}` } });
    expect(foreign.status).toBe(404);
    expect((await problem(foreign)).detail).toBe(`context ${other.context.id} not found`);
    const missing = await fetch(lineItemUrl(course, 'lit_nothinghere'), { headers: { authorization: `Bearer ${token}` } });
    expect(missing.status).toBe(404);
    expect((await problem(missing)).detail).toBe(`line item lit_nothinghere not found in context ${course.context.id}`);
    const forbidden = await fetch(lineItemUrl(course), { headers: { authorization: `Bearer ${token}` } });
    expect(forbidden.status).toBe(403);
    expect(await problem(forbidden)).toMatchObject({ code: 'insufficient_scope', detail: `the access token lacks the scope ${AGS_SCOPES.lineItem}` });
  });

  it('lists, creates, reads and replaces line items in the AGS media types', async () => {
    const c = await sandboxCourse(lms, 20);
    const token = await accessToken(c);
    const auth = { authorization: `Bearer ${token}` };
    const list = await fetch(lineItemsUrl(c), { headers: auth });
    expect(list.status).toBe(200);
    expect(list.headers.get('content-type')).toMatch(AGS_MEDIA_TYPES.lineItemContainer);
    const items = (await list.json()) as Array<Record<string, unknown>>;
    expect(items).toEqual([
      {
        id: lineItemUrl(c),
        scoreMaximum: 20,
        label: 'Week 1 quiz',
        resourceId: c.location.id,
        resourceLinkId: c.placement.resourceLink,
        gradesReleased: true,
      },
    ]);

    const created = await fetch(lineItemsUrl(c), {
      method: 'POST',
      headers: { ...auth, 'content-type': AGS_MEDIA_TYPES.lineItem },
      body: JSON.stringify({ scoreMaximum: 10, label: 'Bonus', tag: 'bonus', extension: { ignored: true } }),
    });
    expect(created.status).toBe(201);
    const item = (await created.json()) as { id: string; scoreMaximum: number };
    expect(created.headers.get('location')).toBe(item.id);
    expect(item).toMatchObject({ scoreMaximum: 10, label: 'Bonus', tag: 'bonus', gradesReleased: true });
    expect(item.id).toMatch(new RegExp(`/sandbox-lms/contexts/${c.context.id}/lineitems/lit_[a-z2-7]{26}$`));

    const byTag = await fetch(`${lineItemsUrl(c)}?tag=bonus`, { headers: auth });
    expect(((await byTag.json()) as unknown[]).length).toBe(1);

    const read = await fetch(item.id, { headers: auth });
    expect(read.status).toBe(200);
    const replaced = await fetch(item.id, {
      method: 'PUT',
      headers: { ...auth, 'content-type': AGS_MEDIA_TYPES.lineItem },
      body: JSON.stringify({ ...((await read.json()) as object), scoreMaximum: 15 }),
    });
    expect(replaced.status).toBe(200);
    expect(await replaced.json()).toMatchObject({ id: item.id, scoreMaximum: 15, label: 'Bonus' });
  });

  it('refuses bad line items and the wrong media type', async () => {
    const token = await accessToken(course);
    const auth = { authorization: `Bearer ${token}` };
    const zero = await fetch(lineItemsUrl(course), {
      method: 'POST',
      headers: { ...auth, 'content-type': AGS_MEDIA_TYPES.lineItem },
      body: JSON.stringify({ scoreMaximum: 0, label: 'Zero' }),
    });
    expect(zero.status).toBe(422);
    expect((await problem(zero)).detail).toBe('scoreMaximum must be greater than 0');
    const json = await fetch(lineItemsUrl(course), {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ scoreMaximum: 5, label: 'Five' }),
    });
    expect(json.status).toBe(415);
    expect((await problem(json)).detail).toBe(`Content-Type must be ${AGS_MEDIA_TYPES.lineItem}`);
  });

  it('keeps the latest score per user and refuses one that is not later (409), to the microsecond', async () => {
    const c = await sandboxCourse(lms, 20);
    const token = await accessToken(c, AGS_SCOPES.score);
    const post = (body: Record<string, unknown>, contentType: string = AGS_MEDIA_TYPES.score) =>
      fetch(`${lineItemUrl(c)}/scores`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
        body: JSON.stringify(body),
      });
    const score = {
      userId: c.student.user.externalId,
      scoreGiven: 17,
      scoreMaximum: 20,
      timestamp: '2026-11-04T10:15:30.120417Z',
      activityProgress: 'Completed',
      gradingProgress: 'FullyGraded',
    };
    expect((await post(score)).status).toBe(204);
    const same = await post({ ...score, scoreGiven: 1 });
    expect(same.status).toBe(409);
    expect((await problem(same)).detail).toBe(
      "score timestamp 2026-11-04T10:15:30.120417Z is not later than the last score's timestamp 2026-11-04T10:15:30.120417Z",
    );
    expect((await post({ ...score, scoreGiven: 18, timestamp: '2026-11-04T10:15:30.120418Z' })).status).toBe(204);
    expect((await post({ ...score, timestamp: '2026-11-04T11:15:30.120418+01:00' })).status).toBe(409);
    expect(await lms.store.gradebook.getScore(c.lineItem.id, c.student.user.id)).toMatchObject({ scoreGiven: 18, timestampUs: Date.parse('2026-11-04T10:15:30.120Z') * 1000 + 418 });

    const noMax = await post({ ...score, scoreMaximum: undefined, timestamp: '2026-11-05T00:00:00.000001Z' });
    expect(noMax.status).toBe(422);
    expect((await problem(noMax)).detail).toBe('scoreMaximum is required with scoreGiven');
    const stranger = await post({ ...score, userId: 'nobody', timestamp: '2026-11-05T00:00:00.000001Z' });
    expect(stranger.status).toBe(422);
    expect((await problem(stranger)).detail).toBe(`userId nobody is not a member of context ${c.context.id}`);
    const wrongType = await post(score, 'application/json');
    expect(wrongType.status).toBe(415);
    expect((await problem(wrongType)).detail).toBe(`Content-Type must be ${AGS_MEDIA_TYPES.score}`);
  });

  it("shows the Grades tab: columns in creation order, each member's latest score in role order", async () => {
    const c = await sandboxCourse(lms, 20);
    const token = await accessToken(c, AGS_SCOPES.score);
    const post = (userId: string, scoreGiven: number, timestamp: string, comment?: string) =>
      fetch(`${lineItemUrl(c)}/scores`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': AGS_MEDIA_TYPES.score },
        body: JSON.stringify({ userId, scoreGiven, scoreMaximum: 20, timestamp, activityProgress: 'Completed', gradingProgress: 'FullyGraded', ...(comment ? { comment } : {}) }),
      });
    expect((await post(c.student2.user.externalId, 8, '2026-11-04T09:58:47.006251Z')).status).toBe(204);
    expect((await post(c.student.user.externalId, 17, '2026-11-04T10:15:30.120417Z', 'Good work')).status).toBe(204);
    const gradebook = await readSandboxGradebook(lms.store, c.context);
    expect(gradebook).toMatchObject({
      context_id: c.context.id,
      columns: [
        {
          line_item_id: c.lineItem.id,
          placement_id: c.placement.id,
          label: 'Week 1 quiz',
          score_maximum: 20,
          grades_released: true,
          scores: [
            { role: 'student_1', member_id: c.student.member.id, score_given: 17, score_maximum: 20, comment: 'Good work', timestamp: '2026-11-04T10:15:30.120417Z' },
            { role: 'student_2', member_id: c.student2.member.id, score_given: 8, comment: null, timestamp: '2026-11-04T09:58:47.006251Z' },
          ],
        },
      ],
    });
  });
});
