/**
 * Cold start: from spawning `server/main.ts` (as `npm start` runs it) to the first answered request.
 * Two clocks per run: the first 200 on `/healthz`, and the first answer of a real contract operation
 * that goes through credential resolution and the request validator (a storage GET of a member row),
 * because the validator is what start-up used to spend most of its time compiling.
 *
 * Used by `npm run bench` (its cold-start line) and runnable alone, alternating the targets run by run and
 * printing each one's medians:
 *   node --import tsx scripts/bench/cold-start.ts [--runs 5] [--compiled dist [--compiled <other build>]]
 *     [--no-tsx] [--profile <dir>]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startNodeEnv as startEnvOf, startNodeFlags as startFlagsOf } from '../build/start-flags.mjs';

export interface ColdStart {
  /** Milliseconds from spawn to the first 200 on /healthz. */
  healthzMs: number;
  /** Milliseconds from spawn to the first validated answer of a contract operation. */
  operationMs: number;
  /**
   * CPU milliseconds the server process had used (all its threads) at those two moments: on a shared
   * machine the wall clock mostly measures the other processes, the CPU time what the start costs.
   */
  healthzCpuMs: number;
  operationCpuMs: number;
  /** The server's resident set (MB) once the operation is answered: what a start leaves in memory. */
  rssMb: number;
}

/** Resident set size of a process in MB (Linux; NaN elsewhere). */
export function rssMb(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? Number.NaN : Number(kb) / 1024;
  } catch {
    return Number.NaN;
  }
}

/** User + system CPU time of a process (all threads), in milliseconds (Linux; NaN elsewhere). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

const repoRoot = new URL('../..', import.meta.url).pathname;

/** The node options of a checkout's `npm start` (PERF-122), which the build's code cache was trained under. */
export const startNodeFlags = (root: string = repoRoot): string[] => startFlagsOf(root);
/** The environment a checkout's `npm start` gives node (PERF-222). */
export const startNodeEnv = (root: string = repoRoot): Record<string, string> => startEnvOf(root);

/**
 * One cold start. `dataDir` must already hold a store (the first start of an empty one also migrates and
 * creates the signing key, which is a one-time cost); `operation` is a path and its Authorization.
 */
