/**
 * SIGTERM to the npm process of every script that starts a server (decision OPS-31), as a process supervisor,
 * `docker stop` or `kill` sends it: every process npm started (node, Prism under the mock launcher, tsx's
 * esbuild) is gone within seconds, the port is free, and npm exits 0 because its server stopped gracefully.
 * The scripts start together, each in its own process group, to keep the file to one round of start-ups.
 * While they run, what a newcomer reads from two of them is checked too (moved from first-hour.test.ts,
 * decision CI-48): `npm run dev` says it is development mode (OPS-43), `npm run lms` says what to do next and
 * answers `/` with a page. `start:dev` is `dev`'s command without its switch, and `mock:proxy` and
 * `mock:tool` run `mock`'s launcher in another mode (whose stop on a signal is tests/mocks/prism.test.ts's):
 * their script lines are checked, not started. `npm start` itself is tests/ops/start.test.ts's.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../mocks/launcher.ts';

/** The live (not zombie) processes of a process group (Linux /proc). */
function groupMembers(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // After `pid (comm) `: state, ppid, pgrp, ...
        const fields = readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
        return Number(fields[2]) === pgid && fields[0] !== 'Z';
      } catch {
        return false;
      }
    })
    .map(Number);
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The checkout (not from tests/e2e/support.ts, whose import loads playwright-core). */
const REPO_ROOT = join(import.meta.dirname, '../..');

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Outcome {
  script: string;
  /** Processes in npm's group while the server listened. */
  before: number;
  exitCode: number | null;
  /** Processes still alive in the group, and whether the port still accepted, once the stop was given its time. */
  left: number[];
  portOpen: boolean;
  output: string;
}

/**
 * Runs `npm run <script>` in a group of its own, waits for the port, runs `whileUp` with what the script
 * printed so far, SIGTERMs npm, and reports what is left.
 */
async function startAndStop(
  script: string,
  port: number,
  env: Record<string, string>,
  whileUp: (output: () => string) => Promise<void> = async () => {},
): Promise<Outcome> {
  const npm = spawn('npm', ['run', script], {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const pgid = npm.pid ?? -1;
  let output = '';
  npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 150_000;
    while (!(await accepts(port))) {
      if (Date.now() > deadline || npm.exitCode !== null) throw new Error(`${script} never listened on ${port}:\n${output}`);
      await sleep(200);
    }
    await whileUp(() => output);
    const before = groupMembers(pgid).length;
    npm.kill('SIGTERM');
    const exitCode = await Promise.race([exited, sleep(15_000).then(() => -1)]);
    for (let i = 0; i < 50 && groupMembers(pgid).length > 0; i += 1) await sleep(100);
    return { script, before, exitCode, left: groupMembers(pgid), portOpen: await accepts(port), output };
  } finally {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // The group is gone, as it should be.
    }
  }
}

/** Waits until `pattern` is in what the script printed (a server prints its next steps after it listens). */
async function printed(output: () => string, pattern: RegExp): Promise<RegExpExecArray> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const match = pattern.exec(output());
    if (match) return match;
    if (Date.now() > deadline) throw new Error(`no ${pattern} in:\n${output()}`);
    await sleep(100);
  }
}

describe('SIGTERM to npm run <server script>', () => {
  it('runs each script with exec, so that SIGTERM to npm reaches the server', () => {
    const scripts = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['dev']).toBe(`ALLOW_LOOPBACK_TOOLS=1 ${scripts['start:dev']}`);
    expect(scripts['start:dev']).toBe('exec node --import tsx server/main.ts');
    expect(scripts['mock']).toBe('exec node --import tsx mocks/run.ts mock');
    expect(scripts['mock:proxy']).toBe('exec node --import tsx mocks/run.ts proxy');
    expect(scripts['mock:tool']).toBe('exec node --import tsx mocks/run.ts tool');
  });

  it('stops every process the script started and frees its port, for each script that starts a server', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tis-signals-'));
    try {
      const ports = await Promise.all([0, 1, 2, 3].map(() => freePort()));
      const [dev, lms, mock, quiz] = ports as [number, number, number, number];
      const outcomes = await Promise.all([
        startAndStop('dev', dev, { PORT: String(dev), DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, async (output) => {
          await printed(output, /Health: /);
          expect(output()).toContain('ALLOW_LOOPBACK_TOOLS is ON');
          expect(output()).toContain('Development mode: tool URLs on 127.0.0.1 / localhost are accepted (ALLOW_LOOPBACK_TOOLS=1).');
        }),
        startAndStop('lms', lms, { LMS_PORT: String(lms), LMS_DB_FILE: ':memory:' }, async (output) => {
          const lmsUrl = (await printed(output, /reference LMS \(reference\) at (http:\/\/127\.0\.0\.1:\d+)/))[1] ?? '';
          await printed(output, /Open .* in a browser/);
          expect(output()).toContain(`Register a tool:  POST ${lmsUrl}/controls/registrations/initiate`);
          const home = await fetch(`${lmsUrl}/`);
          expect(home.status).toBe(200);
          expect(home.headers.get('content-type')).toContain('text/html');
          expect(await home.text()).toContain('<h1>Reference LMS</h1>');
        }),
        startAndStop('mock', mock, { TIS_MOCK_START_TIMEOUT_MS: '150000', TIS_MOCK_PORT: String(mock) }),
        startAndStop('example:quiz', quiz, { QUIZ_PORT: String(quiz), TIS_APP_ID: 'app_signals', ALLOW_LOOPBACK_SERVICE: '1' }),
      ]);
      for (const o of outcomes) {
        // npm, node, and for the mock Prism: more than npm alone was running.
        expect(o.before, `${o.script}: processes in the group while listening`).toBeGreaterThanOrEqual(2);
        expect(o.left, `${o.script}: processes left after SIGTERM to npm\n${o.output}`).toEqual([]);
        expect(o.portOpen, `${o.script}: the port still accepts after SIGTERM to npm`).toBe(false);
        expect(o.exitCode, `${o.script}: npm's exit code\n${o.output}`).toBe(0);
      }
      // The mock launcher's child: Prism ran in the group and is gone with it.
      expect(outcomes.find((o) => o.script === 'mock')?.before).toBeGreaterThanOrEqual(3);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
