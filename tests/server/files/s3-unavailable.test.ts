// An object store that cannot be reached (`BLOB_STORE=s3`, decision OBJ-10), over real HTTP: the real
// service on 127.0.0.1 and a real S3-compatible server (s3rver) that the test starts and then stops, so the
// bucket's port is closed. Listing what arrived (which every file read, list and PUT of a row with an
// upload in flight does first) answers 503 `object_store_unavailable` with `Retry-After`, never a 500.

import { afterAll, beforeAll, expect, it } from 'vitest';
import { LOCAL_S3_CREDENTIALS, startLocalS3, type LocalS3 } from '../../../scripts/bench/local-s3.js';
import { startServer, type TestServer } from '../harness.js';
import { api, type Course, setUpCourse, storeFile } from '../rows/helpers.js';

let s3: LocalS3;
let server: TestServer;
let course: Course;
const saved: Record<string, string | undefined> = {};
// s3rver checks no SigV4 signature, so any secret works: one no log line may ever contain (OBJ-01).
const SECRET = 'tis-test-secret-Zq9vX2kP';

beforeAll(async () => {
  for (const [name, value] of Object.entries({ ...LOCAL_S3_CREDENTIALS, AWS_SECRET_ACCESS_KEY: SECRET, AWS_EC2_METADATA_DISABLED: 'true' })) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  s3 = await startLocalS3();
  server = await startServer({ config: { blobStore: 's3', s3: s3.settings } });
  course = await setUpCourse(server);
});
afterAll(async () => {
  await server?.stop();
  await s3?.stop();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

async function expectUnavailable(response: Response): Promise<void> {
  const body = (await response.json()) as Record<string, unknown>;
  expect({ status: response.status, code: body['code'] }).toEqual({ status: 503, code: 'object_store_unavailable' });
  expect(response.headers.get('retry-after')).toBe('1');
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  expect(body['detail']).toBe('the file store cannot be reached; retry shortly');
}

it('answers 503 with Retry-After, not 500, while the bucket is unreachable', async () => {
  const staff = api(course.instructor.auth);
  const files = course.files.member;
  const stored = await storeFile(course.instructor.auth, `${files}/kept.txt`, 'kept');
  expect(stored.upload.status).toBe(204);
  expect((await staff.get(`${files}/kept.txt`)).status).toBe(200);
  // An upload in flight: the next read of the row lists the bucket to see whether it arrived.
  expect((await staff.put(`${files}/pending.txt`, { size: 7 })).status).toBe(200);

  await s3.stop();

  await expectUnavailable(await staff.get(files));
  await expectUnavailable(await staff.get(`${files}/pending.txt`));
  await expectUnavailable(await staff.put(`${files}/pending.txt`, { size: 9 }));

  // A file with no upload in flight is read without the bucket: its download URL is signed locally.
  expect((await staff.get(`${files}/kept.txt`)).status).toBe(200);

  const failures = server.logs.filter((line) => line['level'] === 'error');
  expect(failures).toEqual([]);
  expect(server.logs.some((line) => line['msg'] === 'object store unavailable' || line['message'] === 'object store unavailable')).toBe(true);
  // The failures are logged with the SDK's errors as causes, and never with the credentials (OBJ-01).
  expect(JSON.stringify(server.logs)).not.toContain(SECRET);
});
