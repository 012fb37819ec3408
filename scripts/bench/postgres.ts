/**
 * The PostgreSQL columns of `npm run bench`: the same full stack (`server/main.ts`, NODE_ENV=production)
 * on PostgreSQL with the shared blob store, as one instance and as two instances on one database, the load
 * spread over both (autocannon gives its connections to the URLs in turn, as a round-robin balancer would).
 *
 * The database is `--postgres <url>` (default: `BENCH_DATABASE_URL`, `TIS_TEST_DATABASE_URL`, or the test
 * database postgres://tis:tis@127.0.0.1:5432/tis_test); the bench works in a schema of its own and drops it.
 * When the database does not answer, the columns are skipped with the reason instead of failing the bench.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { buildServices } from '../../server/app.js';
import { configFrom } from '../../server/config.js';
import { createTool, launch, placeLocation } from '../../tests/server/harness.js';

export const DEFAULT_BENCH_DATABASE_URL =
  process.env['BENCH_DATABASE_URL'] || process.env['TIS_TEST_DATABASE_URL'] || 'postgres://tis:tis@127.0.0.1:5432/tis_test';

export interface StoreColumn {
  name: string;
  /** Every instance's origin; the load goes to each in turn. */
  urls: string[];
  /** The bench's SQLite fixture path rewritten to this database's fixture (other IDs, same shape); null: none. */
  path(sqlitePath: string): string | null;
  auth: string;
}

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
  sqlite: { rowPath: string; scorePath: string };
  freePort(): Promise<number>;
  /** Starts `server/main.ts` with this environment on this port, as the bench starts its other targets. */
  startService(name: string, port: number, env: NodeJS.ProcessEnv): Promise<{ url: string }>;
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
    // One public origin for both instances, as behind a balancer; each publishes scores to its own Sandbox LMS.
    const publicUrl = `http://127.0.0.1:${port1}`;
    const store = { databaseUrl, databaseSchema: schema, blobStore: 'postgres' as const };
    const services = await buildServices(configFrom({ dataDir, publicUrl, logLevel: 'silent', ...store }));
    const tool = await createTool({ services });
    const quiz = await placeLocation({ services }, { app: tool.app.id, type: 'assessment', points: 10 });
    const student = await launch({ services }, { placed: quiz, groups: ['student'] });
    await services.blobs.close?.();
    await services.store.close();

    const rowPath = new URL(student.claims.storage.member).pathname;
    const scorePath = new URL(student.claims.grade.submit ?? '').pathname;
    // Sections with fixtures of their own (files) are measured on SQLite only.
    const path = (sqlitePath: string): string | null => {
      if (sqlitePath === options.sqlite.rowPath) return rowPath;
      if (sqlitePath === options.sqlite.scorePath) return scorePath;
      return null;
    };
    const env = (port: number): NodeJS.ProcessEnv => ({
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      PUBLIC_URL: publicUrl,
      RESPONSE_VALIDATION: 'false',
      LOG_LEVEL: 'info',
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schema,
      BLOB_STORE: 'postgres',
    });
    const first = await options.startService('PostgreSQL instance 1', port1, env(port1));
    const second = await options.startService('PostgreSQL instance 2', port2, env(port2));
    const auth = student.auth;
    return {
      columns: [
        { name: 'PostgreSQL, 1 instance', urls: [first.url], path, auth },
        { name: 'PostgreSQL, 2 instances', urls: [first.url, second.url], path, auth },
      ],
      describe,
      drop,
    };
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
