// The kit as a tool team gets it, by its README's quick start word for word (issue 29): the README's pack
// command in this checkout (client's prepack builds it with tsc: the suite's one tsc build, whose
// declarations the tool's own tsc then compiles against, decision CI-49), then, in an empty directory, the
// README's project commands (`npm init -y`, ES modules, TypeScript, the tarball) with npm offline, the
// README's tsconfig.json and main.ts, `npx tsc`, and `node dist/main.js` against the real service (rows, a
// file, a score). The install size the README states is measured here too: the packages a production
// install of the tarball holds, as `npm ls --omit=dev` lists them in that project (decision CI-49).

import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTool, launch, placeLocation, startServer, type TestServer } from '../server/harness.js';
import { repoRoot } from './support.js';

const run = promisify(execFile);
const kitDir = join(repoRoot, 'client');

let workdir: string;
let server: TestServer;

async function npm(args: string[], cwd: string): Promise<string> {
  const env = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  const { stdout } = await run('npm', args, { cwd, maxBuffer: 64 * 1024 * 1024, env });
  return stdout;
}

/** The fenced block of the quick start that follows `<!-- quick-start: <name> -->` in the README. */
function quickStart(readme: string, name: string): string {
  const block = new RegExp(`<!-- quick-start: ${name.replace(/[.]/g, '\\.')} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(readme);
  if (!block) throw new Error(`client/README.md has no quick-start block "${name}"`);
  return block[1] as string;
}

/** Runs a README block in bash, as a person pastes it into a terminal, failing on the first failed line. */
async function shell(script: string, cwd: string, env: Record<string, string>): Promise<string> {
  const npmEnv = { npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  try {
    const { stdout } = await run('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...npmEnv, ...env } });
    return stdout;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    throw new Error(`the quick start failed:\n${script}\n${failed.stdout ?? ''}${failed.stderr ?? String(error)}`);
  }
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
 * The lockfile entries of `names` and everything they depend on, with the version and integrity this
 * repository's lockfile holds: npm then takes every tarball from the local npm cache by its integrity and
 * needs no registry metadata, so it runs with `--offline`.
 */
async function lockedPackages(names: readonly string[], devNames: readonly string[]): Promise<Record<string, LockEntry>> {
  const root = JSON.parse(await readFile(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const packages: Record<string, LockEntry> = {};
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
  add([...names], false);
  add([...devNames], true);
  return packages;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');
}

beforeAll(async () => {
  workdir = await mkdtemp(join(tmpdir(), 'tis-kit-package-'));
  server = await startServer();
});

afterAll(async () => {
  await server?.stop();
  if (workdir) await rm(workdir, { recursive: true, force: true });
});

describe('the packed kit', () => {
  it("packs by its README, installs offline into an `npm init -y` project by its README, and its quick start compiles with tsc and runs against the service", { timeout: 300_000 }, async () => {
    const readme = await readFile(join(kitDir, 'README.md'), 'utf8');
    const kit = JSON.parse(await readFile(join(kitDir, 'package.json'), 'utf8')) as { version: string };
    // The README's pack command, in this checkout: the tarball it names lands in client/ (git ignores it).
    const tarball = join(kitDir, `tool-integration-kit-${kit.version}.tgz`);
    await rm(tarball, { force: true });
    await shell(quickStart(readme, 'pack'), repoRoot, {});
    const listing = await run('tar', ['-tzf', tarball]);
    const paths = listing.stdout.split('\n').filter((line) => line !== '').map((line) => line.replace(/^package\//, ''));
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
    expect(paths.filter((path) => !path.startsWith('dist/client/') && !path.startsWith('dist/rules/') && !path.startsWith('dist/generated/')).sort()).toEqual(['README.md', 'package.json']);

    // The figures and links the kit's README shares with the repository's README say the same thing there.
    const rootReadme = await readFile(join(repoRoot, 'README.md'), 'utf8');
    expect(statedInstallSize(rootReadme), "README.md states the kit's install size as client/README.md does").toEqual(statedInstallSize(readme));
    const serviceSize = (text: string): string | undefined => /<!-- service-install-size -->([^<]+)<!-- \/service-install-size -->/.exec(text)?.[1];
    expect(serviceSize(readme)).toBeDefined();
    expect(serviceSize(readme), "client/README.md states the service's install as README.md does").toBe(serviceSize(rootReadme));
    const anchors = new Set([...rootReadme.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1] ?? '')));
    const links = [...readme.matchAll(/\]\(\.\.\/README\.md#([^)]+)\)/g)].map((match) => match[1]);
    expect(links.length).toBeGreaterThan(0);
    for (const anchor of links) expect(anchors, `client/README.md links ../README.md#${anchor}`).toContain(anchor);

    // A fresh project by the README, npm offline: the registry's answers for what it names are stood in for
    // by a lockfile of this repository's versions (written before `npm init -y`, which leaves it alone).
    const tool = join(workdir, 'my-tool');
    await mkdir(tool);
    const locked = await lockedPackages(['jose', 'openapi-fetch'], ['typescript', '@types/node']);
    await writeFile(join(tool, 'package-lock.json'), JSON.stringify({ name: 'my-tool', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'my-tool', version: '1.0.0' }, ...locked } }, null, 2));
    await shell(quickStart(readme, 'project'), workdir, { TIS: repoRoot, npm_config_offline: 'true' });
    const toolManifest = JSON.parse(await readFile(join(tool, 'package.json'), 'utf8')) as { type: string; dependencies: Record<string, string> };
    expect(toolManifest.type).toBe('module');
    expect(Object.keys(toolManifest.dependencies)).toEqual(['tool-integration-kit']);

    // The kit alone (what a tool's production install holds): its packages and their size on disk.
    const installed = join(tool, 'node_modules', 'tool-integration-kit');
    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; exports: Record<string, unknown> };
    expect(Object.keys(manifest.dependencies).sort()).toEqual(['jose', 'openapi-fetch']);
    expect(Object.keys(manifest.exports)).toEqual(['.', './tool', './express', './types', './types/*', './package.json']);
    const parseable = await npm(['ls', '--all', '--parseable', '--omit=dev'], tool);
    const production = parseable.split('\n').filter((line) => line.includes('node_modules'));
    expect(production.map((path) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))).toContain('tool-integration-kit');
    const { stdout: du } = await run('du', ['-sk', '--total', ...production]);
    const megabytes = Number(/^(\d+)\ttotal$/m.exec(du)?.[1]) / 1024;
    const stated = statedInstallSize(readme);
    expect({ packages: production.length, megabytes: Number(megabytes.toFixed(1)) }, 'update the install size in client/README.md').toMatchObject({ packages: stated.packages });
    expect(Math.abs(megabytes - stated.megabytes) / stated.megabytes, `measured ${megabytes.toFixed(2)} MB; update client/README.md`).toBeLessThan(0.2);
    await writeFile(join(tool, 'tsconfig.json'), quickStart(readme, 'tsconfig.json'));
    await writeFile(join(tool, 'main.ts'), quickStart(readme, 'main.ts'));

    const placedTool = await createTool(server);
    const placed = await placeLocation(server, { app: placedTool.app.id, type: 'assessment' });
    const student = await launch(server, { placed });
    const stdout = await shell(quickStart(readme, 'run'), tool, {
      npm_config_offline: 'true',
      SERVICE_ORIGIN: server.services.config.publicUrl,
      APP_ID: placedTool.app.id,
      LAUNCH_DATA: student.token,
    });
    const output = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as { member: string; row: unknown; uploaded: unknown; score: string };
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
    await rm(tarball, { force: true });
  });
});
