/**
 * Cold start: from spawning `server/main.ts` (as `npm start` runs it) to the first answered request.
 * Two clocks per run: the first 200 on `/healthz`, and the first answer of a real contract operation
 * that goes through credential resolution and the request validator (a storage GET of a member row),
 * because the validator is what start-up used to spend most of its time compiling.
 *
 * Used by `npm run bench` (its cold-start line) and runnable alone:
 *   node --import tsx scripts/bench/cold-start.ts [--runs 3]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

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
): Promise<ColdStart> {
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production', PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, PUBLIC_URL: url, LOG_LEVEL: 'silent' },
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
    return { healthzMs, operationMs: performance.now() - t0, healthzCpuMs, operationCpuMs: cpuMs(child.pid ?? 0) };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

export const describeColdStart = (c: ColdStart): string =>
  `/healthz ${Math.round(c.healthzMs)} ms (CPU ${Math.round(c.healthzCpuMs)} ms), ` +
  `first validated operation ${Math.round(c.operationMs)} ms (CPU ${Math.round(c.operationCpuMs)} ms)`;

/** A store with one launched student, so the cold start reads a real member row. */
export async function prepareColdStartStore(): Promise<{ dataDir: string; path: string; auth: string }> {
  const { buildServices } = await import('../../server/app.js');
  const { configFrom } = await import('../../server/config.js');
  const { createTool, launch, placeLocation } = await import('../../tests/server/harness.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'tis-cold-'));
  const services = await buildServices(configFrom({ dataDir, publicUrl: 'http://127.0.0.1:1', logLevel: 'silent' }));
  const tool = await createTool({ services });
  const quiz = await placeLocation({ services }, { app: tool.app.id, type: 'assessment', points: 10 });
  const student = await launch({ services }, { placed: quiz, groups: ['student'] });
  await services.store.close();
  return { dataDir, path: new URL(student.claims.storage.member).pathname, auth: student.auth };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { runs: { type: 'string', default: '3' }, port: { type: 'string', default: '0' }, compiled: { type: 'string' } },
  });
  // --compiled <dist>: also the service as `npm run build` compiles it (<dist>/server/main.js), alternating.
  const compiled = values.compiled ? [`${values.compiled}/server/main.js`] : null;
  const prepared = await prepareColdStartStore();
  try {
    const port = Number(values.port) || 20_000 + Math.floor(Math.random() * 20_000);
    for (let i = 0; i < Number(values.runs); i += 1) {
      const m = await measureColdStart(prepared.dataDir, port, prepared);
      process.stdout.write(`cold start ${i + 1} (tsx): ${describeColdStart(m)}\n`);
      if (compiled) {
        const c = await measureColdStart(prepared.dataDir, port, prepared, repoRoot, compiled);
        process.stdout.write(`cold start ${i + 1} (compiled): ${describeColdStart(c)}\n`);
      }
    }
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
