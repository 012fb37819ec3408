// The pure and local parts of server/files, without HTTP: the disk blob store, the HMAC signer, the
// content-type guess, the file PUT body rules and the download headers. The HTTP behaviour is in
// files.test.ts.

import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { afterAll, describe, expect, it } from 'vitest';
import { BlobNotFoundError, BlobSizeMismatchError } from '../../../server/files/blob-store.js';
import { contentDisposition, downloadHeaders } from '../../../server/files/download.js';
import { LocalBlobStore } from '../../../server/files/local-blob-store.js';
import { contentTypeOfName, resolveContentType } from '../../../server/files/mime.js';
import { FilesSigner, type UploadPolicy } from '../../../server/files/signing.js';
import { checkFileKey, parseUploadRequest } from '../../../server/files/upload-request.js';

const dirs: string[] = [];
function tempStore(): LocalBlobStore {
  const dir = mkdtempSync(join(tmpdir(), 'tis-blobs-'));
  dirs.push(dir);
  return new LocalBlobStore(dir);
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('LocalBlobStore', () => {
  it('stores exactly the expected bytes under a fresh id and streams them back', async () => {
    const blobs = tempStore();
    const a = await blobs.put(Readable.from([Buffer.from('hello '), Buffer.from('world')]), 11);
    const b = await blobs.put(Readable.from([Buffer.from('hello world')]), 11);
    expect(a.size).toBe(11);
    expect(a.id).not.toBe(b.id);
    const opened = await blobs.get(a.id);
    expect(opened.size).toBe(11);
    expect(await text(opened.stream)).toBe('hello world');
  });

  it('refuses a source shorter or longer than expected and keeps nothing, not even a temporary file', async () => {
    const blobs = tempStore();
    await expect(blobs.put(Readable.from([Buffer.from('abc')]), 4)).rejects.toBeInstanceOf(BlobSizeMismatchError);
    await expect(blobs.put(Readable.from([Buffer.from('abcde')]), 4)).rejects.toBeInstanceOf(BlobSizeMismatchError);
    expect(readdirSync(join(blobs.root, 'tmp'))).toEqual([]);
    expect(readdirSync(blobs.root)).toEqual(['tmp']);
  });

  it('keeps nothing when the source fails midway', async () => {
    const blobs = tempStore();
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('partial');
      throw new Error('client went away');
    }
    await expect(blobs.put(failing(), 100)).rejects.toThrow('client went away');
    expect(readdirSync(join(blobs.root, 'tmp'))).toEqual([]);
  });

  it('keeps serving a blob opened before it was deleted; afterwards it is not found; deleting twice is fine', async () => {
    const blobs = tempStore();
    const { id } = await blobs.put(Readable.from([Buffer.from('still here')]), 10);
    const opened = await blobs.get(id);
    await blobs.delete(id);
    await blobs.delete(id);
    expect(await text(opened.stream)).toBe('still here');
    await expect(blobs.get(id)).rejects.toBeInstanceOf(BlobNotFoundError);
  });

  it('never builds a path from an id it did not issue', async () => {
    const blobs = tempStore();
    await expect(blobs.get('../../etc/passwd')).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(blobs.delete('../x')).resolves.toBeUndefined();
  });

  it('sweeps temporary files left by a crash', async () => {
    const blobs = tempStore();
    const { writeFileSync } = await import('node:fs');
    await blobs.sweepTemporary();
    writeFileSync(join(blobs.root, 'tmp', 'blb_leftover.part'), 'x');
    expect(await blobs.sweepTemporary(0, Date.now() + 1000)).toBe(1);
    expect(readdirSync(join(blobs.root, 'tmp'))).toEqual([]);
  });
});

describe('FilesSigner', () => {
  const signer = new FilesSigner(Buffer.alloc(32, 7));
  const policy: UploadPolicy = {
    upload: 'upl_abc',
    row: { appId: 'app_1', contextId: 'ctx_1', kind: 'member', memberId: 'mem_1' },
    key: 'report.pdf',
    size: 10,
    content_type: 'application/pdf',
    filename: 'report.pdf',
    attachment: true,
    expires: 1_800_000_000_000,
  };

  it('verifies its own upload policy and refuses any altered byte or another secret', () => {
    const fields = signer.signUpload(policy);
    expect(signer.verifyUpload(fields.policy, fields.signature)).toEqual(policy);
    const altered = Buffer.from(JSON.stringify({ ...policy, size: 11 })).toString('base64url');
    expect(signer.verifyUpload(altered, fields.signature)).toBeNull();
    expect(signer.verifyUpload(fields.policy, `${fields.signature.slice(0, -1)}A`)).toBeNull();
    expect(new FilesSigner(Buffer.alloc(32, 8)).verifyUpload(fields.policy, fields.signature)).toBeNull();
  });

  it('keeps download tokens and upload policies apart', () => {
    const token = signer.signDownload({ blob: 'blb_x', expires: 5 });
    expect(signer.verifyDownload(token)).toEqual({ blob: 'blb_x', expires: 5 });
    const [payload, signature] = token.split('.') as [string, string];
    expect(signer.verifyUpload(payload, signature)).toBeNull();
    const fields = signer.signUpload(policy);
    expect(signer.verifyDownload(`${fields.policy}.${fields.signature}`)).toBeNull();
    expect(signer.verifyDownload('garbage')).toBeNull();
    expect(signer.verifyDownload(`${payload}.`)).toBeNull();
  });
});

