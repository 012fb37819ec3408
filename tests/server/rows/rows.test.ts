// The four storage rows over real HTTP against the real app (real SQLite file, responses validated):
// read, replace, patch; atomic and concurrent patches; the size limits at their exact boundary;
// provisioning; what answers 404; prototype pollution.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTool, launch, placeLocation, startServer, type TestServer } from '../harness.js';
import { api, type Course, detailOf, ROW_NAMES, type RowName, setUpCourse, serverFailures } from './helpers.js';

let server: TestServer;
let course: Course;

beforeAll(async () => {
  server = await startServer();
  course = await setUpCourse(server);
});
afterAll(async () => {
  const failures = server ? serverFailures(server.logs) : [];
  await server?.stop();
  expect(failures).toEqual([]);
});

/** Staff can write every row; the student's own launch names all four. */
const writer = (): ReturnType<typeof api> => api(course.instructor.auth);

describe('read and replace', () => {
  it.each(ROW_NAMES)('a never-written %s row reads as {}', async (row) => {
    const fresh = await setUpCourse(server);
    const response = await api(fresh.student.auth).get(fresh.storage[row]);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.text()).toBe('{}');
  });

  it.each(ROW_NAMES)('PUT replaces the whole %s row (204) and GET returns it exactly as written', async (row) => {
    const url = course.storage[row];
    expect((await writer().put(url, { first: 1, nested: { a: [1, 2, { b: null }] } })).status).toBe(204);
    const put = await writer().put(url, { second: 'two', unicode: 'π ✓ 😀' });
    expect(put.status).toBe(204);
    expect(await put.text()).toBe('');
    const got = await api(course.student.auth).get(url);
    expect(got.status).toBe(200);
    expect(await got.text()).toBe('{"second":"two","unicode":"π ✓ 😀"}');
  });

  it("keeps JSON's own key order: insertion order, digit-only keys first ascending (GAP-37)", async () => {
    const url = course.storage.member;
    const response = await writer().putText(url, '{ "b": 1, "10": "x", "a": 2, "2": "y", "0": "z" }');
    expect(response.status).toBe(204);
    expect(await (await writer().get(url)).text()).toBe('{"0":"z","2":"y","10":"x","b":1,"a":2}');
  });

  it('refuses a body that is not a JSON object with 422 and writes nothing', async () => {
    const url = course.storage.member;
    await writer().put(url, { kept: true });
    for (const text of ['[1,2]', '"text"', '42', 'null']) {
      const response = await writer().putText(url, text);
      expect(response.status, text).toBe(422);
    }
    expect(await (await writer().get(url)).json()).toEqual({ kept: true });
  });

  it('answers a body that is not JSON with 422 (the contract names a malformed body 422, H-02) and another content type with 415, writing nothing', async () => {
    const url = course.storage.member;
    await writer().put(url, { kept: 1 });
    const malformed = await fetch(url, {
      method: 'PUT',
      headers: { Authorization: course.instructor.auth, 'Content-Type': 'application/json' },
      body: '{"a":',
    });
    expect(await detailOf(malformed)).toMatchObject({ status: 422, code: 'malformed_json', detail: expect.stringMatching(/^request body is not valid JSON: /) });
    const wrongType = await fetch(url, {
      method: 'PUT',
      headers: { Authorization: course.instructor.auth, 'Content-Type': 'text/plain' },
      body: '{"a":1}',
    });
    expect(await detailOf(wrongType)).toMatchObject({ status: 415, detail: 'Content-Type must be application/json' });
    expect(await (await writer().get(url)).json()).toEqual({ kept: 1 });
  });
});

