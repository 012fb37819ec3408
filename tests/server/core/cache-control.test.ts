// H-06: every answer to a request with a credential says `Cache-Control: no-store` (rows, file metadata,
// scores, the dashboard API, refusals too); a download says how long its signed URL lets a browser keep it.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../harness.js';
import { caller, platformToken } from '../dashboard/helpers.js';
import { api, type Course, setUpCourse, storeFile } from '../rows/helpers.js';

let server: TestServer;
let course: Course;

beforeAll(async () => {
  server = await startServer();
  course = await setUpCourse(server);
});
afterAll(async () => {
  await server?.stop();
});

describe('Cache-Control on authenticated answers (H-06)', () => {
  it('rows, file metadata and file lists, writes and refusals: no-store', async () => {
    const staff = api(course.instructor.auth);
    const student = api(course.student.auth);
    const { upload } = await storeFile(course.instructor.auth, `${course.files.member}/notes.txt`, 'hello');
    expect(upload.status).toBe(204);
    const answers = [
      await staff.put(course.storage.member, { a: 1 }),
      await staff.patch(course.storage.member, { patch: [{ op: 'add', path: '/b', value: 2 }] }),
      await staff.get(course.storage.member),
      await student.get(course.storage.context),
      await staff.get(course.files.member),
      await staff.get(`${course.files.member}/notes.txt`),
      await staff.put(`${course.files.member}/other.txt`, { size: 3 }),
      await student.put(course.storage.context, { no: true }),
      await api('Bearer tis_at_unknown').get(course.storage.member),
    ];
    expect(answers.map((r) => r.status)).toEqual([204, 204, 200, 200, 200, 200, 200, 403, 401]);
    for (const answer of answers) expect(answer.headers.get('cache-control')).toBe('no-store');
  });

  it('the dashboard API: no-store', async () => {
    const platform = caller(server, platformToken(server));
    const listed = await platform('GET', '/apps');
    expect(listed.status).toBe(200);
    expect(listed.headers.get('cache-control')).toBe('no-store');
  });

  it('a download may be kept by the browser for what is left of its signed URL, and by no shared cache', async () => {
    await storeFile(course.instructor.auth, `${course.files.member}/kept.txt`, 'bytes');
    const detail = (await (await api(course.instructor.auth).get(`${course.files.member}/kept.txt`)).json()) as { url: string; expires: number };
    const before = Date.now();
    const download = await fetch(detail.url);
    expect(download.status).toBe(200);
    const header = download.headers.get('cache-control') ?? '';
    const maxAge = Number(/^private, max-age=(\d+)$/.exec(header)?.[1]);
    expect(maxAge).toBeGreaterThan(0);
    expect(maxAge).toBeLessThanOrEqual(Math.ceil((detail.expires - before) / 1000));
  });
});
