// Files beside the rows over real HTTP against the real app (real SQLite file, responses validated): the
// four operations on each row, the signed upload form and its target, signed downloads, replacement
// without loss, quotas, and what is refused with which message.

import { randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../../server/store/index.js';
import { startServer, TEST_BLOB_STORE, type TestServer } from '../harness.js';
import { api, type Course, detailOf, postForm, ROW_NAMES, setUpCourse, storeFile, serverFailures } from '../rows/helpers.js';

/** Real time plus an offset the tests move: expiry without sleeping, and nothing else disturbed. */
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

let server: TestServer;
let course: Course;
const clock = new OffsetClock();

beforeAll(async () => {
  server = await startServer({ clock });
  course = await setUpCourse(server);
});
afterAll(async () => {
  const failures = server ? serverFailures(server.logs) : [];
  await server?.stop();
  expect(failures).toEqual([]);
});

const staff = (): ReturnType<typeof api> => api(course.instructor.auth);

async function askToStore(fileUrl: string, body: Record<string, unknown>, auth = course.instructor.auth): Promise<Form> {
  const response = await api(auth).put(fileUrl, body);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as Form;
}

async function readFile(fileUrl: string): Promise<{ key: string; size: number; modified: number; content_type: string; url: string; expires: number }> {
  const response = await staff().get(fileUrl);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as never;
}

async function download(url: string): Promise<{ status: number; bytes: Buffer; headers: Headers }> {
  const response = await fetch(url);
  return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()), headers: response.headers };
}

/**
 * Stored blobs, in the blob store the suite runs on (`TIS_TEST_BLOB_STORE`): files under DATA_DIR/blobs
 * (temporary files excluded), or complete blobs in the database's `blobs` table.
 */
async function blobCount(): Promise<number> {
  if (TEST_BLOB_STORE === 'postgres') {
    const row = await server.services.store.driver.get<{ n: number | string }>("SELECT COUNT(*) AS n FROM blobs WHERE state = 'complete'");
    return Number(row?.n ?? 0);
  }
  const root = join(server.dataDir, 'blobs');
  let count = 0;
  for (const dir of readdirSync(root)) {
    if (dir === 'tmp') continue;
    const path = join(root, dir);
    if (statSync(path).isDirectory()) count += readdirSync(path).length;
  }
  return count;
}

/** Uploads in progress: temporary files on disk, or blobs still `writing` in the database. */
async function tempFiles(): Promise<string[]> {
  if (TEST_BLOB_STORE === 'postgres') {
    const rows = await server.services.store.driver.all<{ id: string }>("SELECT id FROM blobs WHERE state = 'writing'");
    return rows.map((r) => r.id);
  }
  return readdirSync(join(server.dataDir, 'blobs', 'tmp'));
}

async function eventually(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i += 1) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for: ${what}`);
}

/** A multipart upload sent by hand, so a test can stop it halfway. */
function startRawUpload(form: Form, size: number): {
  req: ClientRequest;
  sendFile(bytes: Buffer): void;
  finish(): Promise<{ status: number; body: string }>;
} {
  const boundary = `----tis${randomBytes(8).toString('hex')}`;
  let head = '';
  for (const [name, value] of Object.entries(form.fields)) {
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  }
  head += `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const length = Buffer.byteLength(head) + size + Buffer.byteLength(tail);
  let resolveResponse: (r: IncomingMessage) => void = () => undefined;
  const responded = new Promise<IncomingMessage>((resolve) => {
    resolveResponse = resolve;
  });
  const req = request(form.url, {
    method: 'POST',
    headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Content-Length': String(length) },
  });
  req.on('response', resolveResponse);
  req.on('error', () => undefined);
  req.write(head);
  return {
    req,
    sendFile: (bytes) => req.write(bytes),
    finish: async () => {
      req.end(tail);
      const response = await responded;
      let body = '';
      for await (const chunk of response) body += String(chunk);
      return { status: response.statusCode ?? 0, body };
    },
  };
}