describe('patch', () => {
  it.each(ROW_NAMES)('PATCH applies an RFC 6902 patch to the %s row (204)', async (row) => {
    const url = course.storage[row];
    await writer().put(url, { answers: { q1: 'a' }, list: [1, 2, 3], keep: true });
    const response = await writer().patch(url, {
      patch: [
        { op: 'add', path: '/answers/q2', value: 'b' },
        { op: 'replace', path: '/answers/q1', value: 'c' },
        { op: 'remove', path: '/list/0' },
        { op: 'copy', from: '/answers/q2', path: '/copied' },
        { op: 'move', from: '/keep', path: '/moved' },
        { op: 'test', path: '/moved', value: true },
      ],
    });
    expect(response.status).toBe(204);
    expect(await (await writer().get(url)).text()).toBe('{"answers":{"q1":"c","q2":"b"},"list":[2,3],"copied":"b","moved":true}');
  });

  it('creates missing intermediate objects on add, as the contract says (S-17)', async () => {
    const url = course.storage.member_location;
    await writer().put(url, { a: 1 });
    expect((await writer().patch(url, { patch: [{ op: 'add', path: '/progress/unit1/step3', value: 'done' }] })).status).toBe(204);
    expect(await (await writer().get(url)).json()).toEqual({ a: 1, progress: { unit1: { step3: 'done' } } });
    // Never through a value that is not an object, and never array elements.
    const refused = await writer().patch(url, { patch: [{ op: 'add', path: '/a/b', value: 1 }] });
    expect(refused.status).toBe(422);
    const intoArray = await writer().patch(url, {
      patch: [
        { op: 'add', path: '/arr', value: [] },
        { op: 'add', path: '/arr/0/x', value: 1 },
      ],
    });
    expect(intoArray.status).toBe(422);
    expect(await (await writer().get(url)).json()).toEqual({ a: 1, progress: { unit1: { step3: 'done' } } });
  });

  it('leaves the row unchanged when any operation fails, and names the failing operation (422)', async () => {
    const url = course.storage.member;
    await writer().put(url, { answers: { q1: 'a' }, score: 1 });
    const response = await writer().patch(url, {
      patch: [
        { op: 'replace', path: '/score', value: 2 },
        { op: 'replace', path: '/answers/q9', value: 'x' },
        { op: 'add', path: '/late', value: true },
      ],
    });
    const problem = (await response.json()) as { status: number; code: string; detail: string; errors: unknown[] };
    expect(response.status).toBe(422);
    expect(problem.code).toBe('patch_failed');
    expect(problem.detail).toBe('patch operation 1 (replace /answers/q9) failed: path not found');
    expect(problem.errors).toEqual([{ path: '/body/patch/1/path', message: problem.detail }]);
    expect(await (await writer().get(url)).text()).toBe('{"answers":{"q1":"a"},"score":1}');
  });

  it('refuses a failing test operation and everything before it', async () => {
    const url = course.storage.member;
    await writer().put(url, { version: 3 });
    const response = await writer().patch(url, {
      patch: [
        { op: 'add', path: '/other', value: 1 },
        { op: 'test', path: '/version', value: 2 },
      ],
    });
    expect(await detailOf(response)).toMatchObject({ status: 422, detail: 'patch operation 1 (test /version) failed: the value at path differs' });
    expect(await (await writer().get(url)).json()).toEqual({ version: 3 });
  });

  it('refuses a patch whose result is not an object, and remove of the whole row', async () => {
    const url = course.storage.member;
    await writer().put(url, { a: 1 });
    expect((await writer().patch(url, { patch: [{ op: 'replace', path: '', value: [1] }] })).status).toBe(422);
    expect((await writer().patch(url, { patch: [{ op: 'remove', path: '' }] })).status).toBe(422);
    expect(await (await writer().get(url)).json()).toEqual({ a: 1 });
    expect((await writer().patch(url, { patch: [{ op: 'replace', path: '', value: { b: 2 } }] })).status).toBe(204);
    expect(await (await writer().get(url)).json()).toEqual({ b: 2 });
  });

  it('refuses keys beside patch, a missing wrapper and malformed operations with 422 (GAP-13)', async () => {
    const url = course.storage.member;
    await writer().put(url, { a: 1 });
    const wrapper = 'PATCH body must be an object with the single key "patch"';
    for (const body of [
      [{ op: 'add', path: '/b', value: 1 }],
      { patch: [{ op: 'add', path: '/b', value: 1 }], extra: true },
      {},
      { operations: [] },
    ]) {
      expect(await detailOf(await writer().patch(url, body))).toMatchObject({ status: 422, code: 'invalid_patch', detail: wrapper });
    }
    const noValue = await writer().patch(url, { patch: [{ op: 'add', path: '/b', value: 1 }, { op: 'add', path: '/c' }] });
    expect(await detailOf(noValue)).toMatchObject({ status: 422, detail: 'patch operation 1 (add /c) is invalid: value is required for add' });
    const badOp = await writer().patch(url, { patch: [{ op: 'merge', path: '/b', value: 1 }] });
    expect(await detailOf(badOp)).toMatchObject({ status: 422, code: 'invalid_patch' });
    const badPointer = await writer().patch(url, { patch: [{ op: 'add', path: 'b', value: 1 }] });
    expect(await detailOf(badPointer)).toMatchObject({ status: 422, code: 'invalid_patch' });
    expect(await (await writer().get(url)).json()).toEqual({ a: 1 });
  });

  it('an empty patch changes nothing and answers 204', async () => {
    const url = course.storage.member;
    await writer().put(url, { a: 1 });
    expect((await writer().patch(url, { patch: [] })).status).toBe(204);
    expect(await (await writer().get(url)).json()).toEqual({ a: 1 });
  });

  it('lands 60 concurrent patches to different keys of one row, none lost', async () => {
    const fresh = await setUpCourse(server);
    const url = fresh.storage.context;
    const staff = api(fresh.instructor.auth);
    await staff.put(url, { counter: 0 });
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        staff.patch(url, { patch: [{ op: 'add', path: `/answers/q${i}`, value: { answer: i, at: `t${i}` } }] }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array.from({ length: 60 }, () => 204));
    const row = (await (await staff.get(url)).json()) as { counter: number; answers: Record<string, { answer: number }> };
    expect(row.counter).toBe(0);
    expect(Object.keys(row.answers)).toHaveLength(60);
    for (let i = 0; i < 60; i += 1) expect(row.answers[`q${i}`]).toEqual({ answer: i, at: `t${i}` });
  });

  it('serializes concurrent patches of the same array: 50 appends all land', async () => {
    const fresh = await setUpCourse(server);
    const url = fresh.storage.member;
    const student = api(fresh.student.auth);
    await student.put(url, { log: [] });
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) => student.patch(url, { patch: [{ op: 'add', path: '/log/-', value: i }] })),
    );
    expect(responses.every((r) => r.status === 204)).toBe(true);
    const row = (await (await student.get(url)).json()) as { log: number[] };
    expect([...row.log].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });
});

