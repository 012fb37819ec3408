// Files in an object store (`BLOB_STORE=s3`, decisions OBJ-01 to OBJ-08), end to end over real HTTP: the
// real service on 127.0.0.1, a real S3-compatible server (s3rver) on 127.0.0.1 that the test starts, and the
// tool's side done the way a tool does it (presigned POST, fields first and the file last; presigned GET).
// s3rver enforces no POST policy (OBJ-07), so every refusal here holds because the service checked what
// arrived in the bucket.

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_S3_CREDENTIALS, startLocalS3, type LocalS3 } from '../../../scripts/bench/local-s3.js';
import { isDirectStore, rowObjectPrefix, UNUSED_OBJECT_AGE_MS, type DirectObjectStore, type S3BlobStore } from '../../../server/files/index.js';
import type { Clock, RowKey } from '../../../server/store/index.js';
import { startServer, type TestServer } from '../harness.js';
import { caller, createBuilder, platformToken, register } from '../dashboard/helpers.js';
import { api, type Course, detailOf, postForm, serverFailures, setUpCourse } from '../rows/helpers.js';

class OffsetClock implements Clock {
  offset = 0;
  nowMs(): number {
    return Date.now() + this.offset;
  }
}

interface Form {
  url: string;
  fields: Record<string, string>;
}

let s3: LocalS3;
let server: TestServer;
let course: Course;
let bucket: DirectObjectStore;
const clock = new OffsetClock();
const saved: Record<string, string | undefined> = {};
// s3rver checks no SigV4 signature, so any secret works: one no log line may ever contain (OBJ-01).
const SECRET = 'tis-test-secret-Zq9vX2kP';

beforeAll(async () => {
  // The SDK's default credential chain, as in production: here the environment (never the instance
  // metadata service, which would leave loopback).
  for (const [name, value] of Object.entries({ ...LOCAL_S3_CREDENTIALS, AWS_SECRET_ACCESS_KEY: SECRET, AWS_EC2_METADATA_DISABLED: 'true' })) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  s3 = await startLocalS3();
  server = await startServer({ clock, config: { blobStore: 's3', s3: s3.settings } });
  course = await setUpCourse(server);
  if (!isDirectStore(server.services.blobs)) throw new Error('BLOB_STORE=s3 did not give an object store');
  bucket = server.services.blobs;
});
afterAll(async () => {
  const failures = server ? serverFailures(server.logs) : [];
  const logged = JSON.stringify(server?.logs ?? []);
  await server?.stop();
  await s3?.stop();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  expect(failures).toEqual([]);
  // The credentials were used for every signing and call above, and never logged.
  expect(logged.length).toBeGreaterThan(1000);
  expect(logged).not.toContain(SECRET);
});

const staff = (): ReturnType<typeof api> => api(course.instructor.auth);

async function askToStore(fileUrl: string, body: Record<string, unknown>, auth = course.instructor.auth): Promise<Form> {
  const response = await api(auth).put(fileUrl, body);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as Form;
}

async function list(filesUrl: string): Promise<Array<{ key: string; size: number; modified: number }>> {
  const response = await staff().get(filesUrl);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as never;
}

async function read(fileUrl: string): Promise<{ key: string; size: number; modified: number; content_type: string; url: string; expires: number }> {
  const response = await staff().get(fileUrl);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as never;
}

function decodePolicy(form: Form): { expiration: string; conditions: unknown[] } {
  return JSON.parse(Buffer.from(form.fields['Policy'] ?? '', 'base64').toString('utf8')) as never;
}

/** The member row of the course's student, as the service keys it. */
function memberRow(): RowKey {
  return { appId: course.tool.app.id, contextId: course.placed.context.id, kind: 'member', memberId: course.student.claims.user.member };
}

function contextRow(): RowKey {
  return { appId: course.tool.app.id, contextId: course.placed.context.id, kind: 'context' };
}