describe('the four operations on each row', () => {
  it.each(ROW_NAMES)('%s row: list, ask to store, upload, read, download, delete', async (row) => {
    const files = course.files[row];
    expect(await (await staff().get(files)).json()).toEqual([]);

    const bytes = randomBytes(70_000);
    const form = await askToStore(`${files}/data.bin`, { size: bytes.length });
    expect(form.url).toBe(`${server.url}/uploads`);
    expect(Object.keys(form.fields).sort()).toEqual(['policy', 'signature']);
    // Signed but not sent: not listed (GAP-35).
    expect(await (await staff().get(files)).json()).toEqual([]);

    const before = clock.nowMs();
    const upload = await postForm(form, bytes);
    expect(upload.status, await upload.clone().text()).toBe(204);

    const listed = (await (await api(course.student.auth).get(files)).json()) as Array<{ key: string; size: number; modified: number }>;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ key: 'data.bin', size: bytes.length });
    expect(listed[0]!.modified).toBeGreaterThanOrEqual(before - 5);

    const read = await readFile(`${files}/data.bin`);
    expect(read).toMatchObject({ key: 'data.bin', size: bytes.length, content_type: 'application/octet-stream', modified: listed[0]!.modified });
    expect(read.url.startsWith(`${server.url}/v1/downloads/`)).toBe(true);
    // Decision GAP-07: the URL lives 5 minutes; `expires` is in milliseconds.
    expect(read.expires - clock.nowMs()).toBeGreaterThan(5 * 60 * 1000 - 5_000);
    expect(read.expires - clock.nowMs()).toBeLessThanOrEqual(5 * 60 * 1000);

    const got = await download(read.url);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(bytes)).toBe(true);

    expect((await staff().del(`${files}/data.bin`)).status).toBe(204);
    expect(await (await staff().get(files)).json()).toEqual([]);
    expect(await detailOf(await staff().get(`${files}/data.bin`))).toEqual({
      status: 404,
      code: 'file_not_found',
      detail: 'no file with key data.bin in this row',
    });
    // DELETE answers 204 also when no file existed.
    expect((await staff().del(`${files}/data.bin`)).status).toBe(204);
    // The URL handed out before the delete names a file that is gone (S-02).
    expect(await detailOf(await fetch(read.url))).toEqual({ status: 404, code: 'file_not_found', detail: 'the file no longer exists' });
  });

  it('lists files sorted by key, in code-unit order, case-sensitive (S-02, GAP-36)', async () => {
    const fresh = await setUpCourse(server);
    const keys = ['b.txt', 'a.txt', 'A.txt', '9.txt', '10.txt', 'a.txt.bak', 'Report.pdf', 'report.pdf'];
    for (const key of keys) {
      const stored = await storeFile(fresh.student.auth, `${fresh.files.member}/${key}`, key);
      expect(stored.upload.status).toBe(204);
    }
    const listed = (await (await api(fresh.student.auth).get(fresh.files.member)).json()) as Array<{ key: string; size: number }>;
    expect(listed.map((f) => f.key)).toEqual(['10.txt', '9.txt', 'A.txt', 'Report.pdf', 'a.txt', 'a.txt.bak', 'b.txt', 'report.pdf']);
    expect(listed.map((f) => f.size)).toEqual(listed.map((f) => f.key.length));
  });

  it('stores an empty file', async () => {
    const stored = await storeFile(course.instructor.auth, `${course.files.member}/empty.txt`, '');
    expect(stored.upload.status).toBe(204);
    const read = await readFile(`${course.files.member}/empty.txt`);
    expect(read.size).toBe(0);
    const got = await download(read.url);
    expect(got.status).toBe(200);
    expect(got.bytes.length).toBe(0);
  });
});

