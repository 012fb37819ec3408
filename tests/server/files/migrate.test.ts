// `tis files migrate` (decision OBJ-08): files stored through the embedded store are copied into a real
// S3-compatible bucket (s3rver on loopback), verified, and served from the bucket once the service runs on
// `BLOB_STORE=s3`. A file whose source bytes are missing or not its recorded size, or whose copy arrives
// damaged (a proxy on loopback changes one byte on the way to s3rver, which checks no Content-MD5), is
// reported and keeps its record.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFiles } from '../../../bin/commands/files.js';
import { LOCAL_S3_CREDENTIALS, startLocalS3, type LocalS3 } from '../../../scripts/bench/local-s3.js';
import { isFileObjectName } from '../../../server/files/index.js';
import { dropTestStore, serviceStoreEnv, startServer, TEST_BLOB_STORE } from '../harness.js';
import { api, setUpCourse, storeFile } from '../rows/helpers.js';

let s3: LocalS3;
const dataDir = mkdtempSync(join(tmpdir(), 'tis-migrate-'));
const saved: Record<string, string | undefined> = {};

beforeAll(async () => {
  for (const [name, value] of Object.entries({ ...LOCAL_S3_CREDENTIALS, AWS_EC2_METADATA_DISABLED: 'true' })) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  s3 = await startLocalS3();
});
afterAll(async () => {
  await s3?.stop();
  await dropTestStore(dataDir);
  rmSync(dataDir, { recursive: true, force: true });
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

const DAMAGED = 'PAYLOAD-TO-DAMAGE';

/** A proxy to s3rver that changes one byte of any upload carrying `DAMAGED`; everything else passes as is. */
async function damagingProxy(target: string): Promise<{ endpoint: string; close(): Promise<void> }> {
  const proxy: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (req.method === 'PUT') body = Buffer.from(body.toString('latin1').replace(DAMAGED, 'PAYLOAD-TO-DAMAGF'), 'latin1');
      const out = request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      out.on('error', () => res.destroy());
      out.end(body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
  };
}

function capture(): { io: { out(l: string): void; err(l: string): void }; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l) => out.push(l), err: (l) => err.push(l) }, out, err };
}