export async function measureColdStart(
  dataDir: string,
  port: number,
  operation: { path: string; auth: string },
  /** The checkout whose `server/main.ts` starts (another one, to compare two builds in one run). */
  root: string = repoRoot,
  /** What node runs: the sources through tsx (`npm start`), or a compiled `main.js` (`npm run build`). */
  args: readonly string[] = ['--import', 'tsx', 'server/main.ts'],
  /** What the start script sets for node besides (a build's; PERF-222). */
  startEnv: Record<string, string> = {},
): Promise<ColdStart> {
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...startEnv, NODE_ENV: 'production', PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, PUBLIC_URL: url, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    let healthzMs = 0;
    let healthzCpuMs = 0;
    const deadline = t0 + 60_000;
    while (healthzMs === 0) {
      if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode})`);
      try {
        const res = await fetch(`${url}/healthz`);
        if (res.status === 200) {
          healthzMs = performance.now() - t0;
          healthzCpuMs = cpuMs(child.pid ?? 0);
        }
        await res.arrayBuffer();
      } catch {
        if (performance.now() > deadline) throw new Error('no answer within 60 s');
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    const res = await fetch(`${url}${operation.path}`, { headers: { Authorization: operation.auth } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`the operation answered ${res.status}`);
    const operationMs = performance.now() - t0;
    return { healthzMs, operationMs, healthzCpuMs, operationCpuMs: cpuMs(child.pid ?? 0), rssMb: rssMb(child.pid ?? 0) };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

export const describeColdStart = (c: ColdStart): string =>
  `/healthz ${Math.round(c.healthzMs)} ms (CPU ${Math.round(c.healthzCpuMs)} ms), ` +
  `first validated operation ${Math.round(c.operationMs)} ms (CPU ${Math.round(c.operationCpuMs)} ms), RSS ${c.rssMb.toFixed(1)} MB`;

/** A store with one launched student, so the cold start reads a real member row. */
export async function prepareColdStartStore(): Promise<{ dataDir: string; path: string; auth: string }> {
  const { buildServices } = await import('../../server/app.js');
  const { configFrom } = await import('../../server/config.js');
  const { createTool, launch, placeLocation } = await import('../../tests/server/harness.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'tis-cold-'));
  const services = await buildServices(configFrom({ dataDir, publicUrl: 'http://127.0.0.1:1', logLevel: 'silent' }));
  const tool = await createTool({ services });
  // A school of its own, not the Sandbox's: the Sandbox's LMS is the service itself, which does not listen
  // here (its public URL is a placeholder), and a cold start reads the row whatever the school.
  const quiz = await placeLocation(
    { services },
    {
      app: tool.app.id,
      type: 'assessment',
      points: 10,
      organization: { issuer: 'https://lms.cold-start.example', client: 'cold-start', deployment: '1', title: 'Cold start school' },
    },
  );
  const student = await launch({ services }, { placed: quiz, groups: ['student'] });
  await services.store.close();
  return { dataDir, path: new URL(student.claims.storage.member).pathname, auth: student.auth };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};

/** The medians of several cold starts, in the form of one (each clock's median taken on its own). */
export const medianColdStart = (runs: readonly ColdStart[]): ColdStart => ({
  healthzMs: median(runs.map((r) => r.healthzMs)),
  operationMs: median(runs.map((r) => r.operationMs)),
  healthzCpuMs: median(runs.map((r) => r.healthzCpuMs)),
  operationCpuMs: median(runs.map((r) => r.operationCpuMs)),
  rssMb: median(runs.map((r) => r.rssMb)),
});

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '3' },
      port: { type: 'string', default: '0' },
      // --compiled <dist>: also the service as `npm run build` compiles it (<dist>/server/main.js); given
      // several times (a build of another commit, e.g. `node scripts/build.mjs --out-dir <dir>` there),
      // each is measured in turn, round by round, so all see the same neighbours.
      compiled: { type: 'string', multiple: true },
      // --no-tsx: the builds only.
      'no-tsx': { type: 'boolean', default: false },
      // --profile <dir>: each start also writes a V8 CPU profile of the server's process there (inflated
      // by the profiler; for where the time goes, not for the figures).
      profile: { type: 'string' },
    },
  });
  const profile = values.profile ? ['--cpu-prof', '--cpu-prof-dir', values.profile] : [];
  const targets: Array<{ name: string; args: string[]; env?: Record<string, string> }> = [
    ...(values['no-tsx'] ? [] : [{ name: 'tsx', args: [...profile, '--import', 'tsx', 'server/main.ts'] }]),
    // Each build with the node options of this checkout's `npm start` (PERF-122).
    ...(values.compiled ?? []).map((dist) => ({ name: `compiled ${dist}`, args: [...profile, ...startNodeFlags(), `${resolve(dist)}/server/main.js`], env: startNodeEnv() })),
  ];
  const prepared = await prepareColdStartStore();
  const results = new Map<string, ColdStart[]>(targets.map((t) => [t.name, []]));
  try {
    const port = Number(values.port) || 20_000 + Math.floor(Math.random() * 20_000);
    for (let i = 0; i < Number(values.runs); i += 1) {
      for (const target of targets) {
        const m = await measureColdStart(prepared.dataDir, port, prepared, repoRoot, target.args, target.env);
        results.get(target.name)?.push(m);
        process.stdout.write(`cold start ${i + 1} (${target.name}): ${describeColdStart(m)}\n`);
      }
    }
    for (const [name, runs] of results) process.stdout.write(`median of ${runs.length} (${name}): ${describeColdStart(medianColdStart(runs))}\n`);
  } finally {
    rmSync(prepared.dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
