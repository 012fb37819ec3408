/**
 * The `tis` commands that work on the service's store itself rather than through the dashboard API (decision
 * OBJ-08): they read the service's own settings from the environment. Their code, and the service's modules it
 * needs, are loaded only when one runs, so the API commands start without them.
 */
import type { Command } from './command.js';
import { oneOf } from './command.js';

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
];