describe('size limits (compact JSON, UTF-8 bytes, GAP-06)', () => {
  /** An object whose compact JSON is exactly `bytes` bytes, with 2-byte characters when `wide`. */
  function rowOfSize(bytes: number, wide = false): Record<string, string> {
    const frame = '{"v":""}'.length;
    const payload = bytes - frame;
    if (!wide) return { v: 'x'.repeat(payload) };
    // 'é' is 2 bytes in UTF-8 but one character: the limit counts bytes, not characters.
    return { v: 'é'.repeat(Math.floor(payload / 2)) + 'x'.repeat(payload % 2) };
  }

  const limits: Array<[RowName, number, string]> = [
    ['member', 524_288, '512 KB'],
    ['member_location', 524_288, '512 KB'],
    ['context', 1_048_576, '1 MB'],
    ['location', 1_048_576, '1 MB'],
  ];

  it.each(limits)('a %s row takes exactly %i bytes and refuses one more, writing nothing', async (row, limit, label) => {
    const url = course.storage[row];
    await writer().put(url, { before: true });
    const atLimit = rowOfSize(limit, true);
    expect(Buffer.byteLength(JSON.stringify(atLimit))).toBe(limit);
    expect((await writer().put(url, atLimit)).status).toBe(204);
    expect((await writer().get(url)).headers.get('content-length')).toBe(String(limit));

    await writer().put(url, { before: true });
    const over = rowOfSize(limit + 1, true);
    const refused = await writer().put(url, over);
    expect(await detailOf(refused)).toEqual({
      status: 422,
      code: 'row_too_large',
      detail: `row too large: ${limit + 1} bytes of compact JSON, at most ${limit} (${label}) for a ${row} row`,
    });
    expect(await (await writer().get(url)).json()).toEqual({ before: true });
  });

  it('counts the compact JSON, not the white space of the request', async () => {
    const url = course.storage.member;
    const exact = rowOfSize(524_288);
    const spaced = JSON.stringify(exact, null, 4).replace('{', '{        ');
    expect(spaced.length).toBeGreaterThan(524_288);
    expect((await writer().putText(url, spaced)).status).toBe(204);
  });

  it('refuses a patch that would take the row over its limit, leaving the row unchanged', async () => {
    const url = course.storage.member;
    const start = rowOfSize(524_288 - 10);
    await writer().put(url, start);
    // `,"w":""` adds 7 bytes plus its value: 3 characters fit exactly, 4 do not.
    expect((await writer().patch(url, { patch: [{ op: 'add', path: '/w', value: 'abc' }] })).status).toBe(204);
    const refused = await writer().patch(url, { patch: [{ op: 'replace', path: '/w', value: 'abcd' }] });
    expect(await detailOf(refused)).toMatchObject({ status: 422, code: 'row_too_large' });
    expect(((await (await writer().get(url)).json()) as { w: string }).w).toBe('abc');
  });
});

