/**
 * What a backup archive says about itself (decision OPS-21): `manifest.json`, the archive's last member,
 * names every other member with its size and SHA-256, so a restore verifies the whole archive before it
 * writes a byte. Members are only ever these names, so no archive can write outside the directory it is
 * restored into.
 */

export const MANIFEST_NAME = 'manifest.json';
export const BACKUP_FORMAT = 'tis-backup';
export const BACKUP_FORMAT_VERSION = 1;

/**
 * What a member is: the SQLite snapshot, the bytes of a file the snapshot names, the bootstrap token, or the
 * bytes of a file an earlier snapshot of the same backup named and a later one no longer does (copied before
 * the service replaced it; verified, never restored).
 */
export type MemberRole = 'database' | 'blob' | 'platform-token' | 'unused-blob';

export interface ManifestMember {
  name: string;
  role: MemberRole;
  size: number;
  sha256: string;
}

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  /** ISO 8601: when the database snapshot that was kept was taken. */
  created: string;
  service_version: string;
  database: {
    engine: 'sqlite';
    /** The schema's migrations, as `schema_migrations` lists them. */
    migrations: string[];
    /** Rows per table in the snapshot. */
    rows: Record<string, number>;
  };
  counts: {
    /** File records in the snapshot. */
    files: number;
    /** Their bytes in the archive (local blobs). */
    blobs: number;
    blob_bytes: number;
    /** File records whose bytes are in an object store's bucket (`BLOB_STORE=s3`): not in the archive. */
    in_bucket: number;
    /** File records whose local blob was already missing from `DATA_DIR/blobs` (the service answers 404 for them too). */
    missing: number;
    /** Snapshots taken: more than one when the service replaced files while they were copied. */
    snapshots: number;
  };
  /** Every member but the manifest, in archive order. */
  members: ManifestMember[];
}

export const DATABASE_MEMBER = 'tis.sqlite';
export const PLATFORM_TOKEN_MEMBER = 'platform-token';
/** `blobs/<two characters of the ID>/<ID>`, the local blob store's own layout. */
const BLOB_MEMBER = /^blobs\/([a-z2-7]{2})\/blb_([a-z2-7]{16,64})$/;

/** Whether `name` is a member a restore may write for `role` (and nothing else). */
export function memberNameFits(name: string, role: MemberRole): boolean {
  switch (role) {
    case 'database':
      return name === DATABASE_MEMBER;
    case 'platform-token':
      return name === PLATFORM_TOKEN_MEMBER;
    case 'blob':
    case 'unused-blob': {
      const m = BLOB_MEMBER.exec(name);
      return m !== null && m[2]!.startsWith(m[1]!);
    }
  }
}

export class ManifestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ManifestError';
  }
}

const ROLES: readonly MemberRole[] = ['database', 'blob', 'platform-token', 'unused-blob'];

/** Parses and checks a manifest's shape; throws `ManifestError` with what is wrong. */
export function parseManifest(raw: string): BackupManifest {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ManifestError('its manifest.json is not JSON');
  }
  const m = value as Partial<BackupManifest> | null;
  if (typeof m !== 'object' || m === null || m.format !== BACKUP_FORMAT) throw new ManifestError('it is not a tis backup (manifest.json names no tis-backup format)');
  if (m.format_version !== BACKUP_FORMAT_VERSION) {
    throw new ManifestError(`it is in backup format ${JSON.stringify(m.format_version)}, and this tis reads format ${BACKUP_FORMAT_VERSION} (restore it with the version that made it, ${JSON.stringify(m.service_version)})`);
  }
  if (m.database?.engine !== 'sqlite' || !Array.isArray(m.database.migrations)) throw new ManifestError('its manifest names no SQLite database');
  if (!Array.isArray(m.members)) throw new ManifestError('its manifest lists no members');
  const seen = new Set<string>();
  for (const member of m.members) {
    const ok =
      typeof member === 'object' && member !== null &&
      typeof member.name === 'string' && ROLES.includes(member.role) && memberNameFits(member.name, member.role) &&
      Number.isSafeInteger(member.size) && member.size >= 0 && typeof member.sha256 === 'string' && /^[0-9a-f]{64}$/.test(member.sha256);
    if (!ok) throw new ManifestError(`its manifest lists a member it may not: ${JSON.stringify(member).slice(0, 200)}`);
    if (seen.has(member.name)) throw new ManifestError(`its manifest lists ${member.name} twice`);
    seen.add(member.name);
  }
  if (m.members.filter((x) => x.role === 'database').length !== 1) throw new ManifestError('its manifest lists no database snapshot');
  return m as BackupManifest;
}
