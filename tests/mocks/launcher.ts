/**
 * Starts `mocks/run.ts` as a child process the way `npm run mock` does, for suites that need a Prism mock or
 * a validating proxy. Every launcher and the Prism it reports are tracked by PID, so `stopAllMocks()` (from an
 * `afterAll`) leaves nothing running even when a test failed half-way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const launcherScript = path.join(repoRoot, 'mocks', 'run.ts');

export type MockMode = 'mock' | 'proxy' | 'tool';

export interface RunningMock {
  /** The origin Prism answers on, e.g. `http://127.0.0.1:41234`. */
  url: string;
  launcherPid: number;
  prismPid: number;
  /** Everything the launcher and Prism printed so far. */
  output(): string;
  /** Signals the launcher and resolves with its exit code once it and Prism are gone. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const running = new Set<{ child: ChildProcess; prismPid?: number }>();

/** A port nothing listens on right now (the kernel's pick, released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function kill(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** Runs the launcher to completion (for the cases where it refuses to start), with its output. */
export function runLauncher(
  mode: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', launcherScript, mode, ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const entry = { child };
    running.add(entry);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      running.delete(entry);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Starts a launcher on a free port (unless `args` names one) and resolves once it reports Prism listening.
 * `env` is added to this process's environment.
 */
export async function startMock(
  mode: MockMode,
  args: readonly string[] = [],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<RunningMock> {
  const portArgs = args.includes('--port') ? [] : ['--port', String(await freePort())];
  const child = spawn(process.execPath, ['--import', 'tsx', launcherScript, mode, ...args, ...portArgs], {
    cwd: repoRoot,
    env: { TIS_MOCK_START_TIMEOUT_MS: '150000', ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const entry: { child: ChildProcess; prismPid?: number } = { child };
  running.add(entry);
  let output = '';
  const ready = new Promise<{ url: string; prismPid: number }>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`mock ${mode} ${args.join(' ')} did not start within ${options.timeoutMs ?? 170_000} ms:\n${output}`)),
      options.timeoutMs ?? 170_000,
    );
    const onData = (d: Buffer): void => {
      output += d.toString();
      const match = /Prism \S+ \(pid (\d+)\) .*? at (http:\/\/[^\s,]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ prismPid: Number(match[1]), url: match[2] as string });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`mock ${mode} ${args.join(' ')} exited with ${code} before listening:\n${output}`));
    });
  });
  let started: { url: string; prismPid: number };
  try {
    started = await ready;
  } catch (err) {
    // SIGTERM first: the launcher stops a Prism that started but never reported (its PID is unknown here).
    const exited = exitOf(child);
    kill(child.pid, 'SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    kill(child.pid, 'SIGKILL');
    running.delete(entry);
    throw err;
  }
  entry.prismPid = started.prismPid;
  return {
    url: started.url,
    launcherPid: child.pid as number,
    prismPid: started.prismPid,
    output: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      const exited = exitOf(child);
      kill(child.pid, signal);
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 8_000))]);
      if (code === 'timeout') {
        kill(child.pid, 'SIGKILL');
        kill(started.prismPid, 'SIGKILL');
        running.delete(entry);
        throw new Error(`launcher ${child.pid} did not stop on ${signal}`);
      }
      running.delete(entry);
      return code;
    },
  };
}

/** Stops every launcher this process started, then makes sure no Prism they started outlives them. */
export async function stopAllMocks(): Promise<void> {
  const entries = [...running];
  running.clear();
  await Promise.all(
    entries.map(async ({ child, prismPid }) => {
      const exited = exitOf(child);
      kill(child.pid, 'SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      kill(child.pid, 'SIGKILL');
      if (prismPid !== undefined && !(await waitGone(prismPid, 2_000))) kill(prismPid, 'SIGKILL');
    }),
  );
}
