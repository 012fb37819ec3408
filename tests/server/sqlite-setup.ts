/**
 * Global setup of the default vitest project (vitest.config.ts): the run's SQLite template `DATA_DIR`,
 * which the harness copies into each `DATA_DIR` it makes (tests/server/sqlite-template.ts, decision CI-55),
 * removed at the end of the run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeSqliteTemplate, TEMPLATE_ENV } from './sqlite-template.js';

export default async function setup(): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), 'tis-template-'));
  await makeSqliteTemplate(dir);
  // Workers are forked after global setup, with this process's environment.
  process.env[TEMPLATE_ENV] = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
