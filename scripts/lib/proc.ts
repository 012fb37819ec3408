/** Child processes for the scripts: run a Node CLI from node_modules and collect its output. */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { repoRoot } from './apis.ts';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `node <bin> ...args` in `cwd` and resolves when it exits (it never rejects on a non-zero code). */
export function runNode(bin: string, args: readonly string[], cwd: string = repoRoot): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd,
      // No colours, so that output can be parsed and read in CI logs.
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
  });
}

const require = createRequire(import.meta.url);

/** The Redocly CLI entry point (the pinned @redocly/cli). */
export const redoclyBin = path.join(path.dirname(require.resolve('@redocly/cli/package.json')), 'bin', 'cli.js');
/** The TypeScript compiler entry point. */
export const tscBin = path.join(path.dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');

/** Drops the Node end-of-life banner Redocly CLI prints on Node 20, which says nothing about the specs. */
export function withoutBanner(text: string): string {
  return text
    .split('\n')
    .filter((line) => !/[║╔╚]/.test(line))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
