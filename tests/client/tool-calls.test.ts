// The row, files and score helpers against a real local HTTP server, checking the exact requests.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, expectTypeOf, it } from 'vitest';
import {
  files,
  markProvisioned,
  MAX_FILE_SIZE,
  rows,
  submitScore,
  type GradeAttempt,
  type PatchOperation,
  type Problem,
} from '../../client/tool/index.js';
import { problem, recordingServer, sendJson, type RecordedRequest, type RecordingServer } from './support.js';

const token = 'tis_at_Pv4xN9mQ2rT7wK1yH6bD3fG8jL0sA5cE9uZ2iO7nR4m';
const rowPath = '/v1/contexts/ctx_7k2m9q4r8t1v5w3x6y0z/apps/app_3f9c2a7d1e5b8h4j6k0m/locations/loc_8d1f4h7k0m3p6r9t2v5x/members/mem_6h9k2m5p8r1t4w7y0b3d';

let server: RecordingServer;

beforeAll(async () => {
  server = await recordingServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.requests.length = 0;
});

function json(request: RecordedRequest): unknown {
  return JSON.parse(request.body.toString('utf8'));
}

describe('rows', () => {
  it('gets, puts and patches the row at the storage URL with the api.token', async () => {
    const stored = { answers: { q1: 'b' }, '10': 'digits first' };
    server.handle((req, res) => {
      if (req.method === 'GET') sendJson(res, 200, stored);
      else res.writeHead(204).end();
    });
    const row = rows<{ answers: Record<string, string> }>(`${server.url}${rowPath}/storage`, token, { contractVersion: '2026-09-21' });

    const read = await row.get();
    expect(read.error).toBeUndefined();
    expect(read.data).toEqual(stored);
    expectTypeOf(read.data).toEqualTypeOf<{ answers: Record<string, string> } | undefined>();

    const put = await row.put({ answers: { q1: 'c' } });
    expect(put.error).toBeUndefined();
    expect(put.data).toBeUndefined();
    expect(put.response.status).toBe(204);

    const ops: PatchOperation[] = [
      { op: 'add', path: '/answers/q2', value: 'a' },
      { op: 'remove', path: '/answers/q1' },
      { op: 'move', from: '/answers/q2', path: '/answers/q3' },
    ];
    expect((await row.patch(ops)).error).toBeUndefined();

    const [get, replace, patch] = server.requests;
    for (const request of [get!, replace!, patch!]) {
      expect(request.path).toBe(`${rowPath}/storage`);
      expect(request.headers.authorization).toBe(`Bearer ${token}`);
      expect(request.headers['contract-version']).toBe('2026-09-21');
    }
    expect(get!.method).toBe('GET');
    expect(get!.body.length).toBe(0);
    expect(replace!.method).toBe('PUT');
    expect(replace!.headers['content-type']).toBe('application/json');
    expect(json(replace!)).toEqual({ answers: { q1: 'c' } });
    expect(patch!.method).toBe('PATCH');
    expect(patch!.headers['content-type']).toBe('application/json');
    expect(json(patch!)).toEqual({ patch: ops });
  });

  it('sends no Contract-Version unless asked, so the pinned contract applies', async () => {
    server.handle((_req, res) => sendJson(res, 200, {}));
    await rows(`${server.url}${rowPath}/storage`, token).get();
    expect(server.requests[0]!.headers['contract-version']).toBeUndefined();
  });

  it('returns the service envelope as a typed error', async () => {
    const refusal = problem(422, 'row_too_large', 'row exceeds the 524288-byte limit for member_location rows');
    server.handle((_req, res) => sendJson(res, 422, refusal, 'application/problem+json'));
    const result = await rows(`${server.url}${rowPath}/storage`, token).put({ big: 'x' });
    expect(result.data).toBeUndefined();
    expect(result.error).toEqual(refusal);
    expect(result.response.status).toBe(422);
    expectTypeOf(result.error).toEqualTypeOf<Problem | undefined>();
  });

  it('turns an error that is not the envelope into one', async () => {
    server.handle((_req, res) => void res.writeHead(502, { 'Content-Type': 'text/html' }).end('<h1>Bad gateway</h1>'));
    const { error } = await rows(`${server.url}${rowPath}/storage`, token).get();
    expect(error).toEqual({
      type: 'about:blank',
      title: 'Bad Gateway',
      status: 502,
      detail: '<h1>Bad gateway</h1>',
      code: 'unexpected_response',
    });
  });

  it('refuses to PUT something that is not an object', () => {
    const row = rows(`${server.url}${rowPath}/storage`, token);
    // @ts-expect-error an array is not a row
    expect(() => row.put([1, 2])).toThrow(TypeError);
  });
});

