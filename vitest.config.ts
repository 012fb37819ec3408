import { availableParallelism } from 'node:os';
import pg from 'pg';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import SlowFirstSequencer from './tests/sequencer.ts';

/**
 * Two projects in one run, so CI's single JSON report counts both:
 *
 *   default   every suite (the store suite runs each test on SQLite and on PostgreSQL by itself; the
 *             server suite runs on SQLite);
 *   postgres  the server suite again, every server on PostgreSQL with its files in the database
 *             (`TIS_TEST_STORE=postgres`, `TIS_TEST_BLOB_STORE=postgres`, a schema per server), plus
 *             tests/server/multi-instance.test.ts, which only makes sense there, minus the few files
 *             that never open a store (STORE_INDEPENDENT).
 *
 * `TIS_TEST_STORE=postgres npx vitest run tests/server` runs only the second, `TIS_TEST_STORE=sqlite` only
 * the first. Without either, the postgres project runs when PostgreSQL answers at `TIS_TEST_DATABASE_URL`
 * (default postgres://tis:tis@127.0.0.1:5432/tis_test), and always in CI (`CI` or `TIS_REQUIRE_POSTGRES`),
 * where an unreachable database fails the tests instead of leaving them out.
 */
const MULTI_INSTANCE = 'tests/server/multi-instance.test.ts';
/**
 * Server-suite files that never open a store (no harness server, no store: config parsing, pure permission
 * and validation tables, type-level checks, the outbound HTTP client against a local tool server, S3
 * signing). `TIS_TEST_STORE` changes nothing they do, so they run in the default project only (decision
 * CI-05). A file that starts a server or opens a store must not be listed here.
 */
const STORE_INDEPENDENT = [
  'tests/server/core/config.test.ts',
  'tests/server/core/store-config.test.ts',
  'tests/server/core/preflight.test.ts',
  'tests/server/core/handler-types.test.ts',
  'tests/server/core/permissions.test.ts',
  'tests/server/core/validation-errors.test.ts',
  'tests/server/files/s3-units.test.ts',
  'tests/server/scores/score-permissions.test.ts',
  'tests/server/outbound/http.test.ts',
];
async function postgresAnswers(): Promise<boolean> {
  const url = process.env['TIS_TEST_DATABASE_URL'] || 'postgres://tis:tis@127.0.0.1:5432/tis_test';
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch (err) {
    // The server answers but the database is missing: the store test helpers create it.
    return (err as { code?: string }).code === '3D000';
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** `--maxWorkers`, `--no-file-parallelism` and the like, or `VITEST_MAX_WORKERS`: the caller decides. */
function workersFromCommandLine(): boolean {
  if (process.env['VITEST_MAX_WORKERS']) return true;
  return process.argv.some((arg) => /^--(no-)?(maxWorkers|max-workers|fileParallelism|file-parallelism)(=|$)/.test(arg));
}

export default defineConfig(async () => {
  const only = process.env['TIS_TEST_STORE']?.trim() || null;
  if (only !== null && only !== 'sqlite' && only !== 'postgres') {
    throw new Error(`TIS_TEST_STORE must be sqlite or postgres, got ${JSON.stringify(only)}`);
  }
  const required = Boolean(process.env['CI'] || process.env['TIS_REQUIRE_POSTGRES']);
  const withPostgres = only === 'postgres' || (only === null && (required || (await postgresAnswers())));
  const projects: TestProjectInlineConfiguration[] = [];
  if (only !== 'postgres') {
    projects.push({
      extends: true,
      test: {
        name: 'default',
        include: ['tests/**/*.test.ts'],
        exclude: [MULTI_INSTANCE],
        env: { TIS_TEST_STORE: 'sqlite' },
      },
    });
  }
  if (withPostgres) {
    projects.push({
      extends: true,
      test: {
        name: 'postgres',
        include: ['tests/server/**/*.test.ts'],
        exclude: STORE_INDEPENDENT,
        // Files in the database too, so this project covers the blob store several instances share.
        env: { TIS_TEST_STORE: 'postgres', TIS_TEST_BLOB_STORE: 'postgres', TIS_REQUIRE_POSTGRES: '1' },
        globalSetup: ['tests/server/postgres-setup.ts'],
      },
    });
  } else if (only === null) {
    process.stderr.write('PostgreSQL does not answer: the server suite runs on SQLite only (set TIS_TEST_DATABASE_URL)\n');
  }
  return {
    test: {
      environment: 'node' as const,
      // Tests start real servers, Prism and Chromium; a slow CI box needs the headroom.
      testTimeout: 60_000,
      hookTimeout: 120_000,
      // Forks isolate native modules (better-sqlite3) and child processes better than worker threads.
      pool: 'forks' as const,
      // At least two files at once, even on 2 cores (CI), where vitest's default would be one: a test file
      // spends much of its time waiting (on PostgreSQL, fsync, Chromium, tsc and servers in child processes),
      // and a second file fills that time (decision CI-01). Left unset when the command line says how many,
      // since a project's own value would win over `--maxWorkers=1`.
      ...(workersFromCommandLine() ? {} : { maxWorkers: Math.max(2, availableParallelism() - 1) }),
      // The longest files first, so none of them runs alone at the end (tests/sequencer.ts, CI-02).
      sequence: { sequencer: SlowFirstSequencer },
      projects,
    },
  };
});