describe('provisioning of the context and location levels', () => {
  it('answers 422 on context and location rows until the tool PUTs the provision URL; member rows never do', async () => {
    const fresh = await setUpCourse(server, { provisionContext: false, provisionLocation: false });
    const staff = api(fresh.instructor.auth);
    const { context: contextId } = fresh.student.claims;
    const locationId = fresh.student.claims.location.id;
    const contextMessage = `context ${contextId} is not provisioned yet: the tool must PUT its provision URL first`;
    const locationMessage = `location ${locationId} in context ${contextId} is not provisioned yet: the tool must PUT its provision URL first`;

    for (const call of [
      () => staff.get(fresh.storage.context),
      () => staff.put(fresh.storage.context, { a: 1 }),
      () => staff.patch(fresh.storage.context, { patch: [] }),
      () => api(fresh.student.auth).get(fresh.storage.context),
    ]) {
      expect(await detailOf(await call())).toEqual({ status: 422, code: 'level_not_provisioned', detail: contextMessage });
    }
    for (const call of [
      () => staff.get(fresh.storage.location),
      () => staff.put(fresh.storage.location, { a: 1 }),
      () => staff.patch(fresh.storage.location, { patch: [] }),
    ]) {
      expect(await detailOf(await call())).toEqual({ status: 422, code: 'level_not_provisioned', detail: locationMessage });
    }
    // Member rows are open from the first launch.
    expect((await api(fresh.student.auth).put(fresh.storage.member, { m: 1 })).status).toBe(204);
    expect((await api(fresh.student.auth).put(fresh.storage.member_location, { ml: 1 })).status).toBe(204);
    expect(await (await api(fresh.student.auth).get(fresh.storage.member)).json()).toEqual({ m: 1 });

    // A request that is wrong in itself is refused as such first (GAP-23: request before state).
    expect(await detailOf(await staff.patch(fresh.storage.context, { nope: 1 }))).toMatchObject({ code: 'invalid_patch' });

    // The tool provisions the course level: a PUT of the provision URL with the provision request's token.
    const courseRequest = await server.services.launches.provisionRequest({ appId: fresh.tool.app.id, contextId });
    const provisioned = await fetch(fresh.student.claims.provision.context, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${courseRequest.apiToken}` },
    });
    expect(provisioned.status).toBe(204);
    expect((await staff.put(fresh.storage.context, { ready: true })).status).toBe(204);
    expect(await (await api(fresh.student.auth).get(fresh.storage.context)).json()).toEqual({ ready: true });
    // The location level is still closed, until its own provision URL is PUT.
    expect(await detailOf(await staff.get(fresh.storage.location))).toMatchObject({ detail: locationMessage });
    const locationRequest = await server.services.launches.provisionRequest({ appId: fresh.tool.app.id, contextId, locationId });
    const provisionedLocation = await fetch(fresh.student.claims.provision.location, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${locationRequest.apiToken}` },
    });
    expect(provisionedLocation.status).toBe(204);
    expect((await staff.get(fresh.storage.location)).status).toBe(200);
  });
});

describe('URLs that name no row of the tool answer 404', () => {
  it("another tool's rows, an unknown course, location or member", async () => {
    const other = await setUpCourse(server);
    const mine = api(course.instructor.auth);
    for (const row of ROW_NAMES) {
      // The other tool's row, with this tool's token: 404, not 403, so a row's existence does not leak.
      expect(await detailOf(await mine.get(other.storage[row]))).toEqual({ status: 404, code: 'row_not_found', detail: 'row not found' });
      expect((await mine.put(other.storage[row], { x: 1 })).status).toBe(404);
      expect((await mine.patch(other.storage[row], { patch: [] })).status).toBe(404);
    }
    const { app, context } = course.student.claims;
    const base = `${server.url}/v1/contexts/${context}/apps/${app}`;
    const unknown = [
      `${server.url}/v1/contexts/ctx_doesnotexist0000000000/apps/${app}/storage`,
      `${base}/locations/loc_doesnotexist0000000000/storage`,
      `${base}/members/mem_doesnotexist0000000000/storage`,
      `${base}/locations/${course.student.claims.location.id}/members/mem_doesnotexist0000000000/storage`,
      // A location of another tool, and a member of another course.
      `${base}/locations/${other.student.claims.location.id}/storage`,
      `${base}/members/${other.student.claims.user.member}/storage`,
    ];
    for (const url of unknown) expect((await mine.get(url)).status, url).toBe(404);
  });

  it('a location of the tool that is not placed in the course', async () => {
    const tool = course.tool;
    const elsewhere = await placeLocation(server, { app: tool.app.id });
    const url = `${server.url}/v1/contexts/${course.student.claims.context}/apps/${tool.app.id}/locations/${elsewhere.location.id}/storage`;
    expect((await api(course.instructor.auth).get(url)).status).toBe(404);
  });
});

