/**
 * The reference LMS's store in each dialect for a test file: SQLite in a file per LMS, and PostgreSQL in schemas of
 * the file's own (made in `open`, dropped in `drop`), as the store tests do (tests/store/helpers.ts): one per
 * profile, since one store is one LMS of one family (Canvas's and Moodle's numeric line-item IDs would meet). The
 * PostgreSQL dialect runs when the database answers, and always in CI (`CI`, `TIS_REQUIRE_POSTGRES`), where
 * an unreachable database fails the file instead of leaving the dialect out.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { LmsProfileName } from '../../lms/profiles.ts';
import { PROFILE_NAMES } from '../../lms/profiles.ts';
import type { LmsStoreLocation } from '../../lms/store.ts';
import { openLmsStore } from '../../lms/store.ts';
import { PlatformKeys } from '../../lms/keys.ts';
import { POSTGRES_REQUIRED, POSTGRES_URL, postgresStatus } from '../store/helpers.ts';

export type LmsDialect = 'sqlite' | 'postgres';

export const LMS_DIALECTS: readonly LmsDialect[] = postgresStatus.available || POSTGRES_REQUIRED ? ['sqlite', 'postgres'] : ['sqlite'];
export const LMS_POSTGRES = LMS_DIALECTS.includes('postgres');

export async function adminQuery(sql: string): Promise<void> {
  if (!postgresStatus.available) throw new Error(postgresStatus.reason);
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface LmsStoreForFile {
  /** Makes the PostgreSQL schemas, or the SQLite template; call in `beforeAll`. */
  open(): Promise<void>;
  /** Where each LMS of the file keeps its store: on PostgreSQL, every LMS of a profile in one schema. */
  location(profile?: LmsProfileName): LmsStoreLocation;
  /** Drops the schemas, or removes the SQLite files; call in `afterAll`, after the LMSes stopped. */
  drop(): Promise<void>;
}

/**
 * A migrated LMS store with its first platform key, which each SQLite LMS of a file starts from as a copy
 * (decision CI-57): the key, an RSA 2048 key generation, was most of an LMS's start, and a file starts a
 * dozen. The key a first start makes on an empty store is still shown: on PostgreSQL here (a schema per
 * profile starts empty) and racing in tests/lms/shared-store.test.ts, on SQLite in memory by
 * tests/lms/browser.test.ts, whose launches verify against it.
 */
async function sqliteTemplate(): Promise<{ dir: string; template: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'tis-lms-'));
  const template = join(dir, 'template.sqlite');
  const db = await openLmsStore({ file: template });
  try {
    await new PlatformKeys(db).init(Date.now());
  } finally {
    await db.close();
  }
  return { dir, template };
}

export function lmsStoreFor(dialect: LmsDialect): LmsStoreForFile {
  const schemas = new Map<LmsProfileName, string>();
  let sqlite: { dir: string; template: string } | null = null;
  let copies = 0;
  return {
    async open() {
      if (dialect === 'sqlite') {
        sqlite = await sqliteTemplate();
        return;
      }
      const run = `tlms_${process.pid}_${randomBytes(4).toString('hex')}`;
      for (const profile of PROFILE_NAMES) {
        await adminQuery(`CREATE SCHEMA ${run}_${profile}`);
        schemas.set(profile, `${run}_${profile}`);
      }
    },
    location(profile = 'reference') {
      if (dialect === 'sqlite') {
        if (sqlite === null) throw new Error('the SQLite template is not made yet: call open() in beforeAll');
        const file = join(sqlite.dir, `lms-${(copies += 1)}.sqlite`);
        copyFileSync(sqlite.template, file);
        return { file };
      }
      const schema = schemas.get(profile);
      if (schema === undefined) throw new Error('the PostgreSQL schemas are not made yet: call open() in beforeAll');
      return { databaseUrl: POSTGRES_URL, schema };
    },
    async drop() {
      if (sqlite) rmSync(sqlite.dir, { recursive: true, force: true });
      sqlite = null;
      const names = [...schemas.values()];
      schemas.clear();
      for (const name of names) await adminQuery(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    },
  };
}
