/**
 * `tis files migrate`: copies the files of an embedded blob store (`DATA_DIR/blobs`, or the PostgreSQL
 * `blobs` table) into the bucket of `BLOB_STORE=s3`, one file at a time, and points each file's record at
 * its copy only once the copy is verified (decision OBJ-08). It works on the store directly, not through
 * the API: it reads the service's own settings (`DATA_DIR` or `DATABASE_URL`, `S3_*`, the AWS SDK's
 * credential chain) from the environment.
 *
 * Per file: the source is read once to learn its size, MD5 and SHA-256 (the size must be the recorded
 * one); the bytes are sent with `Content-MD5`, so the store itself refuses a copy damaged on the way; the
 * copy is read back from the bucket and its size and SHA-256 compared. Only then does the record move.
 * Files already in the bucket are skipped, so the command can be run again (after stopping the service,
 * to catch files stored while it ran). The embedded store's bytes are left in place for the operator to
 * remove once the service runs on the bucket.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openConfiguredStore } from '../../server/app.js';
import { ConfigError, loadConfig } from '../../server/config.js';
import type { BlobStore } from '../../server/files/index.js';
import { DatabaseBlobStore, fileObjectName, isFileObjectName, LocalBlobStore } from '../../server/files/index.js';
import { S3BlobStore } from '../../server/files/s3-blob-store.js';
import type { FileRecord, RowKey, Store } from '../../server/store/index.js';

export interface FilesIo {
  out(line: string): void;
  err(line: string): void;
}

export const FILES_USAGE = `Usage: tis files migrate [--from local|postgres] [--dry-run]

Copies every stored file of an embedded blob store into the S3 bucket of
BLOB_STORE=s3 and moves each file's record to its copy once the copy's size
and SHA-256 are verified. Run it with the service's environment:

  DATA_DIR or DATABASE_URL (+ DATABASE_SCHEMA)   the service's store
  S3_BUCKET, S3_REGION, S3_ENDPOINT, S3_FORCE_PATH_STYLE   the bucket
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...  credentials (AWS SDK chain)

Options:
  --from local|postgres   Where the bytes are now (default: $BLOB_STORE when
                          it is local or postgres, else local).
  --dry-run               Read and check every source file; copy nothing.

Files already in the bucket are skipped: run it again after stopping the
service to catch files stored meanwhile, then start the service with
BLOB_STORE=s3. The source bytes are not deleted.
Exit status: 0 all copied, 1 some file could not be copied, 2 usage.
`;

interface Digest {
  size: number;
  md5: string;
  sha256: string;
}

async function digest(source: AsyncIterable<Uint8Array>): Promise<Digest> {
  const md5 = createHash('md5');
  const sha256 = createHash('sha256');
  let size = 0;
  for await (const chunk of source) {
    size += chunk.byteLength;
    md5.update(chunk);
    sha256.update(chunk);
  }
  return { size, md5: md5.digest('base64'), sha256: sha256.digest('hex') };
}

function rowName(row: RowKey): string {
  const parts = [`context ${row.contextId}`, `app ${row.appId}`];
  if (row.kind === 'location' || row.kind === 'member_location') parts.push(`location ${row.locationId}`);
  if (row.kind === 'member' || row.kind === 'member_location') parts.push(`member ${row.memberId}`);
  return parts.join(', ');
}

/** Copies and verifies one file; resolves with its object name, or throws with why not. */
async function copyOne(file: FileRecord & { row: RowKey }, source: BlobStore, bucket: S3BlobStore): Promise<string> {
  const name = fileObjectName(file.row, file.key, file.blobId);
  const before = await digest((await source.get(file.blobId)).stream);
  if (before.size !== file.size) throw new Error(`the source holds ${before.size} bytes, the record says ${file.size}`);
  const sent = await bucket.putObject(name, (await source.get(file.blobId)).stream, file.size, {
    contentType: file.contentType,
    md5: before.md5,
  });
  if (sent.sha256 !== before.sha256) throw new Error('the source changed while it was copied');
  const copy = await bucket.get(name);
  const after = await digest(copy.stream);
  if (after.size !== file.size || after.sha256 !== before.sha256) {
    await bucket.delete(name).catch(() => undefined);
    throw new Error(`the copy in the bucket differs (${after.size} bytes, sha256 ${after.sha256})`);
  }
  return name;
}

