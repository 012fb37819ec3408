/**
 * `tis store backup`: one archive of a running service's embedded store, the SQLite database and the local
 * blobs its file records name, consistent with each other (decision OPS-21).
 *
 * The database is copied with SQLite's online backup API (better-sqlite3's `db.backup()`) in one step, so
 * the snapshot is one transaction's view whatever the service commits meanwhile (WAL mode: the service's
 * writers never wait for it). The blobs are copied after the snapshot, and the service may by then have
 * replaced or deleted a file and unlinked its blob (it deletes a blob only after the commit that stops
 * naming it, and blob IDs are never reused, so a blob's bytes never change). A blob found missing means the
 * snapshot is older than a delete: another snapshot is taken and only the blobs it newly names are copied;
 * a blob still named by that newer snapshot was already gone before it, so it is lost in the live service
 * too (recorded as missing, not retried). Blobs copied for an older snapshot stay in the archive as
 * `unused-blob` members, verified but never restored. The snapshot kept goes in last, then the manifest.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createReadStream } from 'node:fs';
import Database from 'better-sqlite3';
import { BlobNotFoundError } from '../files/blob-store.js';
import { LocalBlobStore } from '../files/local-blob-store.js';
import { isFileObjectName } from '../files/object-keys.js';
import { SQLITE_FILE_NAME } from '../store/index.js';
import type { BackupManifest, ManifestMember } from './manifest.js';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, DATABASE_MEMBER, MANIFEST_NAME, PLATFORM_TOKEN_MEMBER } from './manifest.js';
import { TarWriter } from './tar.js';

/** The platform token's file in `DATA_DIR` (server/dashboard/credentials.ts). */
const PLATFORM_TOKEN_FILE = 'platform-token';
/** Pages per backup step: all of them, so the copy is one read transaction (never restarted by a write). */
const ALL_PAGES = 0x7fffffff;
/** Snapshots before giving up, when the service replaces files faster than they are copied. */
const MAX_SNAPSHOTS = 20;

export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

export interface BackupOptions {
  dataDir: string;
  /** The archive to write; must not exist. */
  out: string;
  serviceVersion: string;
  /** Progress lines for the operator. */
  log?: (line: string) => void;
  /** Called once each snapshot is taken, before its blobs are copied (a test replaces a file right then). */
  afterSnapshot?: (snapshot: number) => Promise<void>;
}

interface Snapshot {
  path: string;
  takenAt: Date;
  localBlobs: string[];
  inBucket: number;
  files: number;
  migrations: string[];
  rows: Record<string, number>;
}

/** Reads what the archive needs from a snapshot file, and checks it is a whole, sound database of ours. */
function readSnapshot(path: string, takenAt: Date): Snapshot {
  const db = new Database(path, { fileMustExist: true });
  try {
    const check = db.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new BackupError(`the database snapshot failed SQLite's quick_check: ${String(check)}`);
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as Array<{ name: string }>).map((t) => t.name);
    if (!tables.includes('schema_migrations') || !tables.includes('files')) {
      throw new BackupError(`${SQLITE_FILE_NAME} is not a Tool Integration Service database (no schema_migrations or files table)`);
    }
    const rows: Record<string, number> = {};
    for (const table of tables) rows[table] = (db.prepare(`SELECT count(*) AS n FROM "${table.replaceAll('"', '""')}"`).get() as { n: number }).n;
    const migrations = (db.prepare('SELECT id FROM schema_migrations ORDER BY id').all() as Array<{ id: string }>).map((m) => m.id);
    const blobIds = (db.prepare('SELECT blob_id FROM files ORDER BY blob_id').all() as Array<{ blob_id: string }>).map((f) => f.blob_id);
    const inBucket = blobIds.filter(isFileObjectName).length;
    return { path, takenAt, localBlobs: blobIds.filter((id) => !isFileObjectName(id)), inBucket, files: blobIds.length, migrations, rows };
  } finally {
    db.close();
  }
}

