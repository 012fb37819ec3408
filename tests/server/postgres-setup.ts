/**
 * Global setup of the `postgres` vitest project (vitest.config.ts). Each test server gets a schema of its
 * own, named after this run (`tsrv_<run>_...`, tests/server/harness.ts) and dropped when the server stops;
 * the teardown drops whatever this run left behind (a test that failed before stopping its server), and
 * never another run's schemas, so parallel runs on one database do not disturb each other.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export default function setup(): () => Promise<void> {
  const run = randomBytes(4).toString('hex');
  // Workers are forked after global setup, with this process's environment.
  process.env['TIS_TEST_RUN'] = run;
  return async () => {
    const url = process.env['TIS_TEST_DATABASE_URL'] || 'postgres://tis:tis@127.0.0.1:5432/tis_test';
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
      const { rows } = await client.query<{ name: string }>(
        "SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE 'tsrv\\_' || $1 || '\\_%'",
        [run],
      );
      for (const { name } of rows) await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    } catch {
      // PostgreSQL unreachable: the tests already failed saying so, and there is nothing to drop.
    } finally {
      await client.end().catch(() => undefined);
    }
  };
}
