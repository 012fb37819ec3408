/**
 * Global setup of both vitest projects (vitest.config.ts), run once. Each test server gets a schema of its
 * own, named after this run (`tsrv_<run>_...`, tests/server/harness.ts) and dropped when the server stops;
 * the teardown drops whatever this run left behind (a test that failed before stopping its server), and
 * never another run's schemas, so parallel runs on one database do not disturb each other.
 *
 * It also makes this run's template schemas, `tsrv_<run>_template` (migrated) and `tsrv_<run>_stemplate` (a
 * first start's, the Sandbox LMS's tables and both keys included): what an emptied schema must look like to
 * be kept for the next store test or server rather than dropped (tests/server/schema-pool.ts, CI-04, CI-56).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openStore } from '../../server/store/index.js';
import { PlatformKeys } from '../../lms/keys.js';
import { openLmsStore } from '../../lms/store.js';
import { Signer } from '../../server/signing/signer.js';
import type { PoolKind } from './schema-pool.js';
import { TEMPLATE_ENV } from './schema-pool.js';

const url = (): string => process.env['TIS_TEST_DATABASE_URL'] || 'postgres://tis:tis@127.0.0.1:5432/tis_test';

async function createTemplate(name: string, kind: PoolKind): Promise<void> {
  const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA "${name}"`);
  } finally {
    await client.end();
  }
  const store = await openStore({ databaseUrl: url(), schema: name });
  try {
    if (kind === 'server') await new Signer(store).init();
  } finally {
    await store.close();
  }
  if (kind === 'store') return;
  // What the Sandbox LMS adds at its first need (decision LTI-80): its tables in the schema and its key.
  const lms = await openLmsStore({ databaseUrl: url(), schema: name });
  try {
    await new PlatformKeys(lms).init(Date.now());
  } finally {
    await lms.close();
  }
}

/**
 * Both projects list this setup (the store tests of the default project use the pool too, CI-56). The first
 * call makes the run (and its teardown drops the run's schemas, after every project's tests); each makes the
 * templates its project needs: the store tests' migrated one, and the servers' first start in the `postgres`
 * project only (the default project's servers run on SQLite).
 */
const RUN = Symbol.for('tis.test.postgresRun');

export default async function setup(project?: { name: string }): Promise<() => Promise<void>> {
  const shared = globalThis as { [RUN]?: { run: string; reachable: boolean } };
  const first = shared[RUN] === undefined;
  const state = (shared[RUN] ??= { run: randomBytes(4).toString('hex'), reachable: true });
  const run = state.run;
  // Workers are forked after global setup, with this process's environment.
  process.env['TIS_TEST_RUN'] = run;
  const kinds: PoolKind[] = project?.name === 'default' ? ['store'] : ['store', 'server'];
  for (const kind of kinds) {
    if (!state.reachable || process.env[TEMPLATE_ENV[kind]]) continue;
    const template = `tsrv_${run}_${kind === 'store' ? 'template' : 'stemplate'}`;
    try {
      await createTemplate(template, kind);
      process.env[TEMPLATE_ENV[kind]] = template;
    } catch {
      // PostgreSQL unreachable or the template not made: every server gets a new schema, and the tests say
      // why PostgreSQL failed them.
      state.reachable = false;
    }
  }
  if (!first) return async () => undefined;
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
