/**
 * A real S3-compatible server on loopback for the files tests and the files bench: s3rver (npm), on
 * 127.0.0.1 and a port of its own, keeping objects in a temporary directory removed by `stop()`.
 *
 * What s3rver checks and what it does not (decision OBJ-07): it takes POST uploads but ignores the POST
 * policy entirely (no expiry, size range, content type or signature check), accepts any SigV4 signature
 * from a known access key without verifying it, but does refuse a presigned GET past its `X-Amz-Expires`
 * and applies the `response-*` overrides. So every refusal the service promises must come from the
 * service's own check of what arrived.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Settings } from '../../server/files/s3-settings.js';

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverConstructor = new (options: Record<string, unknown>) => S3rverInstance;

const require = createRequire(import.meta.url);

/** s3rver's built-in key pair; the SDK finds it in the environment like any credentials. */
export const LOCAL_S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' } as const;

export interface LocalS3 {
  endpoint: string;
  settings: S3Settings;
  directory: string;
  stop(): Promise<void>;
}

export async function startLocalS3(bucket = 'tis-files'): Promise<LocalS3> {
  const S3rver = require('s3rver') as S3rverConstructor;
  const directory = mkdtempSync(join(tmpdir(), 'tis-s3-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  const address = await server.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  return {
    endpoint,
    directory,
    settings: { bucket, region: 'us-east-1', endpoint, forcePathStyle: true },
    stop: async () => {
      await server.close().catch(() => undefined);
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
