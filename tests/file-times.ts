/**
 * A vitest reporter that writes each test file's time, per project, to the JSON file named by
 * `TIS_FILE_TIMES` (decision CI-21). `.ci/run` prints the slowest of them after the tests.
 *
 * vitest's own JSON report times a file from its first test's start to its last test's end, which leaves
 * out the file's `beforeAll` (where most files start their service, build the docs site or copy the
 * repository) and its import, and it does not say which project ran the file. This one counts import and
 * every test and hook of the file, as vitest's diagnostic gives them.
 *
 *   TIS_FILE_TIMES=/tmp/times.json npx vitest run --reporter=default --reporter=./tests/file-times.ts
 */
import { writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

export interface FileTime {
  project: string;
  file: string;
  /** Import plus every test and hook, in seconds. */
  seconds: number;
  state: string;
}

export default class FileTimes implements Reporter {
  readonly #times: FileTime[] = [];

  onTestModuleEnd(module: TestModule): void {
    const d = module.diagnostic();
    this.#times.push({
      project: module.project.name,
      file: module.relativeModuleId,
      seconds: Math.round((d.collectDuration + d.setupDuration + d.duration) / 100) / 10,
      state: module.state(),
    });
  }

  onTestRunEnd(): void {
    const out = process.env['TIS_FILE_TIMES'];
    if (!out) return;
    const times = [...this.#times].sort((a, b) => b.seconds - a.seconds);
    writeFileSync(out, `${JSON.stringify(times, null, 1)}\n`);
  }
}