describe('content type guess', () => {
  it('takes the mimetype, else the filename, else the key, else octet-stream', () => {
    expect(resolveContentType('text/plain; charset=utf-8', 'a.pdf', 'b.csv')).toBe('text/plain; charset=utf-8');
    expect(resolveContentType(undefined, 'Report.PDF', 'b.csv')).toBe('application/pdf');
    expect(resolveContentType(undefined, undefined, 'b.csv')).toBe('text/csv');
    expect(resolveContentType(undefined, 'no-extension', 'b.csv')).toBe('text/csv');
    expect(resolveContentType(undefined, undefined, 'notes')).toBe('application/octet-stream');
    expect(contentTypeOfName('trailing.')).toBeNull();
    expect(contentTypeOfName('x.constructor')).toBeNull();
    expect(contentTypeOfName('x.__proto__')).toBeNull();
  });
});

describe('file PUT body and key rules', () => {
  const refusal = (body: unknown): string => {
    try {
      parseUploadRequest(body);
      return 'accepted';
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('answers with the exact messages of GAP-04 and S-01', () => {
    expect(refusal({})).toBe('size is required');
    expect(refusal({ size: -1 })).toBe('size must be a non-negative integer');
    expect(refusal({ size: 1.5 })).toBe('size must be a non-negative integer');
    expect(refusal({ size: '10' })).toBe('size must be a non-negative integer');
    expect(refusal({ size: 26_214_401 })).toBe('size must be at most 26214400 bytes (25 MB)');
    expect(refusal({ size: 26_214_400 })).toBe('accepted');
    expect(refusal({ size: 0 })).toBe('accepted');
    expect(refusal({ size: 1, expires: 5 })).toBe('unknown field: expires');
    expect(refusal({ size: 1, mimetype: 'pdf' })).toBe('mimetype must be a media type such as text/plain');
    expect(refusal({ size: 1, mimetype: '' })).toBe('accepted');
    expect(refusal({ size: 1, filename: 'a/b' })).toBe("filename must be at most 255 characters with no control characters, '/' or '\\'");
    expect(refusal({ size: 1, filename: 'x'.repeat(256) })).toMatch(/^filename must be/);
    expect(refusal({ size: 1, filename: 'Lab report, week 3 — final.pdf' })).toBe('accepted');
  });

  it('applies the key rule of GAP-03 and GAP-36', () => {
    for (const good of ['a', 'A.b_c-d', '0', 'x'.repeat(128), 'Report.pdf']) expect(() => checkFileKey(good)).not.toThrow();
    for (const bad of ['', '.hidden', '-x', '_x', 'x'.repeat(129), 'a b', 'a/b', 'é.txt']) {
      expect(() => checkFileKey(bad)).toThrow(/^invalid file key/);
    }
  });
});

describe('download headers', () => {
  it('names the file for both old and RFC 8187 clients, inline or attachment', () => {
    expect(contentDisposition('raw-data.csv', false)).toBe(`inline; filename="raw-data.csv"; filename*=UTF-8''raw-data.csv`);
    expect(contentDisposition('Résumé "final".pdf', true)).toBe(
      `attachment; filename="R_sum_ _final_.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22.pdf`,
    );
    const headers = downloadHeaders({ contentType: 'image/svg+xml', filename: 'x.svg', attachment: false }, 3);
    expect(headers['X-Content-Type-Options']).toBe('nosniff');
    expect(headers['Content-Security-Policy']).toBe('sandbox');
    expect(headers['Content-Length']).toBe('3');
  });
});

describe('the shared signing secret', () => {
  it('is created once, whoever asks first, and every store on the file gets the same one', async () => {
    const { loadFilesSigner } = await import('../../../server/files/signing.js');
    const { dropTestStore, openTestStore } = await import('../harness.js');
    const dir = mkdtempSync(join(tmpdir(), 'tis-secret-'));
    dirs.push(dir);
    // On the project's store (TIS_TEST_STORE), as two instances of the service would open it.
    const [a, b] = await Promise.all([openTestStore(dir), openTestStore(dir)]);
    try {
      const secrets = await Promise.all([a.secrets.getOrCreate('x', () => 'from-a'), b.secrets.getOrCreate('x', () => 'from-b')]);
      expect(secrets[0]).toBe(secrets[1]);
      const [signerA, signerB] = await Promise.all([loadFilesSigner(a), loadFilesSigner(b)]);
      const token = signerA.signDownload({ blob: 'blb_x', expires: 1 });
      expect(signerB.verifyDownload(token)).toEqual({ blob: 'blb_x', expires: 1 });
    } finally {
      await a.close();
      await b.close();
      await dropTestStore(dir);
    }
  });
});
