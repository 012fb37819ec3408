/**
 * `npm start`'s build check (scripts/ensure-built.mjs, decisions OPS-40 and PERF-220): when a checkout's dist/
 * is stale. The whole path (a fresh clone built by `npm start`) is tests/ops/first-hour.test.ts; here, the
 * reasons alone, on a folder laid out like a checkout.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reasonToBuild } from '../../scripts/ensure-built.mjs';

let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'tis-ensure-built-'));
  mkdirSync(join(root, 'server'));
  writeFileSync(join(root, 'server', 'app.ts'), '');
  const past = new Date(Date.now() - 60_000);
  utimesSync(join(root, 'server', 'app.ts'), past, past);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function build(stamp: string): void {
  mkdirSync(join(root, 'dist', 'server'), { recursive: true });
  writeFileSync(join(root, 'dist', 'server', 'main.js'), '');
  writeFileSync(join(root, 'dist', '.build-complete'), stamp);
}

describe('reasonToBuild', () => {
  it('builds when there is no build, and not when the build is newer than its sources and made by this node', () => {
    expect(reasonToBuild(root, 'v20.20.2')).toBe('dist/ has not been built yet');
    build('2026-11-28T08:00:00.000Z\nnode v20.20.2\n');
    expect(reasonToBuild(root, 'v20.20.2')).toBeNull();
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(root, 'server', 'app.ts'), later, later);
    expect(reasonToBuild(root, 'v20.20.2')).toBe(`${join('server', 'app.ts')} changed since the last build`);
  });

  it('builds again under another node, whose V8 refuses the build code cache', () => {
    build('2026-11-28T08:00:00.000Z\nnode v20.19.0\n');
    expect(reasonToBuild(root, 'v20.20.2')).toBe('dist/ was built by node v20.19.0, and this is node v20.20.2');
    // A build from before the stamp named its node.
    build('2026-11-28T08:00:00.000Z\n');
    expect(reasonToBuild(root, 'v20.20.2')).toBe('dist/ was built by an unknown node, and this is node v20.20.2');
  });
});
