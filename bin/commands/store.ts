/**
 * The `tis` commands that work on the service's store itself rather than through the dashboard API (decision
 * OBJ-08): they read the service's own settings from the environment. Their code, and the service's modules it
 * needs, are loaded only when one runs, so the API commands start without them.
 */
import type { Command } from './command.js';
import { oneOf, UsageError } from './command.js';

export const commands: Command[] = [
  {
    name: 'files migrate',
    summary:
      'Copy the embedded blob store\'s files into the S3 bucket of BLOB_STORE=s3; each record moves once its copy\'s size and SHA-256 ' +
      'are verified. Files already copied are skipped (run it again after stopping the service); the source is kept. Exits 1 if a file failed.',
    token: 'store',
    environment: ['DATA_DIR or DATABASE_URL (+ DATABASE_SCHEMA)', 'S3_BUCKET, S3_REGION, S3_ENDPOINT, S3_FORCE_PATH_STYLE', 'AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ... (the AWS SDK chain)'],
    options: {
      from: { type: 'string', value: 'local|postgres', description: 'Where the bytes are now (default: $BLOB_STORE when it is local or postgres, else local).' },
      'dry-run': { type: 'boolean', description: 'Read and check every source file; copy nothing.' },
    },
    async run(ctx) {
      const from = oneOf(ctx.values['from'], 'from', ['local', 'postgres'] as const);
      const { migrateFiles } = await import('./files.js');
      return migrateFiles({ from, dryRun: ctx.values['dry-run'] === true }, ctx.env, ctx.io);
    },
  },
  {
    name: 'store backup',
    summary:
      'Archive the embedded store while the service runs: one consistent snapshot of DATA_DIR/tis.sqlite (SQLite\'s online backup), the ' +
      'local blobs its files name and the platform token, with a manifest of SHA-256s. PostgreSQL: pg_dump (README). Exits 1 if it failed.',
    token: 'store',
    environment: ['DATA_DIR (the SQLite store; with DATABASE_URL set, use pg_dump)'],
    options: {
      out: { type: 'string', value: '<file>', description: 'The archive to write (a new file; readable by its owner only).' },
    },
    async run(ctx) {
      const out = ctx.values['out'];
      if (typeof out !== 'string' || out === '') throw new UsageError('store backup needs --out <file>');
      const { backupStore } = await import('./backup.js');
      return backupStore({ out }, ctx.env, ctx.io);
    },
  },
  {
    name: 'store restore',
    summary:
      'Restore an archive of tis store backup into a new or empty directory, after verifying all of it; refuses a non-empty one. ' +
      'Writes nothing unless the whole archive is sound. Then start the service with DATA_DIR set to it.',
    token: 'store',
    args: ['archive'],
    environment: ['none: the directory is --data-dir'],
    options: {
      'data-dir': { type: 'string', value: '<dir>', description: 'The data directory to fill (created if missing; must be empty).' },
    },
    async run(ctx) {
      const dataDir = ctx.values['data-dir'];
      if (typeof dataDir !== 'string' || dataDir === '') throw new UsageError('store restore needs --data-dir <dir>');
      const { restoreStore } = await import('./backup.js');
      return restoreStore({ archive: ctx.args['archive'] ?? '', dataDir }, ctx.io);
    },
  },
];
