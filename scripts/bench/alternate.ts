/**
 * A change against its parent, by CPU per request, in alternating rounds (decision PERF-30):
 *
 *   node --import tsx scripts/bench/alternate.ts --checkout <parent worktree> [--rounds 4] [--duration 3]
 *        [--connections 10] [--only GET]
 *        [--warmup 4] [--compiled dist]
 *
 * Starts this checkout's service and the other checkout's on one SQLite data dir (the same fixture as the
 * bench's storage rows), then drives them in turn, A B B A A B ..., each for `--duration` seconds after the
 * first warm-up, and prints the CPU milliseconds each process spent per served request in each round and
 * their medians, and each round's p99 latency. On a machine shared with other engineers a single `npm run
 * bench` cell is measured under whatever the neighbours were doing at that moment; alternating short rounds
 * gives both services the same neighbours, which is what a before/after comparison of one change needs.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { cpuMs, prepareColdStartStore, rssMb } from './cold-start.js';
import { Children, loadOptions, serviceArgs, serviceStartEnv, untilAnswers } from './scaffold.js';
import { BENCH_ROW } from './storage.js';

const { values } = parseArgs({
  options: {
    // --compiled <dist>: each checkout runs `<checkout>/<dist>/server/main.js` instead of its sources through tsx.
    ...loadOptions({ duration: '3', warmup: '4', connections: '10', rounds: '4' }),
    only: { type: 'string' },
  },
});
if (!values.checkout) throw new Error('--checkout <another checkout> is required');
const repoRoot = new URL('../..', import.meta.url).pathname;
const connections = Number(values.connections);
const duration = Number(values.duration);

const prepared = await prepareColdStartStore();
const children = new Children();

async function start(name: string, cwd: string, port: number): Promise<{ name: string; url: string; pid: number }> {
  // A build runs with the node options of its own checkout's `npm start` (PERF-122).
  const args = serviceArgs(cwd, values.compiled);
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, ...serviceStartEnv(cwd, values.compiled), NODE_ENV: 'production', PORT: String(port), HOST: '127.0.0.1', DATA_DIR: prepared.dataDir, PUBLIC_URL: url, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(child);
  await untilAnswers(`${url}/healthz`, name, { child, ready: () => true });
  return { name, url, pid: child.pid ?? 0 };
}

const operations = [
  { name: 'GET', method: 'GET' as const },
  { name: 'PUT', method: 'PUT' as const, body: BENCH_ROW },
  { name: 'PATCH', method: 'PATCH' as const, body: JSON.stringify({ patch: [{ op: 'replace', path: '/progress', value: 4 }] }) },
].filter((op) => values.only === undefined || op.name === values.only);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

try {
  const base = 20_000 + Math.floor(Math.random() * 20_000);
  const targets = [await start('this checkout', repoRoot, base), await start('other checkout', resolve(values.checkout), base + 1)];
  // The row the PATCH replaces a member of (`--only PATCH` has no PUT before it to write one).
  const seeded = await fetch(`${targets[0]?.url}${prepared.path}`, {
    method: 'PUT',
    headers: { Authorization: prepared.auth, 'Content-Type': 'application/json' },
    body: BENCH_ROW,
  });
  if (seeded.status !== 204) throw new Error(`seeding the row answered ${seeded.status}`);
  process.stdout.write(`load average ${loadavg()[0]?.toFixed(2)} before\n`);
  for (const op of operations) {
    const drive = (url: string, seconds: number) =>
      autocannon({
        url,
        requests: [{ method: op.method, path: prepared.path, headers: { Authorization: prepared.auth, 'Content-Type': 'application/json' }, ...(op.body ? { body: op.body } : {}) }],
        connections,
        duration: seconds,
      });
    for (const t of targets) await drive(t.url, Number(values.warmup));
    const perRequest = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const p99s = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < Number(values.rounds); round += 1) {
      // A B, B A, A B, ...: neither is always the one measured right after the other.
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        const before = cpuMs(t.pid);
        const result = await drive(t.url, duration);
        const served = result['2xx'];
        if (result.non2xx > 0 || result.errors > 0) process.stdout.write(`  ${t.name}: ${result.non2xx} non-2xx, ${result.errors} errors\n`);
        perRequest.get(t.name)?.push((cpuMs(t.pid) - before) / served);
        p99s.get(t.name)?.push(result.latency.p99);
      }
    }
    for (const t of targets) {
      const xs = perRequest.get(t.name) ?? [];
      process.stdout.write(`${op.name} ${t.name}: CPU ms/request ${xs.map((x) => x.toFixed(3)).join(', ')}; median ${median(xs).toFixed(3)}\n`);
      // Latency is the neighbours' as much as the service's; the median p99 of the rounds, for the 64-connection goal.
      const ps = p99s.get(t.name) ?? [];
      process.stdout.write(`${op.name} ${t.name}: p99 ${ps.map((x) => `${x} ms`).join(', ')}; median ${median(ps)} ms\n`);
    }
    // What each process holds after the same requests: a change of node options shows here (PERF-217).
    process.stdout.write(`${op.name} RSS after: ${targets.map((t) => `${t.name} ${rssMb(t.pid).toFixed(1)} MB`).join(', ')}\n`);
    const [a, b] = targets.map((t) => median(perRequest.get(t.name) ?? []));
    process.stdout.write(`${op.name} this/other: ${((a as number) / (b as number)).toFixed(2)}×\n`);
  }
  process.stdout.write(`load average ${loadavg()[0]?.toFixed(2)} after\n`);
} finally {
  await children.stopAll();
  rmSync(prepared.dataDir, { recursive: true, force: true });
}
