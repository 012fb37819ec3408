/**
 * `tis store restore`: a backup archive (backup.ts) into a new or empty data directory (decision OPS-21).
 *
 * Nothing is written until the whole archive is verified: every header, every member's size and SHA-256
 * against the manifest, no member the manifest does not list (and none it lists missing), no name outside
 * the layout, and a schema this version of the service knows. Then the members are written into a
 * temporary directory inside the target, hashed again as they are written (the archive could have changed
 * since), made durable, and renamed into place, the database last; on any failure the temporary directory
 * and whatever was already moved are removed, and so is the target if the restore created it.
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { BackupManifest, ManifestMember } from './manifest.js';
import { DATABASE_MEMBER, MANIFEST_NAME, ManifestError, parseManifest } from './manifest.js';
import type { TarMember } from './tar.js';
import { TarFormatError, TarReader } from './tar.js';

export class RestoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestoreError';
  }
}

export interface RestoreOptions {
  archive: string;
  dataDir: string;
  /** The migrations this version of the service knows: a backup with others was made by a newer one. */
  knownMigrations: readonly string[];
}

/** Manifests are small (a line per file); this bounds what a damaged archive can make us read into memory. */
const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;

async function sha256Of(reader: TarReader, member: TarMember): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of reader.bytes(member)) hash.update(chunk);
  return hash.digest('hex');
}

/** Reads the whole archive and checks it against its manifest; answers the manifest and where each member is. */
async function verify(reader: TarReader, knownMigrations: readonly string[]): Promise<{ manifest: BackupManifest; members: Map<string, TarMember> }> {
  const found: TarMember[] = [];
  const hashes = new Map<string, string>();
  let manifestMember: TarMember | null = null;
  for await (const member of reader.members()) {
    if (manifestMember) throw new RestoreError(`${MANIFEST_NAME} is not the archive's last member`);
    if (member.name === MANIFEST_NAME) {
      manifestMember = member;
      continue;
    }
    if (hashes.has(member.name)) throw new RestoreError(`the archive holds ${member.name} twice`);
    hashes.set(member.name, await sha256Of(reader, member));
    found.push(member);
  }
  if (!manifestMember) throw new RestoreError(`the archive has no ${MANIFEST_NAME} (not a tis backup, or cut short)`);
  if (manifestMember.size > MAX_MANIFEST_BYTES) throw new RestoreError(`its ${MANIFEST_NAME} is too large`);
  const chunks: Buffer[] = [];
  for await (const chunk of reader.bytes(manifestMember)) chunks.push(chunk);
  const manifest = parseManifest(Buffer.concat(chunks).toString('utf8'));

  const members = new Map(found.map((m) => [m.name, m]));
  const listed = new Set(manifest.members.map((m) => m.name));
  const extra = found.find((m) => !listed.has(m.name));
  if (extra) throw new RestoreError(`the archive holds ${extra.name}, which its manifest does not list`);
  for (const expected of manifest.members) {
    const member = members.get(expected.name);
    if (!member) throw new RestoreError(`the archive lacks ${expected.name}, which its manifest lists`);
    if (member.size !== expected.size || hashes.get(expected.name) !== expected.sha256) {
      throw new RestoreError(`${expected.name} is damaged: its size or SHA-256 is not the one the manifest records`);
    }
  }
  const unknown = manifest.database.migrations.filter((id) => !knownMigrations.includes(id));
  if (unknown.length > 0) {
    throw new RestoreError(`its database was migrated by a newer version of the service (${manifest.service_version}; migrations ${unknown.join(', ')}): restore it with that version`);
  }
  return { manifest, members };
}

async function syncDirectory(dir: string): Promise<void> {
  let handle: FileHandle | null = null;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // Some platforms cannot open a directory; the renames are atomic there anyway.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Writes one member under `root`, hashing it again on the way; owner-only, like the service's own files. */
async function extract(reader: TarReader, member: TarMember, expected: ManifestMember, root: string): Promise<void> {
  const path = join(root, ...expected.name.split('/'));
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const handle = await open(path, 'wx', 0o600);
  const hash = createHash('sha256');
  try {
    let position = 0;
    for await (const chunk of reader.bytes(member)) {
      hash.update(chunk);
      let offset = 0;
      while (offset < chunk.length) {
        const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset, position);
        offset += bytesWritten;
        position += bytesWritten;
      }
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (hash.digest('hex') !== expected.sha256) throw new RestoreError(`${expected.name} changed in the archive while it was restored`);
}

export interface RestoreSummary {
  manifest: BackupManifest;
  /** Files written (the database, blobs, the platform token). */
  written: number;
  bytes: number;
}

export async function restoreArchive(options: RestoreOptions): Promise<RestoreSummary> {
  const target = options.dataDir;
  let created = false;
  try {
    const info = await stat(target);
    if (!info.isDirectory()) throw new RestoreError(`${target} is not a directory`);
    const entries = await readdir(target);
    if (entries.length > 0) {
      const shown = entries.slice(0, 3).join(', ') + (entries.length > 3 ? ', ...' : '');
      throw new RestoreError(`${target} is not empty (it holds ${shown}): restore writes only into an empty or new directory, never over a data directory`);
    }
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err;
    await mkdir(target, { recursive: true, mode: 0o700 });
    created = true;
  }

  let reader: TarReader;
  try {
    reader = await TarReader.open(options.archive);
  } catch (err) {
    if (created) await rmdir(target).catch(() => undefined);
    if (err instanceof TarFormatError) throw new RestoreError(`${options.archive} cannot be restored: ${err.message}`);
    if ((err as { code?: string }).code === 'ENOENT') throw new RestoreError(`${options.archive} does not exist`);
    throw err;
  }
  const temporary = join(target, `.tis-restore-${process.pid}`);
  const moved: string[] = [];
  try {
    let verified;
    try {
      verified = await verify(reader, options.knownMigrations);
    } catch (err) {
      if (err instanceof TarFormatError || err instanceof ManifestError) throw new RestoreError(`${options.archive} cannot be restored: ${err.message}`);
      if (err instanceof RestoreError) throw new RestoreError(`${options.archive} cannot be restored: ${err.message}`);
      throw err;
    }
    const { manifest, members } = verified;
    await mkdir(temporary, { mode: 0o700 });
    const restored = manifest.members.filter((m) => m.role !== 'unused-blob');
    for (const expected of restored) await extract(reader, members.get(expected.name)!, expected, temporary);
    await syncDirectory(join(temporary, 'blobs'));
    await syncDirectory(temporary);
    // Top-level entries into place, the database last: a data directory without it is plainly incomplete.
    const top = [...new Set(restored.map((m) => m.name.split('/')[0]!))].sort((a, b) => Number(a === DATABASE_MEMBER) - Number(b === DATABASE_MEMBER));
    for (const name of top) {
      await rename(join(temporary, name), join(target, name));
      moved.push(name);
    }
    await rmdir(temporary);
    await syncDirectory(target);
    return { manifest, written: restored.length, bytes: restored.reduce((sum, m) => sum + m.size, 0) };
  } catch (err) {
    await rm(temporary, { recursive: true, force: true });
    for (const name of moved) await rm(join(target, name), { recursive: true, force: true });
    if (created) await rmdir(target).catch(() => undefined);
    throw err;
  } finally {
    await reader.close();
  }
}
