/**
 * The Dockerfile, checked as far as a machine without Docker can (issue 17 §3): multi-stage, the runtime
 * dependencies from `npm ci --omit=dev`, the build from `npm run build`, a non-root user, a health check on
 * /healthz, and a command that is what `npm start` runs. start.test.ts runs that very layout (package.json,
 * dist/ from the same build script's JavaScript-only build, node_modules) and stops it with SIGTERM.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startNodeEnv } from '../../scripts/build/start-flags.mjs';

/** The checkout (not from tests/e2e/support.ts, whose import loads playwright-core). */
const REPO_ROOT = join(import.meta.dirname, '../..');
const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
/** Instructions, continuation lines joined, comments dropped. */
const instructions = dockerfile
  .replace(/\\\n\s*/g, ' ')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));
const stages: string[][] = [];
for (const line of instructions) {
  if (line.startsWith('FROM ')) stages.push([]);
  stages.at(-1)?.push(line);
}
const final = stages.at(-1) ?? [];

describe('Dockerfile', () => {
  it('builds in one stage and runs the build on runtime dependencies only, as a non-root user', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(instructions).toContain('RUN npm run build');
    expect(instructions.some((l) => /^RUN npm ci --omit=dev\b/.test(l))).toBe(true);
    expect(final).toContain('COPY --from=build /app/dist ./dist');
    expect(final.some((l) => /^COPY --from=\S+ \/app\/node_modules \.\/node_modules$/.test(l))).toBe(true);
    const user = final.filter((l) => l.startsWith('USER ')).at(-1);
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^USER (root|0)(:|$)/);
    expect(final.some((l) => l.startsWith('HEALTHCHECK ') && l.includes('/healthz'))).toBe(true);
  });

  it('gives every `npm ci` the lock and the manifest of every workspace it names, as check:prod-install does', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { workspaces: string[]; scripts: Record<string, string> };
    expect(pkg.workspaces.length).toBeGreaterThan(0);
    const installing = stages.filter((stage) => stage.some((l) => /^RUN npm ci\b/.test(l)));
    expect(installing.length).toBe(2);
    for (const stage of installing) {
      const before = stage.slice(0, stage.findIndex((l) => /^RUN npm ci\b/.test(l)));
      expect(before).toContain('COPY package.json package-lock.json ./');
      for (const workspace of pkg.workspaces) expect(before, stage[0]).toContain(`COPY ${workspace}/package.json ./${workspace}/`);
    }
    expect(pkg.scripts['check:prod-install']).toBe('node scripts/check-prod-install.mjs');
  });

  it('runs what `npm start` runs, and the build script it calls exists', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const cmd = final.find((l) => l.startsWith('CMD '));
    const argv = JSON.parse(cmd?.slice(4) ?? '[]') as string[];
    // `npm start` first makes sure dist/ is built (a no-op in the image, which has no sources: OPS-40),
    // then `exec`s this very command.
    // The environment the start script gives node (PERF-222) is the image's too.
    const env = Object.entries(startNodeEnv(REPO_ROOT))
      .map(([name, value]) => `${name}=${value} `)
      .join('');
    expect(`node scripts/ensure-built.mjs && ${env}exec ${argv.join(' ')}`).toBe(pkg.scripts['start']);
    const imageEnv = final.filter((l) => l.startsWith('ENV ')).flatMap((l) => l.slice(4).trim().split(/\s+/));
    for (const pair of env.trim().split(' ').filter(Boolean)) expect(imageEnv).toContain(pair);
    expect(env).toContain('MALLOC_MMAP_THRESHOLD_=');
    expect(pkg.scripts['build']).toBe('node scripts/build.mjs');
    const ignored = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8').split('\n');
    for (const path of ['node_modules', 'dist', 'data']) expect(ignored).toContain(path);
  });
});