describe('tis files migrate', () => {
  it('copies every file into the bucket, verified, and the service then serves them from it', async () => {
    const embedded = await startServer({ dataDir });
    const course = await setUpCourse(embedded);
    const staff = course.instructor.auth;
    const a = randomBytes(300_000);
    const b = 'name,score\nana,0.9\n';
    expect((await storeFile(staff, `${course.files.member}/answers.bin`, a)).upload.status).toBe(204);
    expect((await storeFile(staff, `${course.files.context}/scores.csv`, b, { attachment: true })).upload.status).toBe(204);
    expect((await storeFile(staff, `${course.files.location}/gone.txt`, 'lost')).upload.status).toBe(204);
    const gone = await embedded.services.store.files.get(
      { appId: course.tool.app.id, contextId: course.placed.context.id, kind: 'location', locationId: course.placed.location.id },
      'gone.txt',
    );
    // A file whose bytes went missing from the embedded store: reported, never pointed at nothing.
    await embedded.services.blobs.delete(gone!.blobId);
    // A file whose bytes are not the size its record says: reported, not copied, the record unchanged.
    expect((await storeFile(staff, `${course.files.location}/resized.txt`, 'four')).upload.status).toBe(204);
    await embedded.services.store.driver.run("UPDATE files SET size = 5 WHERE file_key = 'resized.txt'");
    expect((await storeFile(staff, `${course.files.context}/damaged.txt`, DAMAGED)).upload.status).toBe(204);
    await embedded.stop();

    const env = { ...(await serviceStoreEnv(dataDir)), S3_BUCKET: s3.settings.bucket, S3_REGION: 'us-east-1', S3_ENDPOINT: s3.endpoint, S3_FORCE_PATH_STYLE: '1' };
    const dry = capture();
    expect(await runFiles(['migrate', '--dry-run'], env, dry.io)).toBe(1);
    expect(dry.out.filter((l) => l.startsWith('would copy'))).toHaveLength(3);
    expect(dry.err.some((l) => l.includes('resized.txt') && l.includes('the source holds 4 bytes, the record says 5'))).toBe(true);

    // The first run's copies go through the proxy: the damaged copy is caught when read back, and removed.
    const proxy = await damagingProxy(s3.endpoint);
    const first = capture();
    try {
      expect(await runFiles(['migrate', '--from', TEST_BLOB_STORE === 'postgres' ? 'postgres' : 'local'], { ...env, S3_ENDPOINT: proxy.endpoint }, first.io)).toBe(1);
    } finally {
      await proxy.close();
    }
    expect(first.out.filter((l) => l.startsWith('copied ') && l.endsWith('verified'))).toHaveLength(2);
    expect(first.err).toHaveLength(3);
    expect(first.err).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^failed gone\.txt/),
        expect.stringMatching(/^failed resized\.txt .*the source holds 4 bytes, the record says 5/),
        expect.stringMatching(/^failed damaged\.txt .*the copy in the bucket differs \(17 bytes, sha256 [0-9a-f]{64}\)/),
      ]),
    );
    expect(first.out.at(-1)).toContain('copied 2 files (300019 bytes)');
    // Run again, straight to the bucket: the damaged one is copied now, the two broken ones still fail.
    const again = capture();
    expect(await runFiles(['migrate'], env, again.io)).toBe(1);
    expect(again.out.at(-1)).toContain('copied 1 file (17 bytes)');
    expect(again.out.at(-1)).toContain('2 already in the bucket');

    const onS3 = await startServer({ dataDir, config: { blobStore: 's3', s3: s3.settings } });
    try {
      // Same store, a new port: the rows' URLs move to the restarted service's origin.
      const origin = new URL(course.files.member).origin;
      const read = async (url: string): Promise<{ url: string; size: number }> =>
        (await (await api(staff).get(onS3.url + url.slice(origin.length))).json()) as never;
      const answers = await read(`${course.files.member}/answers.bin`);
      expect(answers.url.startsWith(`${s3.endpoint}/tis-files/contexts/`)).toBe(true);
      expect(Buffer.from(await (await fetch(answers.url)).arrayBuffer()).equals(a)).toBe(true);
      const scores = await read(`${course.files.context}/scores.csv`);
      const got = await fetch(scores.url);
      expect(await got.text()).toBe(b);
      expect(got.headers.get('content-disposition')).toMatch(/^attachment; filename="scores.csv"/);
      const records = await onS3.services.store.files.listAllFiles('', 10);
      expect(records.filter((r) => isFileObjectName(r.blobId)).map((r) => r.key).sort()).toEqual(['answers.bin', 'damaged.txt', 'scores.csv']);
      expect(await (await fetch((await read(`${course.files.context}/damaged.txt`)).url)).text()).toBe(DAMAGED);
      expect(records.find((r) => r.key === 'resized.txt')).toMatchObject({ size: 5 });
      expect(isFileObjectName(records.find((r) => r.key === 'resized.txt')!.blobId)).toBe(false);
    } finally {
      await onS3.stop();
    }
  });

  it('says what is wrong with the command line or the settings', async () => {
    const usage = capture();
    expect(await runFiles(['copy'], {}, usage.io)).toBe(2);
    expect(usage.err.join('\n')).toContain('unknown files command "copy"');
    const settings = capture();
    expect(await runFiles(['migrate'], { DATA_DIR: dataDir, AWS_SECRET_ACCESS_KEY: 'hunter2' }, settings.io)).toBe(2);
    expect(settings.err.join('\n')).toContain('BLOB_STORE=s3 needs S3_BUCKET');
    expect(settings.err.join('\n')).not.toContain('hunter2');
  });
});
