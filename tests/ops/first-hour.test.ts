/**
 * README's first screen as a newcomer runs it (issue 29): `git clone` of this repository into a temporary
 * directory; README's Quick start, read from the clone, is `npm ci` then `npm start`. `npm ci` on a fresh
 * clone is CI's own first step (`.ci/run`, on a clean clone of the same lockfile), so the clone here takes
 * the node_modules that step installed (a link, decision CI-48) instead of installing it a second time in one
 * run; then `npm start` (only `PORT=0` added), which builds dist/ on first need (decision OPS-40). What
 * `npm start` printed is then followed: `/` leads to the dashboard, whose sign-in page says where the token
 * is, the token is in the file it named and signs in, `/healthz` answers (OPS-41). A second `npm start` does
 * not build again. `npm run dev`'s banner (OPS-43) and `npm run lms`'s next steps are checked where those
 * scripts are started already, tests/ops/npm-signals.test.ts.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
/** The checkout (not from tests/e2e/support.ts, whose import loads playwright-core). */
const REPO_ROOT = join(import.meta.dirname, '../..');
const NPM_ENV = { npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false', npm_config_prefer_offline: 'true' };

let workdir: string;
let clone: string;
const started: ChildProcess[] = [];

/** The commands of the first `sh` block under README's "## Quick start", comments dropped. */
function quickStartCommands(readme: string): string[] {
  const section = readme.slice(readme.indexOf('\n## Quick start\n'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '');
}

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * Starts `npm <args>` in the clone with what a newcomer's shell has (PATH, HOME: npm's cache), plus `env`;
 * in a process group of its own, so that cleaning up reaches whatever npm started.
 */
function npm(args: string[], env: Record<string, string>): Started {
  const shell = { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...(process.env['TMPDIR'] ? { TMPDIR: process.env['TMPDIR'] } : {}) };
  const child = spawn('npm', args, { cwd: clone, env: { ...shell, ...NPM_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  started.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Waits for `pattern` in the output; fails with the output if the process exits or time runs out first. */
async function waitFor(process: Started, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(process.output());
    if (match) return match;
    if (process.child.exitCode !== null) throw new Error(`exited with ${process.child.exitCode} before ${pattern}:\n${process.output()}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${process.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** SIGTERM to npm itself, as a supervisor sends it; `group` sends it to everything npm started too. */
async function stop(process: Started, group = false): Promise<number | null> {
  if (group && process.child.pid !== undefined) globalThis.process.kill(-process.child.pid, 'SIGTERM');
  else process.child.kill('SIGTERM');
  return process.exited;
}

beforeAll(async () => {
  workdir = mkdtempSync(join(tmpdir(), 'tis-first-hour-'));
  clone = join(workdir, 'tool-integration-service');
  await run('git', ['clone', '--quiet', REPO_ROOT, clone]);
}, 120_000);

afterAll(() => {
  for (const child of started) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
  }
  if (workdir) rmSync(workdir, { recursive: true, force: true });
});

describe('a fresh clone, by the README', () => {
  it('two commands to a running service: npm ci, npm start; then the dashboard, the token and /healthz', { timeout: 300_000 }, async () => {
    const commands = quickStartCommands(readFileSync(join(clone, 'README.md'), 'utf8'));
    expect(commands).toEqual(['npm ci', 'npm start']);
    expect(existsSync(join(clone, 'dist'))).toBe(false);
    // The first command is what .ci/run runs on its clean clone before any test; this clone takes its result.
    expect(readFileSync(join(REPO_ROOT, '.ci', 'run'), 'utf8')).toMatch(/^npm ci\b/m);
    expect(existsSync(join(clone, 'node_modules'))).toBe(false);
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(clone, 'node_modules'));

    const service = npm(['start'], { PORT: '0' });
    const url = (await waitFor(service, /listening on (http:\/\/127\.0\.0\.1:\d+)/, 600_000))[1] ?? '';
    expect(service.output()).toContain('dist/ has not been built yet; building dist/ first');
    // What it printed: the dashboard, and the file holding the platform team's token.
    const tokenFile = join(clone, 'data', 'platform-token');
    await waitFor(service, /Health: /, 10_000);
    expect(service.output()).toContain(`Dashboard:  ${url}/dashboard/`);
    expect(service.output()).toContain(`token is in ${tokenFile}`);

    const root = await fetch(`${url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/dashboard/');
    const page = await fetch(`${url}/`);
    expect(page.url).toBe(`${url}/dashboard/`);
    const html = await page.text();
    expect(html).toContain('id="sign-in-first-time"');
    expect(html).toContain('./data/platform-token');
    const me = await fetch(`${url}/dashboard/v1/me`, { headers: { Authorization: `Bearer ${readFileSync(tokenFile, 'utf8').trim()}` } });
    expect(await me.json()).toMatchObject({ kind: 'platform' });
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await stop(service)).toBe(0);

    // Built once: the next start runs what is there.
    const again = npm(['start'], { PORT: '0' });
    await waitFor(again, /listening on http:\/\/127\.0\.0\.1:\d+/, 120_000);
    expect(again.output()).not.toContain('building dist/');
    expect(await stop(again)).toBe(0);
  });
});
