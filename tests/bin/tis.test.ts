/**
 * The operators' CLI (bin/tis.ts) as the process an operator runs: `npm run tis` in a checkout and the
 * package's "bin", exit code 0 with the help on stdout, 1 with the reason on stderr when nothing answers at
 * the URL, 2 with the usage error on stderr for a wrong command line. What each command does against a real
 * service runs in-process through the CLI's own `run` in commands.test.ts (decision CI-45): the process entry
 * (`main`) only hands `run` the argv, the environment and stdout/stderr, which is what this file proves.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** The checkout (not from tests/e2e/support.ts, whose import loads playwright-core). */
const REPO_ROOT = join(import.meta.dirname, '../..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `file args` in the checkout with only the environment given (plus PATH). */
function spawnRun(file: string, args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: REPO_ROOT, env: { PATH: process.env['PATH'] ?? '', ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A port that was just free: nothing listens there. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('tis as a process', () => {
  it('is `npm run tis` in a checkout and the package\'s "bin" once built; exits 0, 1 and 2 with stdout and stderr', async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string>; scripts: Record<string, string> };
    // The packed command is the compiled one (tsconfig.build.json compiles bin/); a checkout runs the source.
    expect(pkg.bin).toEqual({ tis: 'dist/bin/tis.js' });
    expect(pkg.scripts['tis']).toBe('node --import tsx bin/tis.ts');
    const port = await closedPort();
    const [help, unreachable, none] = await Promise.all([
      spawnRun('npm', ['run', '-s', 'tis', '--', '--help']),
      spawnRun(process.execPath, ['--import', 'tsx', 'bin/tis.ts', 'activate', 'app_x', '--url', `http://127.0.0.1:${port}`, '--token', 'tisb_x']),
      spawnRun(process.execPath, ['--import', 'tsx', 'bin/tis.ts']),
    ]);

    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('Usage: tis <command>');
    for (const command of ['register', 'activate', 'suspend', 'rotate-key', 'sandbox-launch-url', 'TIS_URL', 'TIS_TOKEN']) expect(help.stdout).toContain(command);
    expect(help.stderr).toBe('');

    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toBe(`error: cannot reach http://127.0.0.1:${port}: ECONNREFUSED\n`);
    expect(unreachable.stdout).toBe('');

    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Usage: tis <command>');
    expect(none.stdout).toBe('');
  });
});
