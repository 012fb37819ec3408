// The kit as a tool team gets it: `npm pack` in client/ (its prepack builds it), the tarball installed into
// an empty project from the local npm cache only, the README's quick start compiled there with
// `tsc --noEmit` under strict options, and run against the real service (rows, a file, a score). The install
// size the README states is the one measured here.

import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTool, launch, placeLocation, startServer, type TestServer } from '../server/harness.js';
import { repoRoot } from './support.js';

const run = promisify(execFile);
const kitDir = join(repoRoot, 'client');
const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
const tsx = pathToFileURL(join(repoRoot, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs')).href;

let workdir: string;
let project: string;
let server: TestServer;

async function npm(args: string[], cwd: string): Promise<string> {
  const env = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  const { stdout } = await run('npm', args, { cwd, maxBuffer: 64 * 1024 * 1024, env });
  return stdout;
}

/** The first fenced `ts` block after the README's "## Quick start" heading. */
function quickStart(readme: string): string {
  const section = readme.slice(readme.indexOf('## Quick start'));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('the README has no TypeScript quick start');
  return block[1] as string;
}

/** The numbers between the README's install-size markers: `N packages, X MB`. */
function statedInstallSize(readme: string): { packages: number; megabytes: number } {
  const stated = /<!-- install-size -->(\d+) packages, ([\d.]+) MB<!-- \/install-size -->/.exec(readme);
  if (!stated) throw new Error('the README states no install size');
  return { packages: Number(stated[1]), megabytes: Number(stated[2]) };
}

interface LockEntry {
  version: string;
  integrity?: string;
  resolved?: string;
  dependencies?: Record<string, string>;
  [field: string]: unknown;
}

/**
 * An empty tool project that depends on the packed kit and on @types/node, with a lockfile pinning each
 * package to the version and integrity this repository's lockfile holds: `npm ci --offline` then takes every
 * tarball from the local npm cache by its integrity and never asks the registry anything.
 */
async function writeProject(dir: string, kitSpec: string): Promise<void> {
  const root = JSON.parse(await readFile(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const kit = JSON.parse(await readFile(join(kitDir, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> };
  const devDependencies = { '@types/node': root.packages['node_modules/@types/node']!.version };
  const packages: Record<string, LockEntry> = {
    '': { name: 'a-tool', version: '0.0.0', dependencies: { 'tool-integration-kit': kitSpec }, devDependencies } as unknown as LockEntry,
    'node_modules/tool-integration-kit': { version: kit.version, resolved: kitSpec, dependencies: kit.dependencies },
  };
  const add = (names: string[], dev: boolean): void => {
    for (const name of names) {
      const key = `node_modules/${name}`;
      if (packages[key]) continue;
      const entry = root.packages[key];
      if (!entry) throw new Error(`${name} is not in package-lock.json`);
      const { dev: _dev, peer: _peer, devOptional: _devOptional, ...kept } = entry;
      packages[key] = dev ? { ...kept, dev: true } : kept;
      add(Object.keys(entry.dependencies ?? {}), dev);
    }
  };
  add(Object.keys(kit.dependencies), false);
  add(Object.keys(devDependencies), true);
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'a-tool', version: '0.0.0', private: true, type: 'module', dependencies: { 'tool-integration-kit': kitSpec }, devDependencies }));
  await writeFile(join(dir, 'package-lock.json'), JSON.stringify({ name: 'a-tool', version: '0.0.0', lockfileVersion: 3, requires: true, packages }, null, 2));
}

beforeAll(async () => {
  workdir = await mkdtemp(join(tmpdir(), 'tis-kit-package-'));
  project = join(workdir, 'project');
  server = await startServer();
});

afterAll(async () => {
  await server?.stop();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

describe('the packed kit', () => {
  it('packs with its build, installs offline into an empty project, and its quick start compiles and runs against the service', { timeout: 240_000 }, async () => {
    const packed = JSON.parse(await npm(['pack', '--json', '--pack-destination', workdir], kitDir)) as { filename: string; files: { path: string }[] }[];
    const paths = packed[0]!.files.map((file) => file.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'dist/client/index.js',
        'dist/client/index.d.ts',
        'dist/client/tool/index.js',
        'dist/client/tool/index.d.ts',
        'dist/client/tool/express.js',
        'dist/client/types.d.ts',
        'dist/rules/locations.js',
        'dist/rules/json-patch.d.ts',
        'dist/generated/index.js',
        'dist/generated/2026-09-21/types.d.ts',
      ]),
    );
    // The kit and what it imports, nothing of the service.
    expect(paths.filter((path) => !path.startsWith('dist/client/') && !path.startsWith('dist/rules/') && !path.startsWith('dist/generated/'))).toEqual(['README.md', 'package.json']);

    await mkdir(project, { recursive: true });
    await writeProject(project, `file:../${packed[0]!.filename}`);
    // The kit alone (what a tool's production install holds), then the program's dev dependency too.
    await npm(['ci', '--offline', '--ignore-scripts', '--omit=dev'], project);

    const installed = join(project, 'node_modules', 'tool-integration-kit');
    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; exports: Record<string, unknown> };
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['jose', 'openapi-fetch']);
    expect(Object.keys(manifest.exports)).toEqual(['.', './tool', './express', './types', './types/*', './package.json']);

    // What a tool team pays: every package under node_modules, and its size on disk.
    const parseable = await npm(['ls', '--all', '--parseable', '--omit=dev'], project);
    const packages = parseable.split('\n').filter((line) => line.includes('node_modules')).length;
    const { stdout: du } = await run('du', ['-sk', join(project, 'node_modules')]);
    const megabytes = Number(du.split('\t')[0]) / 1024;
    const readme = await readFile(join(installed, 'README.md'), 'utf8');
    const stated = statedInstallSize(readme);
    expect({ packages, megabytes: Number(megabytes.toFixed(1)) }, 'update the install size in client/README.md').toMatchObject({ packages: stated.packages });
    expect(Math.abs(megabytes - stated.megabytes) / stated.megabytes, `measured ${megabytes.toFixed(2)} MB; update client/README.md`).toBeLessThan(0.2);
    // The repository's README repeats the figure in its Layout table.
    expect(statedInstallSize(await readFile(join(repoRoot, 'README.md'), 'utf8')), 'README.md states the kit\'s install size as client/README.md does').toEqual(stated);

    // With @types/node, the program's own dev dependency, for process.argv and Blob in the quick start.
    await npm(['ci', '--offline', '--ignore-scripts'], project);
    await writeFile(join(project, 'main.ts'), quickStart(readme));
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          skipLibCheck: false,
          types: ['node'],
        },
        files: ['main.ts'],
      }),
    );
    await run(process.execPath, [tsc, '--noEmit', '-p', 'tsconfig.json'], { cwd: project }).catch((error: { stdout?: string }) => {
      throw new Error(`the quick start does not compile against the package:\n${error.stdout ?? String(error)}`);
    });

    const tool = await createTool(server);
    const placed = await placeLocation(server, { app: tool.app.id, type: 'assessment' });
    const student = await launch(server, { placed });
    const origin = server.services.config.publicUrl;
    const { stdout } = await run(process.execPath, ['--import', tsx, 'main.ts', origin, tool.app.id, student.token], { cwd: project });
    const output = JSON.parse(stdout) as { member: string; row: unknown; uploaded: unknown; score: string };
    expect(output).toEqual({
      member: student.claims.user.member,
      row: { answers: { q1: 'b' } },
      uploaded: { key: 'essay.txt', size: 8 },
      score: expect.any(String) as string,
    });
    expect(output.score).not.toBe('skipped');

    // What the program did is in the service: the row, the file and the attempt.
    const auth = { Authorization: student.auth };
    const row = await fetch(student.claims.storage.member_location, { headers: auth });
    expect(await row.json()).toEqual({ answers: { q1: 'b' } });
    const listed = (await (await fetch(student.claims.files.member_location, { headers: auth })).json()) as { key: string }[];
    expect(listed.map((file) => file.key)).toEqual(['essay.txt']);
  });
});