/** The object the service keeps a file under. */
async function keptObject(row: RowKey, key: string): Promise<string> {
  const file = await server.services.store.files.get(row, key);
  if (!file) throw new Error(`no file ${key}`);
  return file.blobId;
}

describe('the contract flow through a bucket', () => {
  it('signs a presigned POST, takes the upload in the bucket, lists, reads, downloads, replaces and deletes', async () => {
    const files = course.files.member;
    const fileUrl = `${files}/report.pdf`;
    const v1 = randomBytes(50_000);
    const before = Date.now();
    const form = await askToStore(fileUrl, { size: v1.length, filename: 'Report 1 (final).pdf', attachment: true });

    // The form's url is the bucket, not the service: the bytes never pass through its API.
    expect(form.url).toBe(`${s3.endpoint}/tis-files`);
    const objectName = form.fields['key'] ?? '';
    expect(objectName.startsWith(`${rowObjectPrefix(memberRow())}report.pdf/blb_`)).toBe(true);
    expect(Object.keys(form.fields).sort()).toEqual(
      ['Content-Type', 'Policy', 'X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Signature', 'bucket', 'key'].sort(),
    );

    // Every condition of the signed policy (OBJ-02).
    const policy = decodePolicy(form);
    const reservation = (await server.services.store.files.pendingUploads(memberRow(), 'report.pdf'))[0];
    expect(reservation?.blobId).toBe(objectName);
    const expiration = Date.parse(policy.expiration);
    expect(expiration).toBeLessThanOrEqual(reservation!.expiresAt);
    expect(expiration).toBeGreaterThan(reservation!.expiresAt - 2000);
    expect(reservation!.expiresAt - before).toBeGreaterThanOrEqual(15 * 60 * 1000 - 1000);
    expect(policy.conditions).toEqual(
      expect.arrayContaining([
        ['content-length-range', v1.length, v1.length],
        ['eq', '$Content-Type', 'application/pdf'],
        { bucket: 'tis-files' },
        { key: objectName },
        { 'Content-Type': 'application/pdf' },
        { 'X-Amz-Algorithm': 'AWS4-HMAC-SHA256' },
        { 'X-Amz-Credential': form.fields['X-Amz-Credential'] },
        { 'X-Amz-Date': form.fields['X-Amz-Date'] },
      ]),
    );
    expect(policy.conditions).toHaveLength(8);
    expect(form.fields['X-Amz-Credential']).toMatch(/^S3RVER\/\d{8}\/us-east-1\/s3\/aws4_request$/);

    // Signed but not sent: not listed (GAP-35).
    expect(await list(files)).toEqual([]);
    expect((await postForm(form, v1)).status).toBe(204);

    // Completed: listed with its size and the time the bucket stamped (whole seconds).
    const listed = await list(files);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ key: 'report.pdf', size: v1.length });
    expect(listed[0]!.modified % 1000).toBe(0);
    expect(listed[0]!.modified).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(listed[0]!.modified).toBeLessThanOrEqual(Date.now());

    // Read: a presigned GET of the bucket, with the contract's expiry and headers through response overrides.
    const readAt = Date.now();
    const detail = await read(fileUrl);
    expect(detail).toMatchObject({ key: 'report.pdf', size: v1.length, content_type: 'application/pdf' });
    expect(detail.expires).toBeGreaterThanOrEqual(readAt + 300_000);
    expect(detail.expires).toBeLessThanOrEqual(Date.now() + 300_000);
    const url = new URL(detail.url);
    expect(url.origin).toBe(s3.endpoint);
    // Accepted, the file is kept under a name of its own that no form names (OBJ-20); the form's object is gone.
    const kept = await keptObject(memberRow(), 'report.pdf');
    expect(kept).not.toBe(objectName);
    expect(kept.startsWith(`${rowObjectPrefix(memberRow())}report.pdf/blb_`)).toBe(true);
    expect(await bucket.stat(objectName)).toBeNull();
    expect(url.pathname).toBe(`/tis-files/${kept}`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
    expect(url.searchParams.get('response-content-type')).toBe('application/pdf');
    const got = await fetch(detail.url);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(v1)).toBe(true);
    expect(got.headers.get('content-type')).toBe('application/pdf');
    expect(got.headers.get('content-disposition')).toBe(
      `attachment; filename="Report 1 (final).pdf"; filename*=UTF-8''Report%201%20%28final%29.pdf`,
    );
    expect(got.headers.get('cache-control')).toBe('private, no-store');

    // Replace: a fresh object; the record moves once it arrived; the old object is removed.
    const v2 = randomBytes(1234);
    const second = await askToStore(fileUrl, { size: v2.length });
    expect(second.fields['key']).not.toBe(objectName);
    expect((await read(fileUrl)).size).toBe(v1.length);
    expect((await postForm(second, v2)).status).toBe(204);
    const replaced = await read(fileUrl);
    expect(replaced.size).toBe(v2.length);
    expect(replaced.content_type).toBe('application/pdf');
    expect(Buffer.from(await (await fetch(replaced.url)).arrayBuffer()).equals(v2)).toBe(true);
    // Replacing frees the old object.
    expect(await bucket.stat(kept)).toBeNull();
    const keptV2 = await keptObject(memberRow(), 'report.pdf');
    expect(await bucket.stat(keptV2)).toEqual(expect.objectContaining({ size: v2.length }));
    expect(await bucket.stat(second.fields['key'] ?? '')).toBeNull();

    // Delete removes the record and the object; a second delete is still 204.
    expect((await staff().del(fileUrl)).status).toBe(204);
    expect(await list(files)).toEqual([]);
    expect(await bucket.stat(keptV2)).toBeNull();
    expect(await bucket.list(rowObjectPrefix(memberRow()))).toEqual(new Map());
    expect((await staff().del(fileUrl)).status).toBe(204);
    expect((await staff().get(fileUrl)).status).toBe(404);
  });

  it('refuses an upload whose size is not the signed size, keeping the previous file', async () => {
    const files = course.files.context;
    const fileUrl = `${files}/notes.txt`;
    const first = await askToStore(fileUrl, { size: 5 });
    expect((await postForm(first, 'hello')).status).toBe(204);
    expect((await read(fileUrl)).size).toBe(5);

    const wrong = await askToStore(fileUrl, { size: 10 });
    // s3rver takes it (it enforces no policy); the service refuses it when it looks.
    expect((await postForm(wrong, 'eleven byte')).status).toBe(204);
    expect(await bucket.stat(wrong.fields['key'] ?? '')).not.toBeNull();
    expect(await list(files)).toEqual([expect.objectContaining({ key: 'notes.txt', size: 5 })]);
    const kept = await read(fileUrl);
    expect(Buffer.from(await (await fetch(kept.url)).arrayBuffer()).toString()).toBe('hello');
    expect(await bucket.stat(wrong.fields['key'] ?? '')).toBeNull();
    expect(await bucket.stat(await keptObject(contextRow(), 'notes.txt'))).toEqual(expect.objectContaining({ size: 5 }));
    // Short is refused too.
    const short = await askToStore(fileUrl, { size: 10 });
    expect((await postForm(short, 'short')).status).toBe(204);
    expect((await read(fileUrl)).size).toBe(5);
    expect(server.logs.some((l) => l['msg'] === 'an upload that reached the bucket was refused')).toBe(true);
  });

  it('refuses an upload that arrived after its form expired, keeping the previous file', async () => {
    const files = course.files.location;
    const fileUrl = `${files}/late.bin`;
    const first = await askToStore(fileUrl, { size: 3 });
    expect((await postForm(first, 'one')).status).toBe(204);
    expect((await list(files)).map((f) => f.key)).toEqual(['late.bin']);

    // Signed half an hour ago (the service's clock), posted now: 15 minutes past its end, beyond the
    // five minutes' tolerance (OBJ-05).
    clock.offset = -30 * 60 * 1000;
    let late: Form;
    try {
      late = await askToStore(fileUrl, { size: 3 });
    } finally {
      clock.offset = 0;
    }
    expect((await postForm(late, 'two')).status).toBe(204);
    const listed = await list(files);
    expect(listed).toEqual([expect.objectContaining({ key: 'late.bin', size: 3 })]);
    expect(Buffer.from(await (await fetch((await read(fileUrl)).url)).arrayBuffer()).toString()).toBe('one');
    expect(await bucket.stat(late.fields['key'] ?? '')).toBeNull();

    // A form never used: after its end plus the tolerance it is no longer pending.
    clock.offset = -30 * 60 * 1000;
    try {
      await askToStore(`${files}/never.bin`, { size: 9 });
    } finally {
      clock.offset = 0;
    }
    const locationRow: RowKey = { appId: course.tool.app.id, contextId: course.placed.context.id, kind: 'location', locationId: course.placed.location.id };
    expect(await server.services.store.files.pendingUploads(locationRow, 'never.bin')).toHaveLength(1);
    expect((await list(files)).map((f) => f.key)).toEqual(['late.bin']);
    expect(await server.services.store.files.pendingUploads(locationRow, 'never.bin')).toHaveLength(0);
  });

  it('keeps quotas exact: forms in flight hold their size until they expire, completed files hold theirs', async () => {
    const files = course.files.member_location;
    const big = 26_214_400;
    for (const key of ['q1', 'q2', 'q3']) await askToStore(`${files}/${key}`, { size: big });
    const small = await askToStore(`${files}/q4`, { size: 1000 });
    expect((await postForm(small, randomBytes(1000))).status).toBe(204);

    const refused = await staff().put(`${files}/q5`, { size: big });
    expect(await detailOf(refused)).toEqual({
      status: 422,
      code: 'file_bytes_quota_exceeded',
      detail: `file quota exceeded: a row keeps at most 104857600 bytes (100 MB) of files; ${3 * big + 1000} are stored or reserved and this file needs ${big}`,
    });
    // Never completed: not listed, and past the forms' end they hold nothing.
    expect(await list(files)).toEqual([expect.objectContaining({ key: 'q4', size: 1000 })]);
    clock.offset = 16 * 60 * 1000;
    try {
      const allowed = await staff().put(`${files}/q5`, { size: big });
      expect(allowed.status).toBe(200);
      // The completed file still counts: 1000 + 4 × 25 MB would not fit.
      for (const key of ['q6', 'q7', 'q8']) expect((await staff().put(`${files}/${key}`, { size: big })).status).toBe(key === 'q8' ? 422 : 200);
    } finally {
      clock.offset = 0;
    }
  });

  it('names objects so that no tool reaches another tool\'s or another row\'s objects', async () => {
    // A second tool in the same course: its form names its own prefix only.
    const other = await setUpCourse(server);
    const form = await askToStore(`${other.files.context}/notes.txt`, { size: 1 }, other.instructor.auth);
    const ownPrefix = rowObjectPrefix({ appId: other.tool.app.id, contextId: other.placed.context.id, kind: 'context' });
    expect(form.fields['key']?.startsWith(ownPrefix)).toBe(true);
    expect(ownPrefix.startsWith(rowObjectPrefix({ appId: course.tool.app.id, contextId: course.placed.context.id, kind: 'context' }))).toBe(false);
    // Another tool's token on this tool's files URL: refused before anything is signed.
    const foreign = await api(other.instructor.auth).put(`${course.files.context}/x.txt`, { size: 1 });
    expect([403, 404]).toContain(foreign.status);
  });
});

