/**
 * `npm start` as production runs it (issue 17 §3): the built JavaScript in a directory laid out like an install
 * (package.json, dist/, node_modules), no tsx; every package the built code imports is a runtime dependency,
 * so `npm ci --omit=dev` is enough; and SIGTERM sent to the npm process itself (what a process supervisor or
 * `docker stop` does) stops the service gracefully: the node process is gone and its shutdown was logged. A
 * bad setting or environment (decision OPS-30) stops the start with one line on stderr naming the variable,
 * exit code 2, and nothing written: one refusal of the configuration and two of the environment's checks
 * here, each message of each check in-process (tests/server/core/preflight.test.ts, config.test.ts).
 *
 * The build is `scripts/build.mjs --no-types` (decision CI-49): the JavaScript `npm start` builds (OPS-45),
 * bundled by the same step as `npm run build`'s. What tsc's build adds is type-checked by `npm run check` and
 * its declarations are the kit's, which tests/client/package.test.ts builds with tsc and compiles a tool
 * against; the one thing tsc refuses that esbuild would carry into dist/ (a `.ts` import) is checked here.
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** The checkout (not from tests/e2e/support.ts, whose import loads playwright-core). */
const REPO_ROOT = join(import.meta.dirname, '../..');

let install: string;

beforeAll(() => {
  install = mkdtempSync(join(tmpdir(), 'tis-install-'));
  execFileSync(process.execPath, ['scripts/build.mjs', '--no-types', '--out-dir', join(install, 'dist')], { cwd: REPO_ROOT, stdio: 'pipe' });
  copyFileSync(join(REPO_ROOT, 'package.json'), join(install, 'package.json'));
  // What package.json's `files` ships beside dist/: the start script's build check (OPS-40).
  mkdirSync(join(install, 'scripts'));
  copyFileSync(join(REPO_ROOT, 'scripts', 'ensure-built.mjs'), join(install, 'scripts', 'ensure-built.mjs'));
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(install, 'node_modules'));
}, 300_000);
afterAll(() => {
  if (install) rmSync(install, { recursive: true, force: true });
});

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return jsFiles(path);
    return entry.name.endsWith('.js') ? [path] : [];
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The PIDs whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('npm start', () => {
  it('runs only runtime dependencies: every package the built code imports is in "dependencies"', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; scripts: Record<string, string>; files: string[] };
    // The build check (a no-op on an install without sources, OPS-40), then node's own options only (the
    // heap's young generation, PERF-122) and the built entry.
    // (and glibc's malloc setting, PERF-222)
    expect(pkg.scripts['start']).toMatch(/^node scripts\/ensure-built\.mjs && (?:[A-Z_]+=\d+ )*exec node(?: --[a-z-]+=\S+)* dist\/server\/main\.js$/);
    expect(pkg.files).toContain('scripts/ensure-built.mjs');
    const builtins = new Set(builtinModules);
    const imported = new Set<string>();
    for (const file of jsFiles(join(install, 'dist'))) {
      const source = readFileSync(file, 'utf8');
      const statements = [
        ...source.matchAll(/^\s*(?:import|export)\b[^;]*?\sfrom\s+['"]([^'"]+)['"]/gm),
        ...source.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm),
        ...source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
      ];
      for (const match of statements) {
        const specifier = match[1] ?? '';
        if (specifier.startsWith('.')) continue;
        if (specifier.startsWith('node:') || builtins.has(specifier)) continue;
        imported.add(specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : (specifier.split('/')[0] ?? ''));
      }
    }
    expect(imported.size).toBeGreaterThan(3);
    for (const name of imported) expect(Object.keys(pkg.dependencies), `${name} is imported by dist/ but is not a runtime dependency`).toContain(name);
    expect(imported).toContain('pino');
    // tsc's build (allowImportingTsExtensions off) refuses a `.ts` import; esbuild's keeps it, and the
    // built file would then import a file dist/ does not have.
    // (JSDoc's `{import('./x.ts')...}` types are comments, not imports.)
    const importsTs = /^\s*(?:import|export)\b[^;]*?\sfrom\s*['"]\.{1,2}\/[^'"]*\.ts['"]|^\s*import\s*['"]\.{1,2}\/[^'"]*\.ts['"]|[^{\w]import\(\s*['"]\.{1,2}\/[^'"]*\.ts['"]\s*\)/m;
    const dotTs = jsFiles(join(install, 'dist')).filter((file) => importsTs.test(readFileSync(file, 'utf8')));
    expect(dotTs.map((file) => file.slice(install.length + 1)), 'a source of the build imports a .ts file').toEqual([]);
  });

  it('serves from dist/, and SIGTERM to the npm process stops node gracefully', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tis-start-'));
    const npm = spawn('npm', ['start'], {
      cwd: install,
      env: { PATH: process.env['PATH'] ?? '', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no listening line in:\n${output}`)), 90_000);
        const poll = setInterval(() => {
          const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
          if (match?.[1]) {
            clearTimeout(timer);
            clearInterval(poll);
            resolve(match[1]);
          }
        }, 100);
      });
      // The node process npm started runs the built JavaScript, with no tsx loader.
      const nodes = childrenOf(npm.pid ?? -1);
      expect(nodes).toHaveLength(1);
      const node = nodes[0] ?? -1;
      const cmdline = readFileSync(`/proc/${node}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const start = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['start'] ?? '';
      expect(cmdline.slice(1)).toEqual(start.split(' exec ')[1]?.split(' ').slice(1));
      // The start script's environment reaches node (PERF-222).
      const environ = readFileSync(`/proc/${node}/environ`, 'utf8').split('\0');
      expect(environ).toContain('MALLOC_MMAP_THRESHOLD_=131072');
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/dashboard/`)).status).toBe(200);

      npm.kill('SIGTERM');
      expect(await exited).toBe(0);
      for (let i = 0; i < 50 && alive(node); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(alive(node), 'the node process outlived npm').toBe(false);
      const lines = output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; signal?: string; code_cache?: string });
      // The build's code cache was made under the start script's node options, so this start used it (PERF-220).
      expect(lines.find((l) => l.msg === 'listening')?.code_cache).toBe('used');
      expect(lines.some((l) => l.msg === 'signal received; shutting down' && l.signal === 'SIGTERM')).toBe(true);
      expect(lines.at(-1)?.msg).toBe('stopped');
    } finally {
      if (npm.exitCode === null) npm.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
  it('stops gracefully on a SIGTERM sent the moment the listening line is read', async () => {
    const start = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['start'] ?? '';
    const args = start.split(' exec ')[1]?.split(' ').slice(1) ?? [];
    // The signal's default ends a process at once; the handlers must be in place before the line is written.
    // Before they were, about one start in two of the build was ended so (four in a row here).
    const starts = [1, 2, 3, 4].map(async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'tis-early-signal-'));
      try {
        const node = spawn(process.execPath, args, { cwd: install, env: { PATH: process.env['PATH'] ?? '', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }, stdio: ['ignore', 'pipe', 'ignore'] });
        const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => node.once('exit', (code, signal) => resolve([code, signal])));
        let stdout = '';
        const onData = (chunk: Buffer): void => {
          stdout += chunk.toString();
          if (!/listening on http/.test(stdout)) return;
          node.stdout.off('data', onData);
          node.stdout.resume();
          node.kill('SIGTERM');
        };
        node.stdout.on('data', onData);
        return await exited;
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
    expect(await Promise.all(starts)).toEqual([1, 2, 3, 4].map(() => [0, null]));
  }, 60_000);
});

describe('a refused start', () => {
  /** Runs the built service with only `env` (and PATH): its exit code and what it wrote to stderr. */
  function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
    return new Promise((resolve) => {
      const node = spawn(process.execPath, ['dist/server/main.js'], { cwd: install, env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let stdout = '';
      node.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      node.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const timer = setTimeout(() => node.kill('SIGKILL'), 30_000);
      node.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr, stdout });
      });
    });
  }

  it('prints one line naming the variable, exits 2 and writes nothing, for a bad setting and a bad environment', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tis-refused-'));
    try {
      const empty = (name: string): string => {
        const dir = join(root, name);
        mkdirSync(dir);
        return dir;
      };
      const file = join(root, 'a-file');
      writeFileSync(file, 'x');
      const cases: { env: Record<string, string>; line: RegExp; dataDir?: string }[] = [
        { env: { DATA_DIR: file }, line: /^cannot start: DATA_DIR \S+ is a file, not a folder$/ },
        { env: { DATA_DIR: empty('port-abc'), PORT: 'abc' }, line: /^invalid configuration: PORT must be a whole number/ },
        {
          env: { DATA_DIR: empty('database'), DATABASE_URL: 'postgres://tis:s3cret@127.0.0.1:1/tis' },
          line: /^cannot start: DATABASE_URL: cannot connect to PostgreSQL at 127\.0\.0\.1:1: .*ECONNREFUSED/,
        },
      ];
      const results = await Promise.all(cases.map((c) => start({ PORT: '0', ...c.env })));
      results.forEach((result, i) => {
        const c = cases[i]!;
        const label = JSON.stringify(c.env);
        expect(result.code, `${label}: ${result.stderr}`).toBe(2);
        expect(result.stderr.split('\n').filter(Boolean), label).toEqual([expect.stringMatching(c.line)]);
        expect(result.stdout, label).toBe('');
        expect(result.stderr, label).not.toContain('s3cret');
      });
      // Nothing written: no store, no key, no platform-token file, not even a probe left behind.
      for (const name of ['port-abc', 'database']) expect(readdirSync(join(root, name)), name).toEqual([]);
      expect(readdirSync(root).sort()).toEqual(['a-file', 'database', 'port-abc']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);
});
