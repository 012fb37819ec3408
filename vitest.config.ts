import pg from 'pg';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

/**
 * Two projects in one run, so CI's single JSON report counts both:
 *
 *   default   every suite (the store suite runs each test on SQLite and on PostgreSQL by itself; the
 *             server suite runs on SQLite);
 *   postgres  the server suite again, every server on PostgreSQL with its files in the database
 *             (`TIS_TEST_STORE=postgres`, `TIS_TEST_BLOB_STORE=postgres`, a schema per server), plus
 *             tests/server/multi-instance.test.ts, which only makes sense there.
 *
 * `TIS_TEST_STORE=postgres npx vitest run tests/server` runs only the second, `TIS_TEST_STORE=sqlite` only
 * the first. Without either, the postgres project runs when PostgreSQL answers at `TIS_TEST_DATABASE_URL`
 * (default postgres://tis:tis@127.0.0.1:5432/tis_test), and always in CI (`CI` or `TIS_REQUIRE_POSTGRES`),
 * where an unreachable database fails the tests instead of leaving them out.
 */
const MULTI_INSTANCE = 'tests/server/multi-instance.test.ts';
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
      projects,
    },
  };
});