export async function backupDataDir(options: BackupOptions): Promise<BackupManifest> {
  const log = options.log ?? (() => undefined);
  const databasePath = join(options.dataDir, SQLITE_FILE_NAME);
  if (!existsSync(databasePath)) throw new BackupError(`no SQLite store at ${databasePath}: DATA_DIR must be the service's data directory`);
  if (existsSync(options.out)) throw new BackupError(`${options.out} exists already: name a new file`);
  const outDir = dirname(options.out);
  if (!existsSync(outDir)) throw new BackupError(`the directory of ${options.out} does not exist`);

  // The snapshot and the archive in the making sit beside the archive (same file system, its free space),
  // and the archive gets its name only once complete.
  let source: Database.Database;
  try {
    source = new Database(databasePath, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new BackupError(`cannot open ${databasePath}: ${(err as Error).message}`);
  }
  let work: string;
  try {
    work = await mkdtemp(join(outDir, '.tis-backup-'));
  } catch (err) {
    source.close();
    throw new BackupError(`cannot write beside ${options.out}: ${(err as Error).message}`);
  }
  const partial = join(work, 'archive.tar');
  let writer: TarWriter | null = null;
  try {
    writer = await TarWriter.create(partial);
    const blobs = new LocalBlobStore(join(options.dataDir, 'blobs'));
    const members: ManifestMember[] = [];
    const archived = new Map<string, ManifestMember>();
    let missingBefore = new Set<string>();
    let lost = new Set<string>();
    let snapshot: Snapshot | null = null;
    let snapshots = 0;
    while (snapshot === null) {
      snapshots += 1;
      if (snapshots > MAX_SNAPSHOTS) {
        throw new BackupError(`the service replaced files faster than they could be copied (${MAX_SNAPSHOTS} snapshots); run the backup again`);
      }
      const path = join(work, `snapshot-${snapshots}.sqlite`);
      const takenAt = new Date();
      try {
        await source.backup(path, { progress: () => ALL_PAGES });
      } catch (err) {
        throw new BackupError(`SQLite could not copy ${databasePath}: ${(err as Error).message}`);
      }
      const taken = readSnapshot(path, takenAt);
      await options.afterSnapshot?.(snapshots);
      const missing = new Set<string>();
      for (const id of taken.localBlobs) {
        if (archived.has(id) || lost.has(id)) continue;
        // A blob named by this snapshot and already missing before it was taken is gone for good.
        if (missingBefore.has(id)) {
          lost.add(id);
          continue;
        }
        let opened;
        try {
          opened = await blobs.get(id);
        } catch (err) {
          if (!(err instanceof BlobNotFoundError)) throw err;
          missing.add(id);
          continue;
        }
        const name = `blobs/${LocalBlobStore.relativePath(id)}`;
        const written = await writer.add(name, opened.size, opened.stream);
        const member: ManifestMember = { ...written, role: 'blob' };
        members.push(member);
        archived.set(id, member);
      }
      if (missing.size === 0) {
        snapshot = taken;
      } else {
        log(`${missing.size} file${missing.size === 1 ? ' was' : 's were'} replaced or deleted while the backup copied them: taking a newer snapshot`);
        await rm(path, { force: true });
        missingBefore = missing;
      }
    }
    const named = new Set(snapshot.localBlobs);
    for (const [id, member] of archived) if (!named.has(id)) member.role = 'unused-blob';
    lost = new Set([...lost].filter((id) => named.has(id)));
    if (lost.size > 0) log(`warning: ${lost.size} file record${lost.size === 1 ? ' names a blob' : 's name blobs'} missing from DATA_DIR/blobs already (e.g. ${[...lost][0]}); the service answers 404 for them, and so will the restored copy`);

    const databaseSize = (await stat(snapshot.path)).size;
    const database = await writer.add(DATABASE_MEMBER, databaseSize, createReadStream(snapshot.path), { mtimeMs: snapshot.takenAt.getTime() });
    members.push({ ...database, role: 'database' });

    // Decision OPS-22: the bootstrap token goes with the database it opens, like the signing keys inside it.
    const tokenPath = join(options.dataDir, PLATFORM_TOKEN_FILE);
    if (existsSync(tokenPath)) {
      const token = await writer.add(PLATFORM_TOKEN_MEMBER, (await stat(tokenPath)).size, createReadStream(tokenPath));
      members.push({ ...token, role: 'platform-token' });
    }

    const restored = members.filter((m) => m.role === 'blob');
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      format_version: BACKUP_FORMAT_VERSION,
      created: snapshot.takenAt.toISOString(),
      service_version: options.serviceVersion,
      database: { engine: 'sqlite', migrations: snapshot.migrations, rows: snapshot.rows },
      counts: {
        files: snapshot.files,
        blobs: restored.length,
        blob_bytes: restored.reduce((sum, m) => sum + m.size, 0),
        in_bucket: snapshot.inBucket,
        missing: lost.size,
        snapshots,
      },
      members,
    };
    const body = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, 'utf8');
    await writer.add(MANIFEST_NAME, body.length, [body], { mode: 0o644 });
    await writer.finish();
    writer = null;
    if (existsSync(options.out)) throw new BackupError(`${options.out} appeared while the backup ran: name a new file`);
    await rename(partial, options.out);
    return manifest;
  } finally {
    source.close();
    await writer?.close();
    await rm(work, { recursive: true, force: true });
  }
}
