/**
 * A first-started SQLite `DATA_DIR`, copied into each harness-made `DATA_DIR` instead of starting from
 * nothing (decision CI-55). What a service does on its first start on an empty directory (every migration
 * of its store and of the Sandbox LMS's store, and one RSA key for each: the service's signing key and the
 * LMS's platform key) cost about half a second of CPU per server, most of it the two RSA 2048 key
 * generations; the test servers start about 150 times a run.
 *
 * The template is made once per vitest run by the default project's global setup (`TEMPLATE_ENV` names it
 * to the forked workers), or once per process outside it. Like the PostgreSQL schema pool (CI-04), it
 * serves only `DATA_DIR`s the harness makes itself, without a test clock: a test that names its own
 * `dataDir` (a first start, a restart, the crash tests) still starts on an empty directory and makes its
 * own keys, and a clock of a test's own would not see a key the template made at the real time.
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Set by the global setup to the run's template directory; the workers are forked with it. */
export const TEMPLATE_ENV = 'TIS_TEST_SQLITE_TEMPLATE';

/** Makes `dir` what a first start leaves: both stores migrated, both signing keys made; every file closed. */
export async function makeSqliteTemplate(dir: string): Promise<void> {
  // Imported here: a worker only copies the run's template, and the LMS's modules are not otherwise loaded
  // before a test needs the Sandbox (PERF-39).
  const [{ PlatformKeys }, { openLmsStore }, { SANDBOX_LMS_DB_FILE }, { Signer }, { openStore }] = await Promise.all([
    import('../../lms/keys.js'),
    import('../../lms/store.js'),
    import('../../server/sandbox/lms-host.js'),
    import('../../server/signing/signer.js'),
    import('../../server/store/index.js'),
  ]);
  const store = await openStore({ dataDir: dir });
  try {
    await new Signer(store).init();
  } finally {
    await store.close();
  }
  const lms = await openLmsStore({ file: join(dir, SANDBOX_LMS_DB_FILE) });
  try {
    await new PlatformKeys(lms).init(Date.now());
  } finally {
    await lms.close();
  }
}

let ownTemplate: Promise<string> | null = null;

function template(): Promise<string> {
  const fromSetup = process.env[TEMPLATE_ENV];
  if (fromSetup) return Promise.resolve(fromSetup);
  ownTemplate ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tis-template-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    await makeSqliteTemplate(dir);
    return dir;
  })();
  return ownTemplate;
}

/** Copies the template's files into `dataDir` (empty, made by the harness). */
export async function seedDataDir(dataDir: string): Promise<void> {
  const from = await template();
  for (const name of readdirSync(from)) copyFileSync(join(from, name), join(dataDir, name));
}
