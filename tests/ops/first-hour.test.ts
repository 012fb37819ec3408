/**
 * README's first screen as a newcomer runs it (issue 29): `git clone` of this repository into a temporary
 * directory, then the Quick start's two commands there, read from the clone's README: `npm ci` (npm
 * preferring its local cache, so only what the cache lacks comes from the registry) and `npm start` (only
 * `PORT=0` added), which builds dist/ on first need (decision OPS-40). What `npm start` printed is then
 * followed: `/` leads to the dashboard, whose sign-in page says where the token is, the token is in the file
 * it named and signs in, `/healthz` answers (OPS-41). A second `npm start` does not build again. In the same
 * clone, `npm run dev` starts in development mode with its banner (OPS-43), and `npm run lms` prints its next
 * steps and answers `/` with a page.
 *
 * The suite's one slow test, on purpose (OPS-44): a few minutes, most of it `npm ci` and the first build.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../e2e/support.ts';

const run = promisify(execFile);
const NPM_ENV = { npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false', npm_config_prefer_offline: 'true' };
/**
 * better-sqlite3's binary as CI's own `npm ci` kept it (.ci/run, decision CI-26), when there is one: this
 * machine cannot download the prebuilt binary, and compiling it again in the clone is minutes of CI time
 * that prove nothing the first `npm ci` did not. Named in prebuild-install's rc file in the clone, as .ci/run
 * names it; without the folder the clone compiles it, as a newcomer's does.
 */
const PREBUILDS = join(process.env['TIS_CI_CACHE'] ?? join(process.env['XDG_CACHE_HOME'] ?? join(process.env['HOME'] ?? '', '.cache'), 'tis-ci'), 'prebuilds');

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
  if (existsSync(PREBUILDS)) writeFileSync(join(clone, '.prebuild-installrc'), `local-prebuilds=${PREBUILDS}\n`);
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
  it('two commands to a running service: npm ci, npm start; then the dashboard, the token and /healthz', { timeout: 900_000 }, async () => {
    const commands = quickStartCommands(readFileSync(join(clone, 'README.md'), 'utf8'));
    expect(commands).toEqual(['npm ci', 'npm start']);
    expect(existsSync(join(clone, 'dist'))).toBe(false);

    const install = npm(['ci'], {});
    expect(await install.exited, install.output()).toBe(0);

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

  it('npm run dev says it is development mode; npm run lms says what to do next and answers /', { timeout: 180_000 }, async () => {
    // Needs the clone's npm ci from the test above.
    expect(existsSync(join(clone, 'node_modules', 'tsx'))).toBe(true);
    const dev = npm(['run', 'dev'], { PORT: '0', DATA_DIR: join(workdir, 'dev-data') });
    await waitFor(dev, /Health: /, 120_000);
    expect(dev.output()).toContain('ALLOW_LOOPBACK_TOOLS is ON');
    expect(dev.output()).toContain('Development mode: tool URLs on 127.0.0.1 / localhost are accepted (ALLOW_LOOPBACK_TOOLS=1).');
    expect(await stop(dev)).toBe(0);

    const lms = npm(['run', 'lms'], { LMS_PORT: '0', LMS_DB_FILE: ':memory:' });
    const lmsUrl = (await waitFor(lms, /reference LMS \(reference\) at (http:\/\/127\.0\.0\.1:\d+)/, 120_000))[1] ?? '';
    await waitFor(lms, /Open .* in a browser/, 10_000);
    expect(lms.output()).toContain(`Register a tool:  POST ${lmsUrl}/controls/registrations/initiate`);
    const home = await fetch(`${lmsUrl}/`);
    expect(home.status).toBe(200);
    expect(home.headers.get('content-type')).toContain('text/html');
    expect(await home.text()).toContain('<h1>Reference LMS</h1>');
    await stop(lms, true);
  });
});
