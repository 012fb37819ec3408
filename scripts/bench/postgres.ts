/**
 * The PostgreSQL columns of `npm run bench`: the same full stack (`server/main.ts`, production's pipeline)
 * on PostgreSQL with the shared blob store, as one instance and as two instances on one database, the load
 * spread over both (autocannon gives its connections to the URLs in turn, as a round-robin balancer would).
 *
 * Each column holds its own fixture, made by the same sections as the SQLite one (so a score's submissions
 * spread over as many members as on SQLite), and each instance names its connections
 * (`application_name`), so the CPU its PostgreSQL backends spend is read from their own `/proc/<pid>/stat`
 * beside the instances' own (PERF-52). With `pin` each instance is held to one core by `taskset`: one
 * instance on CPU 0, the second on CPU 1, and a third, also on CPU 0, for the column "2 instances, one
 * core", so one run shows what a second core gives a second instance (PERF-53).
 *
 * The database is `--postgres <url>` (default: `BENCH_DATABASE_URL`, `TIS_TEST_DATABASE_URL`, or the test
 * database postgres://tis:tis@127.0.0.1:5432/tis_test); the bench works in a schema of its own and drops it.
 * When the database does not answer, the columns are skipped with the reason instead of failing the bench.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { buildServices } from '../../server/app.js';
import { configFrom } from '../../server/config.js';
import { createTool, launch, placeLocation } from '../../tests/server/harness.js';
import { cpuMs } from './cold-start.js';
import { serviceEnvForLoopbackLms } from './school-lms.js';
import type { BenchFixture, BenchOperation, BenchSection } from './section.js';

export const DEFAULT_BENCH_DATABASE_URL =
  process.env['BENCH_DATABASE_URL'] || process.env['TIS_TEST_DATABASE_URL'] || 'postgres://tis:tis@127.0.0.1:5432/tis_test';

export interface StoreColumn {
  name: string;
  /** Every instance's origin; the load goes to each in turn. */
  urls: string[];
  /** The bench's SQLite fixture path rewritten to this database's fixture (other IDs, same shape); null: none. */
  path(sqlitePath: string): string | null;
  auth: string;
  /** The column's own operations (its fixture's paths, members and tokens), by operation name. */
  operations: Map<string, BenchOperation>;
  /** CPU milliseconds its instances' PostgreSQL backends have spent so far. */
  databaseCpuMs(): Promise<number>;
}

export const PG_ONE = 'PostgreSQL, 1 instance';
export const PG_TWO = 'PostgreSQL, 2 instances';
export const PG_TWO_ONE_CORE = 'PostgreSQL, 2 instances, one core';

export interface PostgresColumns {
  columns: StoreColumn[];
  /** For the figures' footnote: server version and its durability setting. */
  describe: string;
  /** Drops the schema; call once the instances have stopped. */
  drop(): Promise<void>;
}

export interface PostgresColumnsOptions {
  databaseUrl: string;
  /** The bench's fixture paths, rewritten onto this database's fixture. */
  sqlite: { rowPath: string };
  /** The LMS scores are published to; the database's service registers with it as the SQLite one does. */
  lms: BenchFixture['lms'];
  freePort(): Promise<number>;
  /** Starts `server/main.ts` with this environment on this port, as the bench starts its other targets. */
  startService(name: string, port: number, env: NodeJS.ProcessEnv): Promise<{ url: string; pid: number }>;
  /** The bench's sections: each column's fixture is prepared by them, as the SQLite one is. */
  sections: readonly BenchSection[];
  /** The operations measured (by name); the others are not prepared. */
  keep(name: string): boolean;
  /** Holds each instance to one core with `taskset` and adds the "2 instances, one core" column. */
  pin: boolean;
}

