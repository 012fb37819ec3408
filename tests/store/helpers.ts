import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Clock, OpenStoreOptions, Repositories, RootDriver, Store } from '../../server/store/index.js';
import { PostgresDriver, SqliteDriver, openStore } from '../../server/store/index.js';

/** A clock tests move by hand; starts at a fixed instant so expiry arithmetic is readable. */
export class ManualClock implements Clock {
  constructor(public ms = Date.UTC(2026, 8, 21, 10, 0, 0)) {}
  nowMs(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export function tempDir(label = 'store'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `tis-${label}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Opens a store on a fresh SQLite file; `done()` closes it and removes the directory. */
export async function freshStore(
  options: Partial<Pick<OpenStoreOptions, 'clock' | 'busyTimeoutMs'>> = {},
): Promise<{ store: Store; dir: string; path: string; done: () => Promise<void> }> {
  const { dir, cleanup } = tempDir();
  const path = join(dir, 'tis.sqlite');
  const store = await openStore({ sqlitePath: path, ...options });
  return {
    store,
    dir,
    path,
    done: async () => {
      await store.close();
      cleanup();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Both stores. Every store test runs once per target: SQLite always, PostgreSQL when it answers (and in CI,
// where it must: see `postgresStatus`). Each PostgreSQL store gets a schema of its own in the test
// database, created here and dropped by `done()`, so test files and tests run in parallel in isolation.

export type StoreKind = 'sqlite' | 'postgres';

/** Where a database is, in a form a child process can open (tests/store/fixtures/writer.ts). */
export type StoreLocation = { kind: 'sqlite'; path: string } | { kind: 'postgres'; databaseUrl: string; schema: string };

export type StoreOptions = Partial<Pick<OpenStoreOptions, 'clock' | 'busyTimeoutMs'>>;

export interface FreshDatabase {
  store: Store;
  location: StoreLocation;
  /** Another store on the same database, as another instance of the service would open it; `done()` closes it. */
  openAnother(options?: StoreOptions): Promise<Store>;
  done(): Promise<void>;
}

export interface FreshDriver {
  /** A bare driver on an empty database: no migrations applied. */
  driver: RootDriver;
  /** Another driver on the same database; `done()` closes it. */
  another(options?: { busyTimeoutMs?: number }): RootDriver;
  done(): Promise<void>;
}

export interface StoreTarget {
  readonly name: StoreKind;
  /** An empty database (no store opened on it yet, nothing migrated). */
  emptyDatabase(): Promise<{ location: StoreLocation; done: () => Promise<void> }>;
  fresh(options?: StoreOptions): Promise<FreshDatabase>;
  freshDriver(options?: { busyTimeoutMs?: number }): Promise<FreshDriver>;
}

export function openAt(location: StoreLocation, options: StoreOptions = {}): Promise<Store> {
  return location.kind === 'sqlite'
    ? openStore({ sqlitePath: location.path, ...options })
    : openStore({ databaseUrl: location.databaseUrl, schema: location.schema, ...options });
}

const sqliteTarget: StoreTarget = {
  name: 'sqlite',
  async emptyDatabase() {
    const { dir, cleanup } = tempDir();
    return { location: { kind: 'sqlite', path: join(dir, 'tis.sqlite') }, done: async () => cleanup() };
  },
  async fresh(options = {}) {
    const { dir, cleanup } = tempDir();
    const location: StoreLocation = { kind: 'sqlite', path: join(dir, 'tis.sqlite') };
    return withOthers(location, await openAt(location, options), cleanup);
  },
  async freshDriver(options = {}) {
    const { dir, cleanup } = tempDir();
    const path = join(dir, 'db.sqlite');
    return driversOf((o) => new SqliteDriver({ path, ...o }), options, cleanup);
  },
};

export const POSTGRES_URL = process.env['TIS_TEST_DATABASE_URL'] || 'postgres://tis:tis@127.0.0.1:5432/tis_test';

/** Set by .ci/run (and by CI systems as `CI`): an unreachable PostgreSQL fails the tests instead of skipping. */
export const POSTGRES_REQUIRED = Boolean(process.env['CI'] || process.env['TIS_REQUIRE_POSTGRES']);

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Creates the test database when the server answers but the database is missing (a developer machine). */
async function probePostgres(): Promise<{ available: boolean; reason: string }> {
  try {
    await adminQuery('SELECT 1');
    return { available: true, reason: `PostgreSQL at ${redact(POSTGRES_URL)}` };
  } catch (err) {
    if ((err as { code?: string }).code === '3D000') {
      try {
        const url = new URL(POSTGRES_URL);
        const name = url.pathname.slice(1);
        url.pathname = '/postgres';
        const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5000 });
        await client.connect();
        try {
          await client.query(
            `CREATE DATABASE "${name.replace(/"/g, '""')}" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`,
          );
        } finally {
          await client.end();
        }
        await adminQuery('SELECT 1');
        return { available: true, reason: `PostgreSQL at ${redact(POSTGRES_URL)} (database created)` };
      } catch (createErr) {
        return { available: false, reason: `cannot create the test database: ${(createErr as Error).message}` };
      }
    }
    return { available: false, reason: `PostgreSQL at ${redact(POSTGRES_URL)} is unreachable: ${(err as Error).message}` };
  }
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