/** Runs the object store's sweep (OBJ-21) as if `UNUSED_OBJECT_AGE_MS` had passed since now. */
function sweepLater(): Promise<number> {
  return (bucket as S3BlobStore).sweepUnused({
    inUse: (names) => server.services.store.files.blobsInUse(names),
    nowMs: () => Date.now() + UNUSED_OBJECT_AGE_MS + 5_000,
    olderThanMs: UNUSED_OBJECT_AGE_MS,
  });
}

async function download(fileUrl: string): Promise<string> {
  return Buffer.from(await (await fetch((await read(fileUrl)).url)).arrayBuffer()).toString();
}

describe('bytes the service did not check (s3rver enforces no policy)', () => {
  it('never serves or counts a form posted again after its upload was accepted, and sweeps what it wrote', async () => {
    const other = await setUpCourse(server);
    const files = other.files.context;
    const fileUrl = `${files}/once.txt`;
    const row: RowKey = { appId: other.tool.app.id, contextId: other.placed.context.id, kind: 'context' };
    const as = (url: string): Promise<Array<{ key: string; size: number }>> =>
      api(other.instructor.auth).get(url).then((r) => r.json() as never);
    const response = await api(other.instructor.auth).put(fileUrl, { size: 5 });
    const form = (await response.json()) as Form;
    expect((await postForm(form, 'hello')).status).toBe(204);
    expect(await as(files)).toEqual([expect.objectContaining({ key: 'once.txt', size: 5 })]);
    const kept = (await server.services.store.files.get(row, 'once.txt'))!.blobId;

    // The same form again, with other bytes of another size and of the same size: the bucket takes both.
    expect((await postForm(form, 'a much longer text than was signed')).status).toBe(204);
    expect((await postForm(form, 'jello')).status).toBe(204);
    expect(await bucket.stat(form.fields['key'] ?? '')).not.toBeNull();
    // Listed, counted and downloaded as accepted: the record names the kept copy, which no form reaches.
    expect(await as(files)).toEqual([expect.objectContaining({ key: 'once.txt', size: 5 })]);
    const detail = (await api(other.instructor.auth).get(fileUrl).then((r) => r.json())) as { url: string; size: number };
    expect(detail.size).toBe(5);
    expect(Buffer.from(await (await fetch(detail.url)).arrayBuffer()).toString()).toBe('hello');
    expect(await server.services.store.files.usage(row)).toMatchObject({ files: 1, bytes: 5 });
    expect(await bucket.stat(kept)).toEqual(expect.objectContaining({ size: 5 }));

    // The sweep removes what the second posts wrote once it is old, and nothing a record uses: not the kept
    // file, nor an upload that arrived but was not looked at yet.
    const inFlight = (await api(other.instructor.auth).put(`${files}/in-flight.txt`, { size: 2 }).then((r) => r.json())) as Form;
    expect((await postForm(inFlight, 'ok')).status).toBe(204);
    await (bucket as S3BlobStore).sweepUnused({
      inUse: (names) => server.services.store.files.blobsInUse(names),
      nowMs: () => Date.now(),
      olderThanMs: UNUSED_OBJECT_AGE_MS,
    });
    expect(await bucket.stat(form.fields['key'] ?? '')).not.toBeNull();
    expect(await sweepLater()).toBeGreaterThanOrEqual(1);
    expect([...(await bucket.list(rowObjectPrefix(row))).keys()].sort()).toEqual([kept, inFlight.fields['key']].sort());
    expect(Buffer.from(await (await fetch(detail.url)).arrayBuffer()).toString()).toBe('hello');
  });

  it('counts an upload only once a HEAD of what it keeps shows the signed content type (OBJ-30)', async () => {
    const files = course.files.member;
    const fileUrl = `${files}/answer.txt`;
    const first = await askToStore(fileUrl, { size: 5 });
    expect((await postForm(first, 'hello')).status).toBe(204);
    const accepted = await read(fileUrl);
    expect(accepted.content_type).toBe(first.fields['Content-Type']);

    // A form posted with its Content-Type field altered and bytes of the signed size: s3rver keeps the
    // altered type (it enforces no policy); the service refuses it when it looks, and the earlier file stays.
    const typed = await askToStore(fileUrl, { size: 5 });
    expect((await postForm({ url: typed.url, fields: { ...typed.fields, 'Content-Type': 'text/html' } }, '<b>x<')).status).toBe(204);
    expect(await bucket.stat(typed.fields['key'] ?? '')).toEqual(expect.objectContaining({ size: 5, contentType: 'text/html' }));
    expect(await list(files)).toEqual([expect.objectContaining({ key: 'answer.txt', size: 5, modified: accepted.modified })]);
    const after = await read(fileUrl);
    const served = await fetch(after.url);
    expect(served.headers.get('content-type')).toBe(accepted.content_type);
    expect(Buffer.from(await served.arrayBuffer()).toString()).toBe('hello');
    expect(await bucket.stat(typed.fields['key'] ?? '')).toBeNull();
    const refusals = server.logs.filter((l) => l['msg'] === 'an upload that reached the bucket was refused').map((l) => String(l['reason']));
    expect(refusals).toContainEqual(expect.stringContaining('content type "text/html" is not the signed'));

    // The accepted form posted again with other bytes and the altered type: never served as the file.
    expect((await postForm({ url: first.url, fields: { ...first.fields, 'Content-Type': 'text/html' } }, '<i>y<')).status).toBe(204);
    const again = await fetch((await read(fileUrl)).url);
    expect(again.headers.get('content-type')).toBe(accepted.content_type);
    expect(Buffer.from(await again.arrayBuffer()).toString()).toBe('hello');
    expect(await bucket.stat(await keptObject(memberRow(), 'answer.txt'))).toEqual(expect.objectContaining({ size: 5, contentType: accepted.content_type }));
  });

  it('leaves no object of a Sandbox reset behind: files, uploads in flight, forms posted again or after it', async () => {
    const builder = await createBuilder(server, caller(server, platformToken(server)), 'S3 Reset Builder');
    const { appId } = await register(builder, { name: 'Reset files tool', hosting: 'self_hosted', contract_version: '2026-08-19' });
    expect((await builder.call('POST', `/apps/${appId}/sandbox/picker`)).status).toBe(200);
    const placed = await builder.call<{ context_id: string }>('POST', `/apps/${appId}/sandbox/placements`, { extid: 'home' });
    expect(placed.status).toBe(201);
    // The trial course's context row, worked through the service's own file transfer.
    const row: RowKey = { appId, contextId: placed.body.context_id, kind: 'context' };
    const files = server.services.files;
    const request = (size: number): { size: number; mimetype: string; filename: string; attachment: boolean } => ({ size, mimetype: '', filename: '', attachment: false });
    const stored = await files.requestUpload(row, 'stored.txt', request(3));
    expect((await postForm(stored, 'abc')).status).toBe(204);
    expect((await files.list(row)).map((f) => f.key)).toEqual(['stored.txt']);
    // Posted again after it was accepted, posted but not yet looked at, signed and not yet posted.
    expect((await postForm(stored, 'xyz')).status).toBe(204);
    const inFlight = await files.requestUpload(row, 'in-flight.txt', request(4));
    expect((await postForm(inFlight, 'abcd')).status).toBe(204);
    const unposted = await files.requestUpload(row, 'later.txt', request(2));
    expect((await bucket.list(rowObjectPrefix(row))).size).toBe(3);

    expect((await builder.call('POST', `/apps/${appId}/sandbox/reset`)).status).toBe(204);
    expect(await files.list(row)).toEqual([]);
    expect(await bucket.list(rowObjectPrefix(row))).toEqual(new Map());

    // A form still valid, posted after the reset: the bucket takes it, no record names it, the sweep removes it.
    expect((await postForm(unposted, 'ab')).status).toBe(204);
    expect(await files.list(row)).toEqual([]);
    expect((await bucket.list(rowObjectPrefix(row))).size).toBe(1);
    await sweepLater();
    expect(await bucket.list(rowObjectPrefix(row))).toEqual(new Map());
  });
});
