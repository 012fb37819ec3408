/**
 * Runs the example quiz tool the way its README does (`node --import tsx examples/quiz/main.ts`), as a
 * child process on 127.0.0.1, and resolves once it prints `quiz tool listening on <url>`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const QUIZ_MAIN = path.join(repoRoot, 'examples', 'quiz', 'main.ts');
const READY = /^quiz tool listening on (http:\/\/\S+)$/m;

export interface QuizProcess {
  url: string;
  pid: number;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
  /** SIGTERM, then its exit code (SIGKILL after 8 s). */
  stop(): Promise<number | null>;
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

export async function startQuiz(env: Record<string, string>, timeoutMs = 30_000): Promise<QuizProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', QUIZ_MAIN], {
    cwd: repoRoot,
    // Only what the quiz documents, plus what node needs: no configuration leaks in from the test run.
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', QUIZ_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the quiz did not start within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const ready = READY.exec(output);
      if (ready) {
        clearTimeout(timer);
        resolve(ready[1] as string);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the quiz exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url,
    pid: child.pid as number,
    output: () => output,
    async stop() {
      const exited = exitOf(child);
      child.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 8_000))]);
      if (code !== 'timeout') return code;
      child.kill('SIGKILL');
      return exitOf(child);
    },
  };
}

/** Runs main.ts to completion (a start it refuses), with what it printed. */
export function runQuiz(env: Record<string, string>, args: readonly string[] = []): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', QUIZ_MAIN, ...args], {
      cwd: repoRoot,
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}
