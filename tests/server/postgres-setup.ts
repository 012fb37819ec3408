/**
 * Global setup of both vitest projects (vitest.config.ts), run once. Each test server gets a schema of its
 * own, named after this run (`tsrv_<run>_...`, tests/server/harness.ts) and dropped when the server stops;
 * the teardown drops whatever this run left behind (a test that failed before stopping its server), and
 * never another run's schemas, so parallel runs on one database do not disturb each other.
 *
 * It also migrates this run's template schema, `tsrv_<run>_template`: what an emptied schema must look like
 * to be kept for the next server rather than dropped (tests/server/schema-pool.ts, decision CI-04).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openStore } from '../../server/store/index.js';
import { TEMPLATE_ENV } from './schema-pool.js';

const url = (): string => process.env['TIS_TEST_DATABASE_URL'] || 'postgres://tis:tis@127.0.0.1:5432/tis_test';

async function createTemplate(name: string): Promise<void> {
  const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA "${name}"`);
  } finally {
    await client.end();
  }
  const store = await openStore({ databaseUrl: url(), schema: name });
  await store.close();
}

/** Both projects list this setup (the store tests of the default one use the pool too, CI-56): the first makes the run. */
const MADE = Symbol.for('tis.test.postgresRun');

export default async function setup(): Promise<() => Promise<void>> {
  const made = globalThis as { [MADE]?: true };
  if (made[MADE]) return async () => undefined;
  made[MADE] = true;
  const run = randomBytes(4).toString('hex');
  // Workers are forked after global setup, with this process's environment.
  process.env['TIS_TEST_RUN'] = run;
  const template = `tsrv_${run}_template`;
  try {
    await createTemplate(template);
    process.env[TEMPLATE_ENV] = template;
  } catch {
    // PostgreSQL unreachable or the template not made: every server gets a new schema, and the tests say
    // why PostgreSQL failed them.
  }
  return async () => {
    const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 5000 });
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