describe('content type, filename and attachment', () => {
  it('guesses the type from the filename, then the key; serves inline with the key as name by default', async () => {
    const files = course.files.member;
    await storeFile(course.instructor.auth, `${files}/notes.csv`, 'a,b\n1,2\n');
    let read = await readFile(`${files}/notes.csv`);
    expect(read.content_type).toBe('text/csv');
    let got = await download(read.url);
    expect(got.headers.get('content-type')).toBe('text/csv');
    expect(got.headers.get('content-disposition')).toBe(`inline; filename="notes.csv"; filename*=UTF-8''notes.csv`);
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(got.headers.get('content-security-policy')).toBe('sandbox');
    expect(got.headers.get('content-length')).toBe('8');

    await storeFile(course.instructor.auth, `${files}/upload-1`, '%PDF-1.7', { filename: 'Lab report, week 3.pdf', mimetype: '' });
    read = await readFile(`${files}/upload-1`);
    expect(read.content_type).toBe('application/pdf');

    await storeFile(course.instructor.auth, `${files}/blob`, 'x');
    expect((await readFile(`${files}/blob`)).content_type).toBe('application/octet-stream');
  });

  it('serves the given media type, and attachment makes the download save under the filename', async () => {
    const files = course.files.member;
    await storeFile(course.instructor.auth, `${files}/page.html`, '<script>alert(1)</script>', {
      mimetype: 'text/html; charset=utf-8',
      filename: 'Résumé "final".html',
      attachment: true,
    });
    const read = await readFile(`${files}/page.html`);
    expect(read.content_type).toBe('text/html; charset=utf-8');
    const got = await download(read.url);
    expect(got.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(got.headers.get('content-disposition')).toBe(
      `attachment; filename="R_sum_ _final_.html"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22.html`,
    );
    // Uploaded HTML cannot run script on the service's origin even if shown inline (S-02).
    expect(got.headers.get('content-security-policy')).toBe('sandbox');
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('requests refused with the contract messages', () => {
  it('refuses a key that breaks the key rules on every method (GAP-03)', async () => {
    const message = "invalid file key: 1 to 128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit";
    for (const key of ['.hidden', '-dash', 'x'.repeat(129), 'a%20b', 'caf%C3%A9.txt', 'a~b']) {
      const url = `${course.files.member}/${key}`;
      for (const call of [() => staff().get(url), () => staff().put(url, { size: 1 }), () => staff().del(url)]) {
        expect(await detailOf(await call()), key).toEqual({ status: 422, code: 'invalid_file_key', detail: message });
      }
    }
    // 128 characters is fine.
    expect((await staff().put(`${course.files.member}/${'k'.repeat(128)}`, { size: 1 })).status).toBe(200);
  });

  it('refuses a file PUT body that breaks a rule (GAP-04, S-01), signing nothing', async () => {
    const url = `${course.files.member}/refused.bin`;
    const cases: Array<[unknown, string]> = [
      [{}, 'size is required'],
      [{ size: -1 }, 'size must be a non-negative integer'],
      [{ size: 2.5 }, 'size must be a non-negative integer'],
      [{ size: '12' }, 'size must be a non-negative integer'],
      [{ size: 26_214_401 }, 'size must be at most 26214400 bytes (25 MB)'],
      [{ size: 1, expires: 0 }, 'unknown field: expires'],
      [{ size: 1, mimetype: 'not a type' }, 'mimetype must be a media type such as text/plain'],
      [{ size: 1, filename: 'dir/name.txt' }, "filename must be at most 255 characters with no control characters, '/' or '\\'"],
      [{ size: 1, filename: 'x'.repeat(256) }, "filename must be at most 255 characters with no control characters, '/' or '\\'"],
    ];
    for (const [body, message] of cases) {
      const problem = await detailOf(await staff().put(url, body));
      expect(problem, JSON.stringify(body)).toMatchObject({ status: 422, detail: message });
    }
    expect((await staff().put(url, { size: 26_214_400 })).status).toBe(200);
  });

  it('answers 404 for a file of another tool and for a missing key', async () => {
    const other = await setUpCourse(server);
    await storeFile(other.instructor.auth, `${other.files.context}/theirs.txt`, 'x');
    expect(await detailOf(await staff().get(`${other.files.context}/theirs.txt`))).toMatchObject({ status: 404, code: 'row_not_found' });
    expect(await detailOf(await staff().get(other.files.context))).toMatchObject({ status: 404, code: 'row_not_found' });
    expect(await detailOf(await staff().get(`${course.files.context}/nothing-here.txt`))).toMatchObject({
      status: 404,
      detail: 'no file with key nothing-here.txt in this row',
    });
  });

  it('answers 422 on the files of an unprovisioned context or location, never on member files', async () => {
    const fresh = await setUpCourse(server, { provisionContext: false, provisionLocation: false });
    const teacher = api(fresh.instructor.auth);
    for (const row of ['context', 'location'] as const) {
      for (const call of [
        () => teacher.get(fresh.files[row]),
        () => teacher.get(`${fresh.files[row]}/a.txt`),
        () => teacher.put(`${fresh.files[row]}/a.txt`, { size: 1 }),
        () => teacher.del(`${fresh.files[row]}/a.txt`),
      ]) {
        const problem = await detailOf(await call());
        expect(problem).toMatchObject({ status: 422, code: 'level_not_provisioned' });
        expect(problem.detail).toMatch(/is not provisioned yet: the tool must PUT its provision URL first$/);
      }
    }
    expect((await storeFile(fresh.student.auth, `${fresh.files.member_location}/ok.txt`, 'ok')).upload.status).toBe(204);
  });
});

describe('the upload target', () => {
  it('refuses a file of another size than signed, shorter or longer, and stores nothing (GAP-05)', async () => {
    const url = `${course.files.member}/exact.txt`;
    await storeFile(course.instructor.auth, url, 'original');
    const blobs = await blobCount();
    const form = await askToStore(url, { size: 10 });
    for (const body of ['123456789', '12345678901', '']) {
      expect(await detailOf(await postForm(form, body))).toEqual({
        status: 422,
        code: 'upload_size_mismatch',
        detail: 'uploaded size does not match the signed size',
      });
    }
    expect((await download((await readFile(url)).url)).bytes.toString()).toBe('original');
    expect(await blobCount()).toBe(blobs);
    expect(await tempFiles()).toEqual([]);
    // The form is still good for a file of the right size.
    expect((await postForm(form, '1234567890')).status).toBe(204);
    expect((await download((await readFile(url)).url)).bytes.toString()).toBe('1234567890');
    // The old blob went with the replacement.
    expect(await blobCount()).toBe(blobs);
  });

  it('refuses an altered policy, an altered or missing signature (403 invalid upload signature)', async () => {
    const form = await askToStore(`${course.files.member}/signed.txt`, { size: 3 });
    const policy = JSON.parse(Buffer.from(form.fields['policy']!, 'base64url').toString()) as Record<string, unknown>;
    const forgedPolicy = Buffer.from(JSON.stringify({ ...policy, size: 4 })).toString('base64url');
    const signature = form.fields['signature']!;
    const altered = signature.slice(0, -2) + (signature.endsWith('AA') ? 'BB' : 'AA');
    const forgeries: Array<Record<string, string>> = [
      { policy: forgedPolicy, signature },
      { policy: form.fields['policy']!, signature: altered },
      { policy: form.fields['policy']! },
      {},
    ];
    for (const fields of forgeries) {
      expect(await detailOf(await postForm({ url: form.url, fields }, fields['policy'] === forgedPolicy ? 'abcd' : 'abc'))).toEqual({
        status: 403,
        code: 'invalid_upload_signature',
        detail: 'invalid upload signature',
      });
    }
    expect(await (await staff().get(`${course.files.member}/signed.txt`)).status).toBe(404);
  });

  it('refuses a form without a file, a field after the file, and a body that is not multipart', async () => {
    const form = await askToStore(`${course.files.member}/order.txt`, { size: 3 });
    const noFile = new FormData();
    for (const [k, v] of Object.entries(form.fields)) noFile.append(k, v);
    expect(await detailOf(await fetch(form.url, { method: 'POST', body: noFile }))).toEqual({
      status: 422,
      code: 'upload_file_missing',
      detail: 'the upload form has no file field',
    });
    const late = new FormData();
    for (const [k, v] of Object.entries(form.fields)) late.append(k, v);
    late.append('file', new Blob(['abc']), 'a.txt');
    late.append('note', 'after the file');
    expect(await detailOf(await fetch(form.url, { method: 'POST', body: late }))).toEqual({
      status: 422,
      code: 'upload_file_not_last',
      detail: 'the file field must be the last field of the upload form',
    });
    // A field this version does not name, before the file, is fine.
    const extra = new FormData();
    extra.append('x-extra', 'ignored');
    for (const [k, v] of Object.entries(form.fields)) extra.append(k, v);
    extra.append('file', new Blob(['abc']), 'a.txt');
    expect((await fetch(form.url, { method: 'POST', body: extra })).status).toBe(204);

    const json = await fetch(form.url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(form.fields) });
    expect(await detailOf(json)).toEqual({ status: 415, code: 'unsupported_media_type', detail: 'Content-Type must be multipart/form-data' });
    expect(await tempFiles()).toEqual([]);
  });

  it('answers 413 to a body larger than any upload can be, without reading it', async () => {
    const form = await askToStore(`${course.files.member}/huge.bin`, { size: 26_214_400 });
    const raw = startRawUpload(form, 26_214_400 + 65_536 + 1);
    const response = await new Promise<IncomingMessage>((resolve) => raw.req.on('response', resolve));
    let body = '';
    for await (const chunk of response) body += String(chunk);
    raw.req.destroy();
    expect(response.statusCode).toBe(413);
    expect(JSON.parse(body)).toMatchObject({
      code: 'upload_too_large',
      detail: 'upload body exceeds 26279936 bytes (a 25 MB file and 64 KB of form fields)',
    });
  });

  it('may be used again until it expires; each use stores the same key again (S-02)', async () => {
    const url = `${course.files.member}/reused.txt`;
    const form = await askToStore(url, { size: 5 });
    expect((await postForm(form, 'first')).status).toBe(204);
    const firstUrl = (await readFile(url)).url;
    expect((await postForm(form, 'again')).status).toBe(204);
    expect((await download((await readFile(url)).url)).bytes.toString()).toBe('again');
    expect((await fetch(firstUrl)).status).toBe(404);
  });

  it('refuses a form used after its 15 minutes (GAP-05)', async () => {
    const url = `${course.files.member}/late.txt`;
    const form = await askToStore(url, { size: 4 });
    const policy = JSON.parse(Buffer.from(form.fields['policy']!, 'base64url').toString()) as { expires: number };
    expect(policy.expires - clock.nowMs()).toBeGreaterThan(15 * 60 * 1000 - 5_000);
    expect(policy.expires - clock.nowMs()).toBeLessThanOrEqual(15 * 60 * 1000);
    const saved = clock.offset;
    // Just past the form's own expiry, from the wall clock at that moment (as for downloads below).
    clock.offset = policy.expires + 1_000 - Date.now();
    try {
      expect(await detailOf(await postForm(form, 'late'))).toEqual({ status: 403, code: 'upload_form_expired', detail: 'upload form expired' });
      expect((await staff().get(url)).status).toBe(404);
    } finally {
      clock.offset = saved;
    }
  });

  it('a DELETE does not cancel an upload in flight (S-02)', async () => {
    const url = `${course.files.member}/inflight.txt`;
    const form = await askToStore(url, { size: 2 });
    expect((await staff().del(url)).status).toBe(204);
    expect((await postForm(form, 'ok')).status).toBe(204);
    expect((await readFile(url)).size).toBe(2);
  });
});

describe('replacement never loses the old file', () => {
  it('keeps serving the old file while a replacement is in flight, after it is abandoned, until one completes', async () => {
    const url = `${course.files.member_location}/essay.txt`;
    const v1 = Buffer.from('version one of the essay');
    expect((await storeFile(course.student.auth, url, v1)).upload.status).toBe(204);
    const v1Url = (await readFile(url)).url;
    const blobs = await blobCount();

    const v2 = randomBytes(400_000);
    const form = await askToStore(url, { size: v2.length }, course.student.auth);
    const raw = startRawUpload(form, v2.length);
    raw.sendFile(v2.subarray(0, 200_000));
    // Half the bytes are on the server: the old file is still the file.
    await eventually(async () => (await tempFiles()).length === 1, 'the upload to reach the blob store');
    expect((await readFile(url)).size).toBe(v1.length);
    expect((await download(v1Url)).bytes.equals(v1)).toBe(true);
    expect(((await (await staff().get(course.files.member_location)).json()) as Array<{ key: string; size: number }>).find((f) => f.key === 'essay.txt')?.size).toBe(v1.length);

    // The client goes away mid-upload: nothing changes, and the partial bytes are cleaned up.
    raw.req.destroy();
    await eventually(async () => (await tempFiles()).length === 0, 'the abandoned upload to be cleaned up');
    expect((await readFile(url)).size).toBe(v1.length);
    expect((await download(v1Url)).bytes.equals(v1)).toBe(true);
    expect(await blobCount()).toBe(blobs);

    // The same form completes the replacement; the old URL now names a file that is gone (S-02).
    const done = startRawUpload(form, v2.length);
    done.sendFile(v2);
    expect((await done.finish()).status).toBe(204);
    const read = await readFile(url);
    expect(read.size).toBe(v2.length);
    expect((await download(read.url)).bytes.equals(v2)).toBe(true);
    expect(await detailOf(await fetch(v1Url))).toEqual({ status: 404, code: 'file_not_found', detail: 'the file no longer exists' });
    expect(await blobCount()).toBe(blobs);
  });

  it('a refused replacement (wrong size) leaves the old file as it was', async () => {
    const url = `${course.files.member_location}/kept.txt`;
    await storeFile(course.student.auth, url, 'keep me');
    const form = await askToStore(url, { size: 100 }, course.student.auth);
    expect((await postForm(form, 'too short')).status).toBe(422);
    expect((await download((await readFile(url)).url)).bytes.toString()).toBe('keep me');
  });
});

describe('signed downloads', () => {
  it('expire after 5 minutes (GAP-07) and refuse an altered token', async () => {
    const url = `${course.files.member}/timed.txt`;
    await storeFile(course.instructor.auth, url, 'tick');
    const read = await readFile(url);
    expect(read.expires - clock.nowMs()).toBeGreaterThan(5 * 60 * 1000 - 5_000);
    // The service's clock is put just before, then just after, the `expires` the read announced, from the
    // wall clock at that moment: a slow machine (or a wall clock that steps) cannot blur the boundary.
    const saved = clock.offset;
    try {
      clock.offset = read.expires - 2_000 - Date.now();
      expect((await download(read.url)).status).toBe(200);
      clock.offset = read.expires + 1_000 - Date.now();
      expect(await detailOf(await fetch(read.url))).toEqual({ status: 403, code: 'download_expired', detail: 'download URL expired' });
    } finally {
      clock.offset = saved;
    }
    // A fresh read gives a fresh URL.
    expect((await download((await readFile(url)).url)).bytes.toString()).toBe('tick');

    const token = read.url.slice(read.url.lastIndexOf('/') + 1);
    const [payload, signature] = token.split('.') as [string, string];
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const extended = Buffer.from(JSON.stringify({ ...decoded, e: Number(decoded['e']) + 3_600_000 })).toString('base64url');
    for (const forged of [`${extended}.${signature}`, `${payload}.${signature.slice(0, -2)}xx`, 'not-a-token', `${payload}`]) {
      expect(await detailOf(await fetch(`${server.url}/v1/downloads/${forged}`)), forged).toEqual({
        status: 403,
        code: 'invalid_download_signature',
        detail: 'invalid download signature',
      });
    }
  });
});

describe('quotas (100 files, 100 MB a row, checked when signing and when the upload lands)', () => {
  it('refuses the 101st file, counting signed uploads; a replacement takes no new slot', async () => {
    const fresh = await setUpCourse(server);
    const files = fresh.files.member;
    const student = api(fresh.student.auth);
    await storeFile(fresh.student.auth, `${files}/f000`, 'x');
    for (let i = 1; i < 100; i += 1) {
      const response = await student.put(`${files}/f${String(i).padStart(3, '0')}`, { size: 1 });
      expect(response.status).toBe(200);
    }
    expect(await detailOf(await student.put(`${files}/f100`, { size: 1 }))).toEqual({
      status: 422,
      code: 'too_many_files',
      detail: 'file quota exceeded: a row keeps at most 100 files',
    });
    // Replacing a stored file or re-signing a reserved key is not a new file.
    expect((await student.put(`${files}/f000`, { size: 1 })).status).toBe(200);
    expect((await student.put(`${files}/f050`, { size: 1 })).status).toBe(200);
    // Another row has its own quota.
    expect((await api(fresh.student.auth).put(`${fresh.files.member_location}/f100`, { size: 1 })).status).toBe(200);
    // Reservations end with their forms: 15 minutes later the slots are free again (GAP-35).
    clock.offset += 15 * 60 * 1000 + 1_000;
    try {
      expect((await student.put(`${files}/f100`, { size: 1 })).status).toBe(200);
    } finally {
      clock.offset -= 15 * 60 * 1000 + 1_000;
    }
  });

  it('refuses bytes over 100 MB, counting stored files and reservations, and counts a replacement once', async () => {
    const fresh = await setUpCourse(server);
    const files = fresh.files.context;
    const teacher = api(fresh.instructor.auth);
    await storeFile(fresh.instructor.auth, `${files}/small.txt`, 'hello');
    const max = 26_214_400;
    for (const key of ['big-1', 'big-2', 'big-3']) expect((await teacher.put(`${files}/${key}`, { size: max })).status).toBe(200);
    // 5 + 3 x 25 MB + (25 MB - 5) is exactly 100 MB: allowed.
    expect((await teacher.put(`${files}/big-4`, { size: max - 5 })).status).toBe(200);
    expect(await detailOf(await teacher.put(`${files}/one-more`, { size: 1 }))).toEqual({
      status: 422,
      code: 'file_bytes_quota_exceeded',
      detail: 'file quota exceeded: a row keeps at most 104857600 bytes (100 MB) of files; 104857600 are stored or reserved and this file needs 1',
    });
    // Replacing small.txt by a file of the same size, or re-signing big-1, fits: the key counts once.
    expect((await teacher.put(`${files}/small.txt`, { size: 5 })).status).toBe(200);
    expect((await teacher.put(`${files}/big-1`, { size: max })).status).toBe(200);
    expect((await teacher.put(`${files}/big-2`, { size: 10 })).status).toBe(200);
    // One byte more than small.txt holds does not.
    expect(await detailOf(await teacher.put(`${files}/small.txt`, { size: 6 }))).toMatchObject({ status: 422, code: 'file_bytes_quota_exceeded' });
  });

  it('lets exactly one of several concurrent signings take the last slot', async () => {
    const fresh = await setUpCourse(server);
    const files = fresh.files.member;
    const student = api(fresh.student.auth);
    for (let i = 0; i < 99; i += 1) expect((await student.put(`${files}/k${i}`, { size: 1 })).status).toBe(200);
    const racing = await Promise.all(Array.from({ length: 6 }, (_, i) => student.put(`${files}/last-${i}`, { size: 1 })));
    const statuses = racing.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 422, 422, 422, 422, 422]);
  });

  it('checks the quota again when the upload lands', async () => {
    const fresh = await setUpCourse(server);
    const files = fresh.files.member;
    const student = api(fresh.student.auth);
    // A form used once holds no reservation any more; the file it stored is then deleted.
    const form = await askToStore(`${files}/late.txt`, { size: 4 }, fresh.student.auth);
    expect((await postForm(form, 'once')).status).toBe(204);
    expect((await student.del(`${files}/late.txt`)).status).toBe(204);
    // The row fills up meanwhile.
    for (let i = 0; i < 100; i += 1) expect((await student.put(`${files}/k${i}`, { size: 1 })).status).toBe(200);
    // The form is still valid, but the file no longer fits: refused when it lands, nothing stored.
    expect(await detailOf(await postForm(form, 'more'))).toEqual({
      status: 422,
      code: 'too_many_files',
      detail: 'file quota exceeded: a row keeps at most 100 files',
    });
    expect((await student.get(`${files}/late.txt`)).status).toBe(404);
    expect(await tempFiles()).toEqual([]);
  });
});

describe('several instances', () => {
  it('share the signing secret through the store: one signs, another accepts the form and the download URL', async () => {
    const second = await startServer({ dataDir: server.dataDir, clock });
    try {
      const url = `${course.files.member}/shared.txt`;
      const form = await askToStore(url, { size: 6 });
      // Posted to the other instance's upload target.
      expect((await postForm({ url: `${second.url}/uploads`, fields: form.fields }, 'shared')).status).toBe(204);
      const read = await readFile(url);
      const token = read.url.slice(read.url.lastIndexOf('/') + 1);
      const got = await download(`${second.url}/v1/downloads/${token}`);
      expect(got.status).toBe(200);
      expect(got.bytes.toString()).toBe('shared');
    } finally {
      const failures = serverFailures(second.logs);
      await second.stop();
      expect(failures).toEqual([]);
    }
  });
});
