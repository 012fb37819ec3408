// Data is stored exactly or refused (H-01, H-02): a number an IEEE-754 double cannot keep exactly is
// refused with 422 naming its JSON pointer, and nothing is written; a body that is not JSON is 422 on
// rows and file PUTs. Property-based: whatever JSON object a PUT or a PATCH writes, a GET returns it.
// Runs on SQLite and (the `postgres` project) on PostgreSQL.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../harness.js';
import { caller, createBuilder, expectProblem, platformToken, register } from '../dashboard/helpers.js';
import { api, type Course, detailOf, ROW_NAMES, setUpCourse, serverFailures } from './helpers.js';

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

const staff = (): ReturnType<typeof api> => api(course.instructor.auth);

function patchText(url: string, text: string): Promise<Response> {
  return fetch(url, { method: 'PATCH', headers: { Authorization: course.instructor.auth, 'Content-Type': 'application/json' }, body: text });
}

/** JSON equality as a reader of the text sees it: `-0` and `0` are one JSON number. */
function normalised(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}

describe('numbers a double cannot keep exactly are refused, naming the pointer (H-01)', () => {
  const cases: Array<[string, string, string]> = [
    ['{"a":1e400}', '/a', 'it is outside the range of an IEEE-754 double'],
    ['{"a":[0,-1e400]}', '/a/1', 'it is outside the range of an IEEE-754 double'],
    ['{"x":{"big":9007199254740993}}', '/x/big', 'an IEEE-754 double holds it only as 9007199254740992'],
    ['{"p/q~r":[{"n":123456789012345678901234567890}]}', '/p~1q~0r/0/n', 'an IEEE-754 double holds it only as 1.2345678901234568e+29'],
    ['{"tiny":1e-400}', '/tiny', 'it is outside the range of an IEEE-754 double'],
    ['{"s":"1e400","k":1.00000000000000000001}', '/k', 'an IEEE-754 double holds it only as 1'],
  ];

  it.each(ROW_NAMES)('PUT to the %s row: 422 and the row unchanged', async (row) => {
    const url = course.storage[row];
    expect((await staff().put(url, { kept: 1 })).status).toBe(204);
    for (const [text, pointer, why] of cases) {
      const response = await staff().putText(url, text);
      const body = (await response.json()) as { status: number; code: string; detail: string; errors: Array<{ path: string }> };
      expect(body, text).toMatchObject({ status: 422, code: 'inexact_number' });
      expect(body.detail).toContain(`at ${pointer} cannot be stored exactly: ${why}`);
      expect(body.errors[0]?.path).toBe(`/body${pointer}`);
    }
    expect(await (await staff().get(url)).text()).toBe('{"kept":1}');
  });

  it('a PATCH value: 422 naming the pointer inside the patch, the row unchanged', async () => {
    const url = course.storage.member;
    await staff().put(url, { kept: 1 });
    const response = await patchText(url, '{"patch":[{"op":"add","path":"/n","value":18446744073709551617}]}');
    expect(await detailOf(response)).toMatchObject({
      status: 422,
      code: 'inexact_number',
      detail: 'the number 18446744073709551617 at /patch/0/value cannot be stored exactly: an IEEE-754 double holds it only as 18446744073709552000',
    });
    expect(await (await staff().get(url)).json()).toEqual({ kept: 1 });
  });

  it('keeps what a double holds exactly: large safe integers, 2^53, decimals, exponents, the largest double', async () => {
    const url = course.storage.member;
    const text = '{"a":9007199254740992,"b":-9007199254740991,"c":0.1,"d":1.5e3,"e":1.7976931348623157e308,"f":5e-324,"g":1.50,"h":-0}';
    expect((await staff().putText(url, text)).status).toBe(204);
    expect(await (await staff().get(url)).text()).toBe('{"a":9007199254740992,"b":-9007199254740991,"c":0.1,"d":1500,"e":1.7976931348623157e+308,"f":5e-324,"g":1.5,"h":0}');
  });

  it('a file PUT (file metadata): 422 naming the pointer, nothing signed', async () => {
    const url = `${course.files.member}/exact.bin`;
    const response = await staff().putText(url, '{"size":26214400.0000000001}');
    expect(await detailOf(response)).toMatchObject({ status: 422, code: 'inexact_number' });
    expect((await staff().get(url)).status).toBe(404);
  });

  it('dashboard settings: 422 naming the pointer, nothing changed', async () => {
    const platform = caller(server, platformToken(server));
    const builder = await createBuilder(server, platform);
    const { appId } = await register(builder);
    const refused = await builder.call('PATCH', `/apps/${appId}`, undefined, { raw: '{"description":"new","n":1e999}' });
    expectProblem(refused, 422, 'inexact_number', 'the number 1e999 at /n cannot be stored exactly: it is outside the range of an IEEE-754 double');
    const read = await builder.call<{ description: string | null }>('GET', `/apps/${appId}`);
    expect(read.body.description).not.toBe('new');
  });
});

describe('a body that is not JSON (H-02)', () => {
  it.each(ROW_NAMES)('PUT and PATCH of the %s row, and its file PUT: 422 saying the body is not JSON', async (row) => {
    for (const response of [
      await staff().putText(course.storage[row], '{bad'),
      await patchText(course.storage[row], '{bad'),
      await staff().putText(`${course.files[row]}/k.txt`, '{bad'),
    ]) {
      const problem = await detailOf(response);
      expect(problem).toMatchObject({ status: 422, code: 'malformed_json' });
      expect(problem.detail).toMatch(/^request body is not valid JSON: /);
    }
  });
});

describe('what a GET returns equals what was written (property-based)', () => {
  const objects = fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 8 });

  it('PUT any JSON object, GET it back', async () => {
    const url = course.storage.member_location;
    await fc.assert(
      fc.asyncProperty(objects, async (value) => {
        const put = await staff().put(url, value);
        expect(put.status).toBe(204);
        const got = (await (await staff().get(url)).json()) as unknown;
        expect(got).toEqual(normalised(value));
      }),
      { numRuns: 60 },
    );
  });

  it('PATCH add any JSON value under any key, GET it back', async () => {
    const url = course.storage.member;
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue({ maxDepth: 4 }), async (key, value) => {
        expect((await staff().put(url, {})).status).toBe(204);
        const pointer = `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
        const patched = await staff().patch(url, { patch: [{ op: 'add', path: pointer, value }] });
        expect(patched.status).toBe(204);
        const got = (await (await staff().get(url)).json()) as Record<string, unknown>;
        expect(got).toEqual(normalised({ [key]: value }));
      }),
      { numRuns: 60 },
    );
  });

  it('any integer beyond 2^53 that a double does not hold is refused, and the row is unchanged', async () => {
    const url = course.storage.member;
    await staff().put(url, { kept: true });
    const big = fc.bigInt({ min: 2n ** 53n + 1n, max: 2n ** 80n }).filter((n) => BigInt(Number(n)) !== n);
    await fc.assert(
      fc.asyncProperty(big, fc.boolean(), async (n, negative) => {
        const literal = `${negative ? '-' : ''}${n}`;
        const response = await staff().putText(url, `{"n":${literal}}`);
        expect(await detailOf(response)).toMatchObject({ status: 422, code: 'inexact_number' });
      }),
      { numRuns: 40 },
    );
    expect(await (await staff().get(url)).json()).toEqual({ kept: true });
  });
});