async function admin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function startPostgresColumns(options: PostgresColumnsOptions): Promise<PostgresColumns | { skipped: string }> {
  const { databaseUrl } = options;
  let describe: string;
  try {
    describe = await admin(databaseUrl, async (c) => {
      const setting = async (name: string): Promise<string> =>
        (await c.query<{ v: string }>('SELECT current_setting($1) AS v', [name])).rows[0]?.v ?? '?';
      const version = await setting('server_version');
      const sync = await setting('synchronous_commit');
      const fsync = await setting('fsync');
      return `PostgreSQL ${version.split(' ')[0]} on this machine (fsync=${fsync}, synchronous_commit=${sync})`;
    });
  } catch (err) {
    return { skipped: `PostgreSQL at ${redact(databaseUrl)} does not answer (${(err as Error).message})` };
  }
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  await admin(databaseUrl, (c) => c.query(`CREATE SCHEMA ${schema}`));
  const dataDir = mkdtempSync(join(tmpdir(), 'tis-bench-pg-'));
  const drop = async (): Promise<void> => {
    await admin(databaseUrl, (c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const [port1, port2] = await Promise.all([options.freePort(), options.freePort()]);
    // One public origin for both instances, as behind a balancer; the LMS knows the service by it.
    const publicUrl = `http://127.0.0.1:${port1}`;
    const store = { databaseUrl, databaseSchema: schema, blobStore: 'postgres' as const };
    const services = await buildServices(configFrom({ dataDir, publicUrl, logLevel: 'silent', allowLoopbackTools: true, lmsAutoActivate: true, ...store }));
    const tool = await createTool({ services });
    const quiz = await placeLocation({ services }, { app: tool.app.id, type: 'assessment', points: 10 });
    const student = await launch({ services }, { placed: quiz, groups: ['student'] });

    const operations = new Map<string, BenchOperation>();
    for (const section of options.sections) {
      for (const op of await section.prepare({ services, student, placed: quiz, lms: options.lms })) if (options.keep(op.name)) operations.set(op.name, op);
    }
    await services.blobs.close?.();
    await services.store.close();

    const rowPath = new URL(student.claims.storage.member).pathname;
    // Every section's operations are the column's own (`operations`); the row is the one path seeded.
    const path = (sqlitePath: string): string | null => (sqlitePath === options.sqlite.rowPath ? rowPath : null);
    const env = (port: number, instance: number): NodeJS.ProcessEnv => {
      const url = new URL(databaseUrl);
      // Names the instance's connections, so their backends can be found in pg_stat_activity.
      url.searchParams.set('application_name', `${schema}_${instance}`);
      return {
        ...serviceEnvForLoopbackLms,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        PUBLIC_URL: publicUrl,
        LOG_LEVEL: 'info',
        DATABASE_URL: url.toString(),
        DATABASE_SCHEMA: schema,
        BLOB_STORE: 'postgres',
      };
    };
    const pinTo = (pid: number, cpu: number): void => {
      // -a: every thread of the process (libuv's pool, V8's GC helpers), not only the main one.
      execFileSync('taskset', ['-a', '-cp', String(cpu), String(pid)], { stdio: 'ignore' });
    };
    const first = await options.startService('PostgreSQL instance 1', port1, env(port1, 1));
    const second = await options.startService('PostgreSQL instance 2', port2, env(port2, 2));
    const auth = student.auth;
    // A backend whose connection the pool closed between two readings would take its CPU out of the sum and
    // make a cell's difference negative, so every backend seen keeps the last figure read from it.
    const backends = new Map<number, { name: string; cpu: number }>();
    const backendsOf = (instances: number[]) => async (): Promise<number> => {
      const names = instances.map((i) => `${schema}_${i}`);
      const alive = await admin(databaseUrl, (c) =>
        c.query<{ pid: number; application_name: string }>(
          'SELECT pid, application_name FROM pg_stat_activity WHERE application_name = ANY($1)',
          [[1, 2, 3].map((i) => `${schema}_${i}`)],
        ),
      );
      for (const row of alive.rows) {
        const cpu = cpuMs(row.pid);
        if (Number.isFinite(cpu)) backends.set(row.pid, { name: row.application_name, cpu });
      }
      let sum = 0;
      for (const backend of backends.values()) if (names.includes(backend.name)) sum += backend.cpu;
      return sum;
    };
    const column = (name: string, urls: string[], instances: number[]): StoreColumn => ({
      name,
      urls,
      path,
      auth,
      operations,
      databaseCpuMs: backendsOf(instances),
    });
    const columns = [column(PG_ONE, [first.url], [1]), column(PG_TWO, [first.url, second.url], [1, 2])];
    let pinned = '';
    if (options.pin) {
      const port3 = await options.freePort();
      const third = await options.startService('PostgreSQL instance 3', port3, env(port3, 3));
      pinTo(first.pid, 0);
      pinTo(second.pid, 1);
      pinTo(third.pid, 0);
      columns.push(column(PG_TWO_ONE_CORE, [first.url, third.url], [1, 3]));
      pinned = '; instances held by taskset: instance 1 and 3 on CPU 0, instance 2 on CPU 1 (PostgreSQL and the load generator unpinned)';
    }
    return { columns, describe: `${describe}${pinned}`, drop };
  } catch (err) {
    await drop();
    throw err;
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
