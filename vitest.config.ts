import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import SlowFirstSequencer from './tests/sequencer.ts';

/**
 * Two projects in one run, so CI's single JSON report counts both (docs/testing.md says which layer proves what):
 *
 *   default   every test file, every server on SQLite (the store suite, tests/store, runs each test on
 *             SQLite and on PostgreSQL by itself, so repositories and SQL are proven on both stores there);
 *   postgres  the PostgreSQL smoke set (POSTGRES_SMOKE): the HTTP journeys again with every server on
 *             PostgreSQL and its files in the database (`TIS_TEST_STORE=postgres`,
 *             `TIS_TEST_BLOB_STORE=postgres`, a schema per server), and the files that only make sense there.
 *
 * A new test file runs in the default project by itself; it joins the smoke set only by being listed below
 * (decisions CI-20, CI-31). `TIS_TEST_STORE=postgres npx vitest run tests/server/...` runs a file of the list on
 * PostgreSQL; `TIS_TEST_STORE=sqlite` runs the default project only. Without either, the postgres project
 * runs when PostgreSQL answers at `TIS_TEST_DATABASE_URL` (default postgres://tis:tis@127.0.0.1:5432/tis_test),
 * and always in CI (`CI` or `TIS_REQUIRE_POSTGRES`), where an unreachable database fails the tests instead of
 * leaving them out.
 */
/** Files whose every test needs PostgreSQL (several instances on one database): the smoke set only. */
const POSTGRES_ONLY = ['tests/server/multi-instance.test.ts', 'tests/server/sandbox/shared-lms.test.ts'];
/**
 * The PostgreSQL smoke set (decision CI-20): end-to-end journeys over HTTP that cross every repository the
 * service has, plus what differs between the stores where a caller can see it. Everything else about the
 * stores is proven on both at the store layer (tests/store), which is far cheaper than a second run of the
 * HTTP suites. Keep it short: each file here runs twice.
 */
const POSTGRES_SMOKE = [
  ...POSTGRES_ONLY,
  // Every operation of the current contract (files in the database included), a success and a refusal
  // each, and of both archived contracts.
  'tests/server/coverage.test.ts',
  'tests/server/archived/operations.test.ts',
  // The LMS journey: registration, launches, deep linking and scores to the gradebook in order across two
  // instances (one test runs on PostgreSQL only), and the score path's store work on its own.
  'tests/server/lti/deep-linking-ags.test.ts',
  'tests/server/scores/scores.test.ts',
  // A repeated Idempotency-Key: its row is locked FOR UPDATE on PostgreSQL only.
  'tests/server/scores/idempotency.test.ts',
  // The operators and the audit log, whose repositories no store test covers.
  'tests/server/dashboard/operators.test.ts',
  // Files with their bytes in the database (the blob store several instances share), and its rules.
  'tests/server/files/database-blob-store.test.ts',
  // PostgreSQL's TEXT refuses U+0000; and nothing a caller sends reaches it as a 500.
  'tests/server/core/nul-text.test.ts',
  'tests/server/core/fuzz.test.ts',
  // Acknowledged writes survive SIGKILL of the service.
  'tests/server/crash.test.ts',
];
// A renamed or moved file would otherwise leave the smoke set without a word.
const missingSmoke = POSTGRES_SMOKE.filter((file) => !existsSync(fileURLToPath(new URL(file, import.meta.url))));
if (missingSmoke.length > 0) {
  throw new Error(`vitest.config.ts: POSTGRES_SMOKE names files that do not exist: ${missingSmoke.join(', ')}`);
}

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
        exclude: POSTGRES_ONLY,
        env: { TIS_TEST_STORE: 'sqlite' },
        // The first-started SQLite DATA_DIR test servers are copied from (decision CI-55), and the run's
        // PostgreSQL template and schema pool, which the store tests draw on too (CI-56).
        globalSetup: ['tests/server/sqlite-setup.ts', 'tests/server/postgres-setup.ts'],
      },
    });
  }
  if (withPostgres) {
    projects.push({
      extends: true,
      test: {
        name: 'postgres',
        include: POSTGRES_SMOKE,
        // Files in the database too, so this project covers the blob store several instances share.
        env: { TIS_TEST_STORE: 'postgres', TIS_TEST_BLOB_STORE: 'postgres', TIS_REQUIRE_POSTGRES: '1' },
        globalSetup: ['tests/server/postgres-setup.ts'],
      },
    });
  } else if (only === null) {
    process.stderr.write('PostgreSQL does not answer: the PostgreSQL smoke set and the store tests on PostgreSQL are left out (set TIS_TEST_DATABASE_URL)\n');
  }
  return {
    test: {
      environment: 'node' as const,
      // Tests start real servers, Prism and Chromium; a slow CI box needs the headroom.
      testTimeout: 60_000,
      hookTimeout: 120_000,
      // Forks isolate native modules (better-sqlite3) and child processes better than worker threads.
      pool: 'forks' as const,
      // A worker runs file after file in one module graph instead of importing the service afresh for each
      // (decision CI-37: imports 123 s → 53 s added up, the run 15% shorter). So a file leaves nothing behind
      // in a module: it restores what it changes in `process.env` and every spy, and stops its servers.
      isolate: false,
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