describe('files', () => {
  const filesUrl = () => `${server.url}${rowPath}/files`;
  const uploadPath = '/v1/uploads';
  const fields = { policy: 'eyJyb3ciOiJtZW1iZXJfbG9jYXRpb24ifQ', signature: 'c2lnbmF0dXJl', extra: 'kept in order' };

  /** Answers the PUT with a signed form pointing back at this server, and the POST with 204. */
  function uploadService() {
    server.handle((req, res) => {
      if (req.method === 'PUT') sendJson(res, 200, { url: `${server.url}${uploadPath}`, fields });
      else if (req.method === 'POST' && req.path === uploadPath) res.writeHead(204).end();
      else res.writeHead(404).end();
    });
  }

  /** The parts of a multipart body, in order, parsed by hand so the order is exactly what was sent. */
  function parts(request: RecordedRequest): { name: string; filename?: string; contentType?: string; data: Buffer }[] {
    const type = request.headers['content-type'] ?? '';
    const boundary = /boundary=(.+)$/.exec(type)?.[1];
    if (!boundary) throw new Error(`no boundary in ${type}`);
    const body = request.body;
    const delimiter = Buffer.from(`--${boundary}`);
    const found: { name: string; filename?: string; contentType?: string; data: Buffer }[] = [];
    let at = body.indexOf(delimiter);
    for (;;) {
      const next = body.indexOf(delimiter, at + delimiter.length);
      if (next === -1) break;
      const part = body.subarray(at + delimiter.length + 2, next - 2);
      const split = part.indexOf('\r\n\r\n');
      const head = part.subarray(0, split).toString('utf8');
      const name = /name="([^"]*)"/.exec(head)![1]!;
      const filename = /filename="([^"]*)"/.exec(head)?.[1];
      const contentType = /Content-Type: (.+)/i.exec(head)?.[1];
      found.push({ name, ...(filename !== undefined ? { filename } : {}), ...(contentType ? { contentType } : {}), data: part.subarray(split + 4) });
      at = next;
    }
    expect(body.subarray(at).toString()).toBe(`--${boundary}--\r\n`);
    return found;
  }

  it('lists, reads and deletes with the api.token', async () => {
    const list = [{ key: 'essay.pdf', size: 10, modified: 1791812460123 }];
    const detail = { ...list[0], content_type: 'application/pdf', url: `${server.url}/v1/downloads/abc`, expires: 1791812760123 };
    server.handle((req, res) => {
      if (req.method === 'DELETE') res.writeHead(204).end();
      else if (req.path.endsWith('/files')) sendJson(res, 200, list);
      else sendJson(res, 200, detail);
    });
    const f = files(filesUrl(), token);
    expect((await f.list()).data).toEqual(list);
    expect((await f.read('essay.pdf')).data).toEqual(detail);
    const removed = await f.delete('essay.pdf');
    expect(removed.error).toBeUndefined();
    expect(server.requests.map((r) => [r.method, r.path, r.headers.authorization])).toEqual([
      ['GET', `${rowPath}/files`, `Bearer ${token}`],
      ['GET', `${rowPath}/files/essay.pdf`, `Bearer ${token}`],
      ['DELETE', `${rowPath}/files/essay.pdf`, `Bearer ${token}`],
    ]);
  });

  it('answers 404 for a missing file as a typed error', async () => {
    server.handle((_req, res) => sendJson(res, 404, problem(404, 'file_not_found', 'no file with key nope.txt in this row', 'Not Found'), 'application/problem+json'));
    const { error } = await files(filesUrl(), token).read('nope.txt');
    expect(error?.status).toBe(404);
    expect(error?.detail).toBe('no file with key nope.txt in this row');
  });

  it('never puts a key outside the key rule on the wire', () => {
    const f = files(filesUrl(), token);
    expect(() => f.read('../storage')).toThrow(/invalid file key/);
    expect(() => f.delete('.hidden')).toThrow(RangeError);
    expect(server.requests).toHaveLength(0);
  });

  it('uploads a Buffer: the PUT with its size, then the form with every field first and file last', async () => {
    uploadService();
    const data = Buffer.from('%PDF-1.7 a small essay');
    const result = await files(filesUrl(), token).upload('essay.pdf', data, { mimetype: 'application/pdf', filename: 'My "essay".pdf', attachment: true });
    expect(result.error).toBeUndefined();
    expect(result.data).toEqual({ key: 'essay.pdf', size: data.length });

    const [put, post] = server.requests;
    expect(put!.method).toBe('PUT');
    expect(put!.path).toBe(`${rowPath}/files/essay.pdf`);
    expect(put!.headers.authorization).toBe(`Bearer ${token}`);
    expect(json(put!)).toEqual({ size: data.length, mimetype: 'application/pdf', filename: 'My "essay".pdf', attachment: true });

    expect(post!.method).toBe('POST');
    expect(post!.path).toBe(uploadPath);
    // The signature is the credential; the api.token must not travel to the upload target.
    expect(post!.headers.authorization).toBeUndefined();
    expect(post!.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(Number(post!.headers['content-length'])).toBe(post!.body.length);
    const sent = parts(post!);
    expect(sent.map((p) => p.name)).toEqual(['policy', 'signature', 'extra', 'file']);
    expect(sent.slice(0, 3).map((p) => p.data.toString())).toEqual(Object.values(fields));
    expect(sent[3]!.filename).toBe('My %22essay%22.pdf');
    expect(sent[3]!.contentType).toBe('application/pdf');
    expect(sent[3]!.data.equals(data)).toBe(true);
  });

  it('sends only the options given in the PUT', async () => {
    uploadService();
    await files(filesUrl(), token).upload('notes.txt', new Blob(['hello']));
    expect(json(server.requests[0]!)).toEqual({ size: 5 });
    expect(parts(server.requests[1]!)[3]!.filename).toBe('notes.txt');
  });

  it("takes a File's type and name unless options say otherwise", async () => {
    uploadService();
    const file = new File(['a,b\n1,2\n'], 'grades.csv', { type: 'text/csv' });
    await files(filesUrl(), token).upload('grades.csv', file);
    expect(json(server.requests[0]!)).toEqual({ size: 8, mimetype: 'text/csv', filename: 'grades.csv' });
    server.requests.length = 0;
    await files(filesUrl(), token).upload('grades.csv', file, { filename: 'export.csv' });
    expect(json(server.requests[0]!)).toEqual({ size: 8, mimetype: 'text/csv', filename: 'export.csv' });
    expect(parts(server.requests[1]!).at(-1)).toMatchObject({ filename: 'export.csv', contentType: 'text/csv' });
  });

  it('streams a Node Readable of a declared size without holding it whole', async () => {
    const chunk = Buffer.alloc(64 * 1024, 7);
    const count = 320; // 20 MB: more than socket buffers can hide
    const size = chunk.length * count;
    let produced = 0;
    let received = 0;
    let maxAhead = 0;
    // The upload target counts bytes as they arrive; the source notes how far it runs ahead.
    const target = createServer((req, res) => {
      req.on('data', (data: Buffer) => (received += data.length));
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/v1/uploads`;
    server.handle((_req, res) => sendJson(res, 200, { url: targetUrl, fields }));
    const source = new Readable({
      highWaterMark: chunk.length,
      read() {
        if (produced === count) return void this.push(null);
        produced += 1;
        maxAhead = Math.max(maxAhead, produced * chunk.length - received);
        this.push(chunk);
      },
    });
    try {
      const result = await files(filesUrl(), token).upload('big.bin', source, { size });
      expect(result.error).toBeUndefined();
      expect(result.data).toEqual({ key: 'big.bin', size });
    } finally {
      await new Promise<void>((resolve) => target.close(() => resolve()));
    }
    expect(json(server.requests[0]!)).toEqual({ size });
    expect(received).toBeGreaterThan(size);
    // Read as the socket drained, never the whole file ahead of it.
    expect(maxAhead).toBeLessThan(size / 2);
  });

  it('sends a declared-size stream with Content-Length, not chunked', async () => {
    uploadService();
    const result = await files(filesUrl(), token).upload('two.bin', Readable.from([Buffer.from('ab'), Buffer.from('cd')]), { size: 4 });
    expect(result.error).toBeUndefined();
    const post = server.requests[1]!;
    expect(post.headers['content-length']).toBe(String(post.body.length));
    expect(post.headers['transfer-encoding']).toBeUndefined();
    expect(parts(post).map((p) => p.name)).toEqual(['policy', 'signature', 'extra', 'file']);
    expect(parts(post).at(-1)!.data.toString()).toBe('abcd');
  });

  it('streams a web ReadableStream of a declared size', async () => {
    uploadService();
    const pieces = ['one,', 'two,', 'three'];
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces) controller.enqueue(new TextEncoder().encode(piece));
        controller.close();
      },
    });
    const result = await files(filesUrl(), token).upload('list.csv', stream, { size: 13, mimetype: 'text/csv' });
    expect(result.data).toEqual({ key: 'list.csv', size: 13 });
    expect(parts(server.requests[1]!).at(-1)!.data.toString()).toBe('one,two,three');
  });

  it('reads a stream of unknown size first, to learn the size for the PUT', async () => {
    uploadService();
    const result = await files(filesUrl(), token).upload('a.txt', Readable.from([Buffer.from('ab'), 'cd']));
    expect(result.data?.size).toBe(4);
    expect(json(server.requests[0]!)).toEqual({ size: 4 });
    expect(parts(server.requests[1]!).at(-1)!.data.toString()).toBe('abcd');
  });

  it('refuses a stream longer or shorter than its declared size', async () => {
    uploadService();
    await expect(files(filesUrl(), token).upload('a.txt', Readable.from([Buffer.from('abcdef')]), { size: 3 })).rejects.toThrow(/size says 3/);
    await expect(files(filesUrl(), token).upload('a.txt', Readable.from([Buffer.from('ab')]), { size: 3 })).rejects.toThrow(/is 2 bytes but size says 3/);
    await expect(files(filesUrl(), token).upload('a.txt', Buffer.from('ab'), { size: 3 })).rejects.toThrow(RangeError);
  });

  it('refuses an unknown-size stream above 25 MB before calling the service', async () => {
    const big = Buffer.alloc(1024 * 1024);
    async function* tooMuch() {
      for (let i = 0; i <= MAX_FILE_SIZE / big.length; i += 1) yield big;
    }
    await expect(files(filesUrl(), token).upload('big.bin', tooMuch())).rejects.toThrow(/at most 26214400 bytes/);
    expect(server.requests).toHaveLength(0);
  });

  it('returns the PUT refusal and does not post', async () => {
    server.handle((_req, res) =>
      sendJson(res, 422, problem(422, 'file_quota_exceeded', 'file quota exceeded: a row keeps at most 100 files'), 'application/problem+json'),
    );
    const source = Readable.from([Buffer.from('abc')]);
    const { error, response } = await files(filesUrl(), token).upload('c.txt', source, { size: 3 });
    expect(error?.code).toBe('file_quota_exceeded');
    expect(response.status).toBe(422);
    expect(server.requests).toHaveLength(1);
    expect(source.destroyed).toBe(true);
  });

  it('returns the upload target refusal', async () => {
    server.handle((req, res) => {
      if (req.method === 'PUT') sendJson(res, 200, { url: `${server.url}${uploadPath}`, fields });
      else sendJson(res, 403, problem(403, 'upload_form_expired', 'upload form expired', 'Forbidden'), 'application/problem+json');
    });
    const { error } = await files(filesUrl(), token).upload('c.txt', new Uint8Array([1, 2, 3]));
    expect(error).toMatchObject({ status: 403, code: 'upload_form_expired', detail: 'upload form expired' });
  });
});

describe('submitScore', () => {
  const attempt: GradeAttempt = {
    id: 'att_4f7h0k3m6p9r2t5w8y1b',
    status: 'success',
    score: 0.85,
    max_score: null,
    activity_progress: 'Completed',
    grading_progress: 'FullyGraded',
    submitted: '2026-10-12T14:05:09.123456Z',
    member: 'mem_6h9k2m5p8r1t4w7y0b3d',
    location: 'loc_8d1f4h7k0m3p6r9t2v5x',
    app: 'app_3f9c2a7d1e5b8h4j6k0m',
    context: 'ctx_7k2m9q4r8t1v5w3x6y0z',
    data: { comment: 'Well argued.', response: { status: 200, body: '' }, error: '', source_type: 'session', source_id: 'usr_1' },
  };

  it('does nothing when grade.submit is null', async () => {
    const result = await submitScore(null, token, { score: 1 });
    expect(result).toEqual({ skipped: true });
    expect(server.requests).toHaveLength(0);
  });

  it('POSTs the body as JSON with the credential and returns the attempt', async () => {
    server.handle((_req, res) => sendJson(res, 200, attempt));
    const url = `${server.url}${rowPath}/scores`;
    const result = await submitScore(url, token, { score: 0.85, comment: 'Well argued.' });
    expect(result.skipped).toBe(false);
    if (result.skipped) return;
    expect(result.data).toEqual(attempt);
    const [request] = server.requests;
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe(`${rowPath}/scores`);
    expect(request!.headers.authorization).toBe(`Bearer ${token}`);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(json(request!)).toEqual({ score: 0.85, comment: 'Well argued.' });
  });

  it('returns a refused submission as a typed error', async () => {
    server.handle((_req, res) => sendJson(res, 422, problem(422, 'score_out_of_range', 'score must be between 0 and 1'), 'application/problem+json'));
    const result = await submitScore(`${server.url}${rowPath}/scores`, 'ltiaas_app_x_secret', { score: 2 });
    expect(!result.skipped && result.error?.detail).toBe('score must be between 0 and 1');
  });
});

describe('markProvisioned', () => {
  it('PUTs the provision URL with no body', async () => {
    server.handle((_req, res) => void res.writeHead(204).end());
    const result = await markProvisioned(`${server.url}/v1/contexts/ctx_1/apps/app_1/provision`, token);
    expect(result.error).toBeUndefined();
    const [request] = server.requests;
    expect(request!.method).toBe('PUT');
    expect(request!.body.length).toBe(0);
    expect(request!.headers.authorization).toBe(`Bearer ${token}`);
  });
});