async function freshSchema(): Promise<{ schema: string; drop: () => Promise<void> }> {
  const schema = `t_${process.pid}_${randomBytes(5).toString('hex')}`;
  await adminQuery(`CREATE SCHEMA ${schema}`);
  return { schema, drop: () => adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`) };
}

/**
 * A freshly migrated schema: one the run's pool holds (emptied back to the template, tests/server/schema-pool.ts)
 * when there is one, since migrating a new schema costs PostgreSQL about a second, and dropping it more
 * (decision CI-56). Done with, it goes back to the pool when it still has the template's shape (a test
 * that altered it has it dropped). Without the run's template (outside vitest) the pool is off.
 */
async function migratedSchema(): Promise<{ schema: string; done: () => Promise<void> }> {
  const pool = await import('../server/schema-pool.js');
  const schema = `t_${process.pid}_${randomBytes(5).toString('hex')}`;
  const claimed = await pool.claimPooledSchema(POSTGRES_URL, pool.poolRun(), schema, 'store');
  if (!claimed) await adminQuery(`CREATE SCHEMA ${schema}`);
  return {
    schema,
    done: async () => {
      if (await pool.poolSchema(POSTGRES_URL, pool.poolRun(), schema, 'store')) return;
      await adminQuery(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    },
  };
}

const postgresTarget: StoreTarget = {
  name: 'postgres',
  async emptyDatabase() {
    const { schema, drop } = await freshSchema();
    return { location: { kind: 'postgres', databaseUrl: POSTGRES_URL, schema }, done: drop };
  },
  async fresh(options = {}) {
    const { schema, done: drop } = await migratedSchema();
    const location: StoreLocation = { kind: 'postgres', databaseUrl: POSTGRES_URL, schema };
    try {
      return withOthers(location, await openAt(location, options), drop);
    } catch (err) {
      await drop();
      throw err;
    }
  },
  async freshDriver(options = {}) {
    const { schema, drop } = await freshSchema();
    return driversOf(
      (o) =>
        new PostgresDriver({
          connectionString: POSTGRES_URL,
          schema,
          ...(o.busyTimeoutMs === undefined ? {} : { lockTimeoutMs: o.busyTimeoutMs }),
        }),
      options,
      drop,
    );
  },
};

function withOthers(location: StoreLocation, store: Store, cleanup: () => void | Promise<void>): FreshDatabase {
  const others: Store[] = [];
  return {
    store,
    location,
    async openAnother(options = {}) {
      const other = await openAt(location, options);
      others.push(other);
      return other;
    },
    async done() {
      await Promise.all([store, ...others].map((s) => s.close()));
      await cleanup();
    },
  };
}

function driversOf(
  make: (options: { busyTimeoutMs?: number }) => RootDriver,
  options: { busyTimeoutMs?: number },
  cleanup: () => void | Promise<void>,
): FreshDriver {
  const driver = make(options);
  const others: RootDriver[] = [];
  return {
    driver,
    another(o = {}) {
      const other = make(o);
      others.push(other);
      return other;
    },
    async done() {
      await Promise.all([driver, ...others].map((d) => d.close()));
      await cleanup();
    },
  };
}

export const postgresStatus = await probePostgres();

/** The stores to run every store test against. */
export const STORE_TARGETS: readonly StoreTarget[] = postgresStatus.available ? [sqliteTarget, postgresTarget] : [sqliteTarget];
export const SQLITE_TARGET = sqliteTarget;
export const POSTGRES_TARGET: StoreTarget | null = postgresStatus.available ? postgresTarget : null;

export interface Course {
  appId: string;
  apiKey: string;
  organizationId: string;
  contextId: string;
  locationId: string;
  studentUserId: string;
  studentMemberId: string;
  teacherUserId: string;
  teacherMemberId: string;
}

let seq = 0;

/** A self-hosted tool placed in one course with a student and an instructor. */
export async function seedCourse(repos: Repositories): Promise<Course> {
  seq += 1;
  const { app, apiKey } = await repos.apps.create({ name: `Tool ${seq}`, hosting: 'self_hosted' });
  const org = await repos.organizations.upsert({
    issuer: 'https://lms.example.edu',
    client: 'client-1',
    deployment: `deployment-${seq}`,
    title: 'Example University',
  });
  const context = await repos.contexts.upsert({ organizationId: org.id, externalId: `course-${seq}`, name: 'Biology 101', label: 'BIO-101' });
  const [location] = await repos.locations.syncServed(app.id, [{ extid: 'quiz-1', type: 'assessment', label: 'Quiz 1' }]);
  if (!location || !apiKey) throw new Error('seed failed');
  const student = await repos.users.upsert({ organizationId: org.id, externalId: `student-${seq}` });
  const teacher = await repos.users.upsert({
    organizationId: org.id,
    externalId: `teacher-${seq}`,
    givenName: 'Ada',
    familyName: 'Lovelace',
    fullName: 'Ada Lovelace',
    email: 'ada@example.edu',
  });
  const studentMember = await repos.members.upsert({ contextId: context.id, userId: student.id, groups: ['student'] });
  const teacherMember = await repos.members.upsert({ contextId: context.id, userId: teacher.id, groups: ['instructor'] });
  await repos.placements.create({
    appId: app.id,
    contextId: context.id,
    locationId: location.id,
    entry: { extid: 'quiz-1', type: 'assessment', label: 'Quiz 1', points: 100 },
  });
  return {
    appId: app.id,
    apiKey,
    organizationId: org.id,
    contextId: context.id,
    locationId: location.id,
    studentUserId: student.id,
    studentMemberId: studentMember.id,
    teacherUserId: teacher.id,
    teacherMemberId: teacherMember.id,
  };
}