export async function runFiles(argv: readonly string[], env: NodeJS.ProcessEnv, io: FilesIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { from: { type: 'string' }, 'dry-run': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    io.err(`error: ${(err as Error).message}\n${FILES_USAGE}`);
    return 2;
  }
  const [command, ...rest] = parsed.positionals;
  if (parsed.values.help) {
    io.out(FILES_USAGE);
    return 0;
  }
  if (command !== 'migrate' || rest.length > 0) {
    io.err(`error: ${command === undefined ? 'tis files needs a command' : `unknown files command ${JSON.stringify([command, ...rest].join(' '))}`}\n${FILES_USAGE}`);
    return 2;
  }
  return migrateFiles({ from: parsed.values.from, dryRun: parsed.values['dry-run'] === true }, env, io);
}

/** `tis files migrate` once its command line is read (`bin/commands/store.ts` declares it for `tis`). */
export async function migrateFiles(options: { from?: string | undefined; dryRun: boolean }, env: NodeJS.ProcessEnv, io: FilesIo): Promise<number> {
  const envFrom = (env['BLOB_STORE'] ?? '').trim().toLowerCase();
  const from = options.from ?? (envFrom === 'postgres' ? 'postgres' : 'local');
  if (from !== 'local' && from !== 'postgres') {
    io.err(`error: --from must be local or postgres, got ${JSON.stringify(from)}`);
    return 2;
  }
  let config;
  try {
    // The target is the bucket whatever BLOB_STORE says now: the service is switched after the copy.
    config = loadConfig({ ...env, BLOB_STORE: 's3' });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.err(`error: ${err.problems.join('\n  ')}`);
    return 2;
  }
  if (from === 'postgres' && config.databaseUrl === null) {
    io.err('error: --from postgres reads the blobs table of DATABASE_URL, which is not set');
    return 2;
  }
  if (!config.s3) throw new Error('BLOB_STORE=s3 gave no S3 settings');
  const store: Store = await openConfiguredStore(config);
  const bucket = new S3BlobStore(config.s3);
  const source: BlobStore = from === 'postgres' ? new DatabaseBlobStore(store.driver) : new LocalBlobStore(join(config.dataDir, 'blobs'));
  const dryRun = options.dryRun;
  let copied = 0;
  let bytes = 0;
  let skipped = 0;
  let failed = 0;
  try {
    let after = '';
    for (;;) {
      const page = await store.files.listAllFiles(after, 100);
      if (page.length === 0) break;
      after = page[page.length - 1]!.blobId;
      for (const file of page) {
        if (isFileObjectName(file.blobId)) {
          skipped += 1;
          continue;
        }
        const where = `${file.key} (${rowName(file.row)})`;
        try {
          if (dryRun) {
            const checked = await digest((await source.get(file.blobId)).stream);
            if (checked.size !== file.size) throw new Error(`the source holds ${checked.size} bytes, the record says ${file.size}`);
            io.out(`would copy ${where}: ${file.size} bytes, sha256 ${checked.sha256}`);
          } else {
            const name = await copyOne(file, source, bucket);
            if (!(await store.files.moveBlob(file.blobId, name))) {
              // Replaced or deleted while it was copied: the copy belongs to nothing.
              await bucket.delete(name).catch(() => undefined);
              io.out(`skipped ${where}: replaced or deleted meanwhile`);
              continue;
            }
            io.out(`copied ${where}: ${file.size} bytes, verified`);
          }
          copied += 1;
          bytes += file.size;
        } catch (err) {
          failed += 1;
          io.err(`failed ${where}: ${(err as Error).message}`);
        }
      }
    }
  } finally {
    await bucket.close();
    await store.close();
  }
  io.out(
    `${dryRun ? 'checked' : 'copied'} ${copied} file${copied === 1 ? '' : 's'} (${bytes} bytes) from ${from} to s3://${config.s3.bucket}; ` +
      `${skipped} already in the bucket; ${failed} failed`,
  );
  return failed === 0 ? 0 : 1;
}
