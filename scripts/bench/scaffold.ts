/**
 * What every bench script needs around its measurement, written once (decision PERF-160): a free port on
 * loopback, waiting until a server answers, how a checkout's service starts, the child processes to stop
 * at the end, and the load options (`--duration`, `--warmup`, `--connections`, `--rounds`, `--compiled`,
 * `--checkout`, `--profile`) each script declares with its own defaults.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { startNodeEnv, startNodeFlags } from './cold-start.js';

/** A port nothing listens on now, on 127.0.0.1 (the kernel's pick; the caller binds it right after). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done, fail) => {
    probe.once('error', fail);
    probe.listen(0, '127.0.0.1', done);
  });
  const address = probe.address();
  await new Promise<void>((done) => probe.close(() => done()));
  return typeof address === 'object' && address ? address.port : 0;
}

export interface UntilAnswersOptions {
  /** The statuses that mean ready; by default anything but 503 (the service answers 503 until it is ready). */
  ready?: (status: number) => boolean;
  /** Gives up when this process has exited. */
  child?: ChildProcess;
  timeoutMs?: number;
}

/** Waits until `url` answers as ready; `what` names the server in the error when it never does. */
export async function untilAnswers(url: string, what: string, options: UntilAnswersOptions = {}): Promise<void> {
  const ready = options.ready ?? ((status: number) => status !== 503);
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    try {
      if (ready((await fetch(url)).status)) return;
    } catch {
      // not listening yet
    }
    if (options.child && options.child.exitCode !== null) throw new Error(`${what} exited with code ${options.child.exitCode} before it answered`);
    if (Date.now() > deadline) throw new Error(`${what} did not answer at ${url}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * How node starts `checkout`'s service: its build (`<checkout>/<compiled>/server/main.js`) with the node
 * options of that checkout's `npm start` (PERF-122, PERF-151), or its sources through tsx.
 */
export function serviceArgs(checkout: string, compiled: string | undefined): string[] {
  if (compiled === undefined) return ['--import', 'tsx', 'server/main.ts'];
  const file = resolve(checkout, compiled, 'server/main.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` in ${checkout}`);
  return [...startNodeFlags(checkout), file];
}

/** The environment `checkout`'s `npm start` gives node (PERF-222), for its build; nothing for its sources. */
export const serviceStartEnv = (checkout: string, compiled: string | undefined): Record<string, string> =>
  compiled === undefined ? {} : startNodeEnv(checkout);

/** The child processes a bench started, stopped together at the end (SIGTERM, then SIGKILL after 5 s). */
export class Children {
  readonly #all: ChildProcess[] = [];

  add(child: ChildProcess): ChildProcess {
    this.#all.push(child);
    return child;
  }

  async stopAll(): Promise<void> {
    await Promise.all(
      this.#all.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
        const exited = new Promise<void>((done) => child.once('exit', () => done()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.exitCode === null && child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}

interface LoadDefaults {
  duration: string;
  warmup: string;
  connections: string;
  rounds?: string;
}

/**
 * The load options, for a script's `parseArgs({ options: { ...loadOptions({...}), ...its own } })`:
 * `--duration` and `--warmup` in seconds, `--connections` (a comma list where the script measures several),
 * `--rounds` where the script alternates its targets, `--compiled <dist>` to run builds, `--checkout <dir>` for
 * a second checkout, `--profile <dir>` for V8 CPU profiles.
 */
export function loadOptions(defaults: LoadDefaults) {
  return {
    duration: { type: 'string', default: defaults.duration },
    warmup: { type: 'string', default: defaults.warmup },
    connections: { type: 'string', default: defaults.connections },
    rounds: { type: 'string', default: defaults.rounds ?? '1' },
    compiled: { type: 'string' },
    checkout: { type: 'string' },
    profile: { type: 'string' },
  } as const;
}

/** `--connections 10,64` as numbers. */
export const connectionCounts = (value: string): number[] => value.split(',').map((c) => Number(c.trim()));
