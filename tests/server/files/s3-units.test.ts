// The object store's pieces without any server (decisions OBJ-01 to OBJ-03, OBJ-06): the signed POST policy
// decoded condition by condition, the presigned GET's overrides, object names, and the S3 settings.
// Signing is local computation: nothing here opens a connection.

import { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../server/config.js';
import { contentDisposition, fileObjectName, isFileObjectName, keyObjectPrefix, rowObjectPrefix } from '../../../server/files/index.js';
import { S3BlobStore } from '../../../server/files/s3-blob-store.js';
import type { RowKey } from '../../../server/store/index.js';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const row: RowKey = { appId: 'app_3f9c2a7d1e5b8h4j6k0m', contextId: 'ctx_7k2m9q4r8t1v5w3x6y0z', kind: 'member_location', locationId: 'loc_a1', memberId: 'mem_b2' };

function store(): S3BlobStore {
  const client = new S3Client({ region: 'eu-west-1', credentials, endpoint: 'https://s3.example.test', forcePathStyle: true });
  return new S3BlobStore({ bucket: 'tis-files', region: 'eu-west-1', endpoint: 'https://s3.example.test', forcePathStyle: true, client });
}

describe('the presigned POST policy', () => {
  it('pins the bucket, the exact object, the exact size, the content type and the expiry', async () => {
    const s3 = store();
    const name = s3.newObjectName({ row, key: 'lab-report.pdf' });
    const now = Date.now();
    const expiresAt = now + 900_000;
    const form = await s3.signUpload(name, { size: 482_133, contentType: 'application/pdf', expiresAt, now });
    expect(form.url).toBe('https://s3.example.test/tis-files');
    const policy = JSON.parse(Buffer.from(form.fields['Policy'] ?? '', 'base64').toString('utf8')) as {
      expiration: string;
      conditions: unknown[];
    };
    // The expiry: the form's end, in the whole seconds a policy carries, never later.
    const expiration = Date.parse(policy.expiration);
    expect(expiration).toBeLessThanOrEqual(expiresAt);
    expect(expiration).toBeGreaterThan(expiresAt - 2000);
    expect(policy.expiration).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const credential = form.fields['X-Amz-Credential'];
    expect(credential).toMatch(/^AKIDEXAMPLE\/\d{8}\/eu-west-1\/s3\/aws4_request$/);
    expect(policy.conditions).toEqual([
      ['content-length-range', 482_133, 482_133],
      ['eq', '$Content-Type', 'application/pdf'],
      { 'Content-Type': 'application/pdf' },
      { bucket: 'tis-files' },
      { 'X-Amz-Algorithm': 'AWS4-HMAC-SHA256' },
      { 'X-Amz-Credential': credential },
      { 'X-Amz-Date': form.fields['X-Amz-Date'] },
      { key: name },
    ]);
    // The fields a tool posts say the same, and the signature covers the policy.
    expect(form.fields).toMatchObject({ key: name, bucket: 'tis-files', 'Content-Type': 'application/pdf' });
    expect(form.fields['X-Amz-Signature']).toMatch(/^[0-9a-f]{64}$/);
    // No secret in anything handed out.
    expect(JSON.stringify(form)).not.toContain(credentials.secretAccessKey);
  });

  it('signs a zero-byte file as exactly zero bytes', async () => {
    const s3 = store();
    const now = Date.now();
    const form = await s3.signUpload(s3.newObjectName({ row, key: 'empty.txt' }), { size: 0, contentType: 'text/plain', expiresAt: now + 900_000, now });
    const policy = JSON.parse(Buffer.from(form.fields['Policy'] ?? '', 'base64').toString('utf8')) as { conditions: unknown[] };
    expect(policy.conditions[0]).toEqual(['content-length-range', 0, 0]);
  });
});

describe('the presigned GET', () => {
  it('sets the content type, the disposition and no caching through response overrides, for the given seconds', async () => {
    const s3 = store();
    const name = s3.newObjectName({ row, key: 'data.csv' });
    const url = new URL(
      await s3.signDownload(name, { contentType: 'text/csv', contentDisposition: contentDisposition('Données 1.csv', true), expiresInSeconds: 300 }),
    );
    expect(url.origin + url.pathname).toBe(`https://s3.example.test/tis-files/${name}`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
    expect(url.searchParams.get('response-content-type')).toBe('text/csv');
    expect(url.searchParams.get('response-content-disposition')).toBe(`attachment; filename="Donn_es 1.csv"; filename*=UTF-8''Donn%C3%A9es%201.csv`);
    expect(url.searchParams.get('response-cache-control')).toBe('private, no-store');
  });
});

describe('object names', () => {
  it('follow the row, then the key, then a fresh blob per upload', () => {
    const s3 = store();
    const a = s3.newObjectName({ row, key: 'x.txt' });
    const b = s3.newObjectName({ row, key: 'x.txt' });
    expect(a).not.toBe(b);
    expect(a.startsWith('contexts/ctx_7k2m9q4r8t1v5w3x6y0z/apps/app_3f9c2a7d1e5b8h4j6k0m/locations/loc_a1/members/mem_b2/files/x.txt/blb_')).toBe(true);
    expect(isFileObjectName(a)).toBe(true);
  });

  it('give each row a prefix no other row shares', () => {
    const base = { appId: 'app_a', contextId: 'ctx_c' };
    const prefixes = [
      rowObjectPrefix({ ...base, kind: 'context' }),
      rowObjectPrefix({ ...base, kind: 'location', locationId: 'loc_l' }),
      rowObjectPrefix({ ...base, kind: 'member', memberId: 'mem_m' }),
      rowObjectPrefix({ ...base, kind: 'member_location', locationId: 'loc_l', memberId: 'mem_m' }),
      rowObjectPrefix({ appId: 'app_b', contextId: 'ctx_c', kind: 'context' }),
    ];
    for (const p of prefixes) for (const q of prefixes) if (p !== q) expect(q.startsWith(p), `${q} under ${p}`).toBe(false);
    // A key that looks like a path segment of a deeper row stays a key of this row.
    expect(keyObjectPrefix({ ...base, kind: 'location', locationId: 'loc_l' }, 'members')).toBe('contexts/ctx_c/apps/app_a/locations/loc_l/files/members/');
  });

  it('refuse any segment that could leave its prefix', () => {
    expect(() => keyObjectPrefix(row, '../x')).toThrow(RangeError);
    expect(() => keyObjectPrefix(row, 'a/b')).toThrow(RangeError);
    expect(() => keyObjectPrefix(row, '.hidden')).toThrow(RangeError);
    expect(() => rowObjectPrefix({ appId: 'app_a/../app_b', contextId: 'ctx_c', kind: 'context' })).toThrow(RangeError);
    expect(() => rowObjectPrefix({ appId: 'app_a', contextId: '..', kind: 'context' })).toThrow(RangeError);
    expect(() => fileObjectName(row, 'x.txt', '../blb_aaaaaaaaaaaaaaaa')).toThrow(RangeError);
    expect(isFileObjectName('contexts/ctx_c/apps/app_a/files/x/../../y/blb_aaaaaaaaaaaaaaaa')).toBe(false);
    expect(isFileObjectName('blb_aaaaaaaaaaaaaaaa')).toBe(false);
  });
});

describe('S3 settings', () => {
  function problemsOf(env: NodeJS.ProcessEnv): string {
    try {
      loadConfig(env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).problems.join('\n');
    }
    throw new Error('the configuration was accepted');
  }

  it('reads BLOB_STORE=s3 with S3_BUCKET, S3_REGION, S3_ENDPOINT and S3_FORCE_PATH_STYLE', () => {
    expect(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'tis-files', S3_REGION: 'eu-west-1' })).toMatchObject({
      blobStore: 's3',
      s3: { bucket: 'tis-files', region: 'eu-west-1', endpoint: null, forcePathStyle: false },
    });
    expect(
      loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'tis', S3_REGION: 'us-east-1', S3_ENDPOINT: 'http://127.0.0.1:9000', S3_FORCE_PATH_STYLE: '1' }).s3,
    ).toEqual({ bucket: 'tis', region: 'us-east-1', endpoint: 'http://127.0.0.1:9000', forcePathStyle: true });
    expect(loadConfig({}).s3).toBeNull();
  });

  it('refuses missing or bad lines, and S3 lines without BLOB_STORE=s3, without echoing credentials', () => {
    expect(problemsOf({ BLOB_STORE: 's3' })).toContain('BLOB_STORE=s3 needs S3_BUCKET');
    expect(problemsOf({ BLOB_STORE: 's3' })).toContain('BLOB_STORE=s3 needs S3_REGION');
    expect(problemsOf({ BLOB_STORE: 's3', S3_BUCKET: 'Bad_Bucket', S3_REGION: 'eu-west-1' })).toContain('S3_BUCKET must be a bucket name');
    const withSecret = problemsOf({ BLOB_STORE: 's3', S3_BUCKET: 'tis', S3_REGION: 'auto', S3_ENDPOINT: 'https://AKID:hunter2@r2.example.test' });
    expect(withSecret).toContain('S3_ENDPOINT must not carry credentials');
    expect(withSecret).not.toContain('hunter2');
    expect(problemsOf({ BLOB_STORE: 's3', S3_BUCKET: 'tis', S3_REGION: 'auto', S3_FORCE_PATH_STYLE: 'maybe' })).toContain('S3_FORCE_PATH_STYLE');
    expect(problemsOf({ S3_BUCKET: 'tis' })).toContain('S3_BUCKET is set but BLOB_STORE is not s3');
  });
});
