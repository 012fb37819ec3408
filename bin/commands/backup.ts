/**
 * `tis store backup` and `tis store restore` once their command lines are read (`bin/commands/store.ts`
 * declares them): the embedded store's archive (server/backup/, decisions OPS-20 to OPS-22). The backup reads
 * the service's own settings from the environment; the restore needs none, only the directory it fills.
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { BackupError, backupDataDir } from '../../server/backup/backup.js';
import { RestoreError, restoreArchive } from '../../server/backup/restore.js';
import { ConfigError, loadConfig } from '../../server/config.js';
import { MIGRATIONS } from '../../server/store/index.js';
import type { Io } from './command.js';

/** The package's own version, found from wherever this file runs (a checkout, or `dist/` of an install). */
function serviceVersion(): string {
  try {
    return (createRequire(import.meta.url)('tool-integration-service/package.json') as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function isSystemError(err: unknown): err is Error & { code: string } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string';
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export async function backupStore(options: { out: string }, env: NodeJS.ProcessEnv, io: Io): Promise<number> {
  let config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.err(`error: ${err.problems.join('\n  ')}`);
    return 2;
  }
  if (config.databaseUrl !== null) {
    io.err('error: DATABASE_URL is set, so the store is PostgreSQL: back it up with pg_dump (README, "Backups and restore"); tis store backup archives the embedded SQLite store of DATA_DIR');
    return 2;
  }
  const out = resolve(options.out);
  try {
    const manifest = await backupDataDir({ dataDir: config.dataDir, out, serviceVersion: serviceVersion(), log: (line) => io.err(line) });
    const c = manifest.counts;
    const database = manifest.members.find((m) => m.role === 'database');
    io.out(
      `backed up ${config.dataDir} to ${out}: the database as of ${manifest.created} (${database?.size ?? 0} bytes), ` +
        `${plural(c.files, 'file record')}, ${plural(c.blobs, 'blob')} (${c.blob_bytes} bytes)` +
        (c.in_bucket > 0 ? `, ${c.in_bucket} in the bucket (not in the archive: back the bucket up with it)` : '') +
        (c.missing > 0 ? `, ${c.missing} already missing` : '') +
        (manifest.members.some((m) => m.role === 'platform-token') ? ', the platform token' : ''),
    );
    return 0;
  } catch (err) {
    if (err instanceof BackupError) {
      io.err(`error: ${err.message}`);
      return 1;
    }
    // The file system's refusals (no space, no permission): the message says which file.
    if (isSystemError(err)) {
      io.err(`error: the backup failed, and left no archive: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

export async function restoreStore(options: { archive: string; dataDir: string }, io: Io): Promise<number> {
  const dataDir = resolve(options.dataDir);
  try {
    const summary = await restoreArchive({ archive: resolve(options.archive), dataDir, knownMigrations: MIGRATIONS.map((m) => m.id) });
    const c = summary.manifest.counts;
    io.out(
      `restored ${options.archive} into ${dataDir}: the database as of ${summary.manifest.created} (made by ${summary.manifest.service_version}), ` +
        `${plural(c.files, 'file record')}, ${plural(c.blobs, 'blob')} (${c.blob_bytes} bytes)` +
        (c.in_bucket > 0 ? `; ${c.in_bucket} files are in the bucket` : '') +
        `. Start the service with DATA_DIR=${dataDir}`,
    );
    return 0;
  } catch (err) {
    if (err instanceof RestoreError) {
      io.err(`error: ${err.message}`);
      return 1;
    }
    if (isSystemError(err)) {
      io.err(`error: the restore failed, and left nothing in ${dataDir}: ${err.message}`);
      return 1;
    }
    throw err;
  }
}