describe('credentials (401)', () => {
  it('refuses a missing token, an API key and an unknown token', async () => {
    const url = course.storage.member;
    expect(await detailOf(await api(null).get(url))).toMatchObject({ status: 401, detail: 'Missing bearer token' });
    expect(await detailOf(await api(`Bearer ${course.tool.apiKey}`).get(url))).toMatchObject({
      status: 401,
      detail: 'API key is not accepted on this URL; use the api.token of a launch',
    });
    expect(await detailOf(await api('Bearer tis_at_0000000000000000000000000000000000000000000').put(url, {}))).toMatchObject({
      status: 401,
      detail: 'Invalid bearer token',
    });
  });
});

describe('prototype pollution', () => {
  it('stores __proto__, constructor and prototype as plain keys and pollutes nothing', async () => {
    const url = course.storage.member;
    const staff = writer();
    expect((await staff.putText(url, '{"__proto__":{"polluted":true},"a":{}}')).status).toBe(204);
    expect(await (await staff.get(url)).text()).toBe('{"__proto__":{"polluted":true},"a":{}}');
    const patched = await staff.patch(url, {
      patch: [
        { op: 'add', path: '/a/__proto__/polluted', value: 'yes' },
        { op: 'add', path: '/constructor/prototype/polluted', value: 'yes' },
        { op: 'add', path: '/b/__proto__', value: { polluted: 'yes' } },
        { op: 'copy', from: '/__proto__', path: '/c' },
      ],
    });
    expect(patched.status).toBe(204);
    const text = await (await staff.get(url)).text();
    expect(text).toBe(
      '{"__proto__":{"polluted":true},"a":{"__proto__":{"polluted":"yes"}},"constructor":{"prototype":{"polluted":"yes"}},' +
        '"b":{"__proto__":{"polluted":"yes"}},"c":{"polluted":true}}',
    );
    // Nothing leaked into the process (the server runs in this process) or into other rows.
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect((Object.prototype as unknown as Record<string, unknown>)['polluted']).toBeUndefined();
    const other = await setUpCourse(server);
    expect(await (await api(other.student.auth).get(other.storage.member)).text()).toBe('{}');
    // A failing patch through __proto__ is an ordinary missing path.
    const missing = await staff.patch(url, { patch: [{ op: 'replace', path: '/zzz/__proto__', value: 1 }] });
    expect(missing.status).toBe(422);
    expect(await (await staff.get(url)).text()).toBe(text);
  });
});

describe('launch URLs', () => {
  it("the launch's storage URLs are the L-02 paths and their files URLs replace /storage with /files", async () => {
    const c = course.student.claims;
    const base = `${server.url}/v1/contexts/${c.context}/apps/${c.app}`;
    expect(c.storage).toEqual({
      context: `${base}/storage`,
      location: `${base}/locations/${c.location.id}/storage`,
      member: `${base}/members/${c.user.member}/storage`,
      member_location: `${base}/locations/${c.location.id}/members/${c.user.member}/storage`,
    });
    for (const row of ROW_NAMES) expect(c.files[row]).toBe(c.storage[row].replace(/\/storage$/, '/files'));
  });

  it('a second launch of the same student reads the same member rows', async () => {
    const url = course.storage.member;
    await api(course.student.auth).put(url, { mine: true });
    const again = await launch(server, { placed: course.placed, userExternalId: course.student.user.externalId });
    expect(again.claims.storage.member).toBe(url);
    expect(await (await api(again.auth).get(url)).json()).toEqual({ mine: true });
  });

  it('a tool in two courses keeps their rows apart', async () => {
    const tool = await createTool(server);
    const a = await setUpCourse(server, { tool });
    const b = await setUpCourse(server, { tool });
    await api(a.instructor.auth).put(a.storage.context, { course: 'a' });
    expect(await (await api(b.instructor.auth).get(b.storage.context)).json()).toEqual({});
  });
});
