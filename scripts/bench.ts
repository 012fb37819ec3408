/**
 * `npm run bench`: what the full stack costs per request, against two baselines, in one run.
 *
 *   full stack  the real service (`server/main.ts`, as `npm start` runs it) with production's pipeline:
 *               request validation, credential resolution, permission checks, SQLite (WAL with the group
 *               commit barrier, PERF-03), access logs (to /dev/null); response validation OFF, as production
 *               runs. Scores are published to a school's LMS, the reference LMS in a process of its own
 *               (scripts/bench/school-lms.ts, PERF-150), whose CPU per score is reported beside the service's.
 *   PostgreSQL  the same service on PostgreSQL with the shared blob store, as one instance and as two
 *               instances on one database with the load spread over both (scripts/bench/postgres.ts).
 *   bare        Express 5 with the same routes and nothing else (scripts/bench/bare.ts).
 *   Prism       `prism mock` of generated/2026-09-21/openapi.json (validates requests, serves examples).
 *
 * Each runs in its own process; autocannon drives them from this one. The operations come from the
 * sections in `SECTIONS` (scripts/bench/<section>.ts; a new section is a file there and one line here).
 * Every operation is measured on every target at each connection count (default 10 and 64): a warm-up,
 * then a measured run, or with `--rounds <n>` n runs per target, the targets taking turns (PERF-223). It
 * prints Markdown tables (requests/s, p50, p99, ratios), the cold start and each server's RSS after the
 * load, and writes the run as JSON and an SVG chart of the ratios under `bench/results/` (`latest.json`,
 * `latest.svg`).
 *
 * Options: --duration <s> (default 5), --warmup <s> (1), --max-op-warmup <s> (caps an operation's longer warm-up),
 *          --connections <n,n> (10,64), --rounds <n> (1; 3 with --pg: each cell pooled from n runs, every target
 *          taking its turn in each round, so the ratios are of targets measured under the same host),
 *          --with-validation (adds the full stack with RESPONSE_VALIDATION=true as another target),
 *          --metrics (adds the full stack with METRICS=off as another target, and the ratio "metrics on/off":
 *          what the Prometheus metrics cost a request, OPS-10; the full stack runs with them on, the default),
 *          --postgres <url> (the database of the PostgreSQL columns; default BENCH_DATABASE_URL,
 *          TIS_TEST_DATABASE_URL or the test database), --no-postgres (leaves those columns out),
 *          --no-prism, --cold-starts <n> (3; 0 leaves the cold start out), --out <dir> (bench/results),
 *          --floors <file> (the CI-light check: fail when a ratio falls below its floor; see bench/floors.json),
 *          --profile <dir> (writes V8 CPU profiles of the SQLite full-stack process and of the first PostgreSQL
 *          instance there, for Chrome DevTools),
 *          --baseline <checkout> (adds the full stack of another checkout, e.g. a `git worktree` of main, from
 *          its own `--compiled` folder, or `--baseline-compiled <dir>` in it, when that is given, as a
 *          target on the same data dir, and its cold start: a change measured against its base in one run),
 *          --files [--uploads <n>] (instead: the cost of one upload per blob store, scripts/bench/files.ts),
 *          --compiled <dist> (this checkout's service from `npm run build`'s output, as `npm start` runs it),
 *          --pg (the PostgreSQL run: no Prism, no cold start, the PostgreSQL columns' ratios to bare Express and
 *          their CPU per request, the instances' and their PostgreSQL backends'), --pin (with the PostgreSQL
 *          columns: each instance held to one core by taskset, and a "2 instances, one core" column).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { buildServices } from '../server/app.js';
import { configFrom } from '../server/config.js';
import { cpuMs, describeColdStart, measureColdStart, medianColdStart, startNodeFlags } from './bench/cold-start.js';
import { probeCommitCost } from './bench/disk-probe.js';
import { lmsProcess, serviceEnvForLoopbackLms, untilLmsReady } from './bench/school-lms.js';
import { runFilesBench } from './bench/files.js';
import {
  DEFAULT_BENCH_DATABASE_URL,
  PG_ONE,
  PG_TWO,
  PG_TWO_ONE_CORE,
  type PostgresColumns,
  startPostgresColumns,
} from './bench/postgres.js';
import { goalLines } from './bench/goals.js';
import { type BenchRun, type Cell, markdownTables, p99Ratio, type RatioDef, ratioOf, writeRun } from './bench/report.js';
import { type CellParts, cellOf, inTurn, type Slice } from './bench/rounds.js';
import { Children, freePort, serviceArgs, serviceStartEnv, untilAnswers } from './bench/scaffold.js';
import { scoreSection } from './bench/scores.js';
import type { BenchOperation, BenchSection } from './bench/section.js';
import { BENCH_ROW, storageSection } from './bench/storage.js';
// The test fixtures go through the real launch service: the bench's token is one a tool would get.
import { createTool, launch, placeLocation } from '../tests/server/harness.js';

/** The measured sections, in table order. */
const SECTIONS: BenchSection[] = [storageSection, scoreSection];

const { values: options } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    // At most this long for an operation's own longer warm-up (the score's, PERF-152); bench:check passes 1
    // (CI-35): its floors are far below what a short warm-up gives, and it is seconds of every CI run.
    'max-op-warmup': { type: 'string' },
    connections: { type: 'string', default: '10,64' },
    // Each cell in this many runs, the targets taking turns (PERF-223); the `--pg` run's default is 3.
    rounds: { type: 'string' },
    'with-validation': { type: 'boolean', default: false },
    metrics: { type: 'boolean', default: false },
    postgres: { type: 'string', default: DEFAULT_BENCH_DATABASE_URL },
    'no-postgres': { type: 'boolean', default: false },
    'no-prism': { type: 'boolean', default: false },
    'cold-starts': { type: 'string', default: '3' },
    out: { type: 'string', default: 'bench/results' },
    floors: { type: 'string' },
    profile: { type: 'string' },
    // Only the operations whose name contains this text (e.g. `--only GET --profile dir`: one profile per path).
    only: { type: 'string' },
    // The files section (scripts/bench/files.ts): uploads through the embedded store and an object store.
    files: { type: 'boolean', default: false },
    uploads: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    // The full stack from a build (`npm run build`; `<dir>/server/main.js`), as `npm start` runs it in
    // production, instead of the sources through tsx (PERF-33): tsx's transform and source maps cost start-up
    // time and memory that production never pays.
    compiled: { type: 'string' },
    // The baseline's build folder, in the baseline checkout (default: --compiled's name there).
    'baseline-compiled': { type: 'string' },
    // The PostgreSQL run (PERF-52): the PostgreSQL columns against bare Express, with their CPU per request.
    pg: { type: 'boolean', default: false },
    pin: { type: 'boolean', default: false },
  },
});
// The PostgreSQL run leaves Prism out; it keeps the cold start (of the build with --compiled), one of the
// goals it judges (scripts/bench/goals.ts, PERF-161), unless `--cold-starts 0` says otherwise.
if (options.pg) options['no-prism'] = true;
const DURATION = Number(options.duration);
const WARMUP = Number(options.warmup);
const MAX_OP_WARMUP = options['max-op-warmup'] === undefined ? Infinity : Number(options['max-op-warmup']);
if (Number.isNaN(MAX_OP_WARMUP) || MAX_OP_WARMUP < 0) throw new Error(`--max-op-warmup must be a number of seconds, got ${options['max-op-warmup']}`);
const CONNECTIONS = options.connections.split(',').map((c) => Number(c.trim()));
const COLD_STARTS = Number(options['cold-starts']);
const ROUNDS = Number(options.rounds ?? (options.pg ? 3 : 1));
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`--rounds must be a whole number from 1, got ${options.rounds}`);

const repoRoot = new URL('..', import.meta.url).pathname;
/**
 * How node starts this checkout's service: the build's main.js with `--compiled`, with the node options of
 * `npm start` (PERF-122), else the sources through tsx.
 */
const SERVICE_ARGS: string[] = options.compiled
  ? [...startNodeFlags(repoRoot), join(resolve(options.compiled), 'server/main.js')]
  : ['--import', 'tsx', 'server/main.ts'];
// The baseline checkout runs the same way as this one: its own build when `--compiled` names a folder
// (built there too), so a before/after of a change compares two builds (issue 27).
const BASELINE_ARGS: string[] | null = options.baseline
  ? serviceArgs(resolve(options.baseline), options['baseline-compiled'] ?? options.compiled)
  : null;
/** The environment `npm start` gives node (PERF-222), for a build; nothing for the sources. */
const SERVICE_START_ENV: Record<string, string> = serviceStartEnv(repoRoot, options.compiled);
const BASELINE_START_ENV: Record<string, string> = options.baseline
  ? serviceStartEnv(resolve(options.baseline), options['baseline-compiled'] ?? options.compiled)
  : {};
const children = new Children();
const dataDir = mkdtempSync(join(tmpdir(), 'tis-bench-'));

interface Started {
  name: string;
  url: string;
  pid: number;
}

/** A column of the table: where the load goes, and the fixture that target holds. */
interface Target {
  name: string;
  /** Several URLs when the target is several instances; autocannon spreads connections over them. */
  urls: string[];
  /** The SQLite fixture's path rewritten onto this target's own fixture; null when it has none. */
  path(path: string): string | null;
  auth: string;
  /** The target's own operations (its own fixture's paths and tokens), by name; else the SQLite ones mapped by `path`. */
  operations?: Map<string, BenchOperation>;
  /** CPU milliseconds spent so far by the target's database backends, when they can be found. */
  databaseCpuMs?: () => Promise<number>;
  /** A baseline (bare Express, Prism): it answers at once and reaches nothing, so no other process's CPU is its. */
  baseline?: boolean;
}

const started = new Map<string, Started>();

/** Spawns a server process and waits until `probePath` answers at all. */
async function startTarget(name: string, args: string[], port: number, env: NodeJS.ProcessEnv, probePath: string, cwd = repoRoot): Promise<Started> {
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, ...env },
    // stdout to /dev/null: the service's access log costs what it costs in production, without a reader.
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  await untilAnswers(`${url}${probePath}`, name, { child, ready: () => true }).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)}:\n${stderr}`);
  });
  const s = { name, url, pid: child.pid ?? 0 };
  started.set(name, s);
  return s;
}

const stopAll = (): Promise<void> => children.stopAll();

/** Resident set size of a process in MB (Linux), or NaN. */
function rssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kb ? Number(kb) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** One operation's load on one target: its warm-up, then as many measured slices as the run takes turns. */
interface Load {
  target: Target;
  /** The operation's own longer warm-up where it has one (PERF-152); run before the first slice. */
  warmUp(): Promise<void>;
  slice(): Promise<Slice>;
  /** The process whose CPU a served request also spends (the score's LMS), when it reaches one. */
  reaches?: BenchOperation['reaches'];
}

function loadOf(target: Target, shared: BenchOperation, connections: number): Load | null {
  const own = target.operations?.get(shared.name);
  const op = own ?? shared;
  const path = own ? own.path : target.path(op.path);
  if (path === null || op.skip?.includes(target.name)) return null;
  const headers: Record<string, string> = { Authorization: target.auth, ...(op.body === undefined ? {} : { 'Content-Type': 'application/json' }), ...op.headers };
  let failed = new Map<string, number>();
  const onResponse = op.failure
    ? (status: number, body: string): void => {
        const why = op.failure?.(status, body);
        if (why) failed.set(why, (failed.get(why) ?? 0) + 1);
      }
    : undefined;
  const spread = own
    ? own.spread
    : op.spread?.flatMap((s) => {
        const mapped = target.path(s.path);
        return mapped === null ? [] : [{ path: mapped, auth: s.auth }];
      });
  let turn = 0;
  const setupRequest =
    spread && spread.length > 0 && spread.length === op.spread?.length
      ? (request: { path: string; headers: Record<string, string> }) => {
          const next = spread[turn++ % spread.length] as { path: string; auth: string };
          return { ...request, path: next.path, headers: { ...request.headers, Authorization: next.auth } };
        }
      : undefined;
  const run = (duration: number) =>
    autocannon({
      url: target.urls.length === 1 ? (target.urls[0] as string) : target.urls,
      requests: [
        {
          method: op.method,
          path,
          headers,
          ...(op.body === undefined ? {} : { body: op.body }),
          ...(onResponse ? { onResponse } : {}),
          ...(setupRequest ? { setupRequest } : {}),
        },
      ],
      connections,
      duration,
    });
  const reaches = target.baseline ? undefined : op.reaches;
  return {
    target,
    ...(reaches ? { reaches } : {}),
    // An operation's longer warm-up is for the service's JIT on that path (PERF-152); bare Express answers
    // it with a stand-in that needs no more than any other cell's (CI-27: seconds of every bench:check).
    async warmUp() {
      if (WARMUP > 0) await run(target.baseline ? WARMUP : Math.max(WARMUP, Math.min(op.warmupS ?? 0, MAX_OP_WARMUP)));
    },
    async slice() {
      failed = new Map();
      // The CPU the target's own processes spend is what the load generator and the neighbours cannot blur.
      const pids = [...started.values()].filter((s) => target.urls.includes(s.url)).map((s) => s.pid);
      const cpuBefore = pids.reduce((sum, pid) => sum + cpuMs(pid), 0);
      const databaseBefore = (await target.databaseCpuMs?.()) ?? Number.NaN;
      const reachedBefore = reaches ? cpuMs(reaches.pid) : Number.NaN;
      const generatorBefore = process.cpuUsage();
      const result = await run(DURATION);
      const generator = process.cpuUsage(generatorBefore);
      const failedCount = [...failed.values()].reduce((a, b) => a + b, 0);
      return {
        served: Math.max(0, result['2xx'] - failedCount),
        seconds: result.duration,
        cpuMs: pids.length ? pids.reduce((sum, pid) => sum + cpuMs(pid), 0) - cpuBefore : Number.NaN,
        databaseMs: ((await target.databaseCpuMs?.()) ?? Number.NaN) - databaseBefore,
        reachedMs: reaches ? cpuMs(reaches.pid) - reachedBefore : Number.NaN,
        generatorMs: (generator.user + generator.system) / 1000,
        answered: result['2xx'] + result.non2xx,
        non2xx: result.non2xx,
        statusCodes: result.statusCodeStats,
        errors: result.errors,
        timeouts: result.timeouts,
        failed,
        p50: result.latency.p50,
        p99: result.latency.p99,
      };
    },
  };
}

const cellParts = (load: Load): CellParts => ({
  duration: DURATION,
  database: load.target.databaseCpuMs !== undefined,
  ...(load.reaches ? { reached: load.reaches.name } : {}),
});

/** One target alone: its warm-up, then one measured run (the floors' retries, the metrics' rounds). */
async function measure(target: Target, op: BenchOperation, connections: number): Promise<Cell | null> {
  const load = loadOf(target, op, connections);
  if (!load) return null;
  await load.warmUp();
  return cellOf([await load.slice()], cellParts(load));
}

/**
 * Every target's cell of one operation, in `rounds` rounds (PERF-223): in each round every target takes
 * one `--duration` run in turn, the order rotated by one each round, so a host that speeds up or slows
 * down during the operation's minute weighs on every target alike instead of on whichever ran then. Each
 * target is warmed up right before its first run; with one round this is the measurement it always was.
 */
async function measureInRounds(targets: readonly Target[], op: BenchOperation, connections: number, rounds: number): Promise<Map<Target, Cell>> {
  const loads = targets.flatMap((target) => loadOf(target, op, connections) ?? []);
  const slices = new Map<Load, Slice[]>(loads.map((load) => [load, []]));
  for (let round = 0; round < rounds; round += 1) {
    for (const load of inTurn(loads, round)) {
      if (round === 0) await load.warmUp();
      slices.get(load)?.push(await load.slice());
    }
  }
  return new Map(loads.map((load) => [load.target, cellOf(slices.get(load) ?? [], cellParts(load))]));
}

const fmtRps = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
const fmtMs = (n: number) => `${Math.round(n * 10) / 10} ms`;

const SQLITE = 'full stack, SQLite';
const METRICS_OFF = 'full stack, SQLite, metrics off';
const BASELINE = 'baseline checkout, SQLite';
const BARE = 'bare Express';
const PRISM = 'Prism mock';
const LMS = "school's LMS (reference LMS)";

/** `--floors`: `{ "<operation>": { "<ratio label>": floor } }` at the run's first connection count. */
function checkFloors(run: BenchRun, file: string): string[] {
  const floors = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Record<string, number>>;
  const conns = run.options.connections[0] ?? 10;
  const below: string[] = [];
  for (const [op, byRatio] of Object.entries(floors)) {
    if (op.startsWith('$')) continue;
    for (const [label, floor] of Object.entries(byRatio)) {
      const def = run.ratios.find((r) => r.label === label);
      const value = def ? ratioOf(run, op, conns, def) : null;
      if (value === null) below.push(`${op}, ${label}: not measured`);
      else if (value < floor) below.push(`${op}, ${label}: ${value.toFixed(2)}× is below its floor ${floor}×`);
    }
  }
  return below;
}

async function main(): Promise<void> {
  if (options.files) {
    process.stdout.write(`\n${await runFilesBench({ uploads: Number(options.uploads) })}\n`);
    return;
  }
  const loadBefore = loadavg();
  const startedAt = new Date();
  let postgres: PostgresColumns | null = null;
  let postgresNote: string;
  try {
    const [fullPort, validatingPort, barePort, prismPort, lmsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
    const publicUrl = `http://127.0.0.1:${fullPort}`;

    // The school's LMS scores are published to, in its own process from start to end, as a school's is.
    const lmsSpec = lmsProcess({ port: lmsPort, dataDir, checkout: repoRoot, compiled: options.compiled });
    const lmsStarted = await startTarget(LMS, lmsSpec.args, lmsPort, lmsSpec.env, '/.well-known/openid-configuration');
    await untilLmsReady(lmsSpec.url);
    const lms = { url: lmsSpec.url, controlToken: lmsSpec.controlToken, pid: lmsStarted.pid };

    // A tool, a graded placement and a student's launch, written to the data dir the service then opens;
    // each section adds what it measures. Loopback and auto-activation let the service register with the
    // LMS on 127.0.0.1 through Dynamic Registration (scripts/bench/school-lms.ts).
    const services = await buildServices(configFrom({ dataDir, publicUrl, logLevel: 'silent', allowLoopbackTools: true, lmsAutoActivate: true }));
    const tool = await createTool({ services });
    const quiz = await placeLocation({ services }, { app: tool.app.id, type: 'assessment', points: 10 });
    const student = await launch({ services }, { placed: quiz, groups: ['student'] });
    const operations: BenchOperation[] = [];
    for (const section of SECTIONS) operations.push(...(await section.prepare({ services, student, placed: quiz, lms })));
    if (options.only !== undefined) operations.splice(0, operations.length, ...operations.filter((o) => o.name.includes(options.only as string)));
    await services.blobs.close?.();
    await services.store.close();
    const rowPath = new URL(student.claims.storage.member).pathname;

    // Cold start first, while nothing else of the bench runs: spawn → first 200 on /healthz, and → first
    // validated contract operation (a member row GET).
    const coldStarts: BenchRun['coldStart'] = [];
    const baselineColdStarts: NonNullable<BenchRun['coldStart']> = [];
    if (COLD_STARTS > 0) {
      const port = await freePort();
      // One uncounted start of each checkout first: tsx's transform cache is then warm, as on any start but
      // the first after a change. Then alternating with the baseline's, so both see the same load.
      await measureColdStart(dataDir, port, { path: rowPath, auth: student.auth }, repoRoot, SERVICE_ARGS, SERVICE_START_ENV);
      if (options.baseline) await measureColdStart(dataDir, port, { path: rowPath, auth: student.auth }, resolve(options.baseline), BASELINE_ARGS ?? undefined, BASELINE_START_ENV);
      for (let i = 0; i < COLD_STARTS; i += 1) {
        coldStarts.push(await measureColdStart(dataDir, port, { path: rowPath, auth: student.auth }, repoRoot, SERVICE_ARGS, SERVICE_START_ENV));
        if (options.baseline) baselineColdStarts.push(await measureColdStart(dataDir, port, { path: rowPath, auth: student.auth }, resolve(options.baseline), BASELINE_ARGS ?? undefined, BASELINE_START_ENV));
      }
      const show = (runs: typeof baselineColdStarts) => `${runs.map(describeColdStart).join('; ')}; median ${describeColdStart(medianColdStart(runs))}`;
      process.stderr.write(`  cold start: ${show(coldStarts)}\n`);
      if (options.baseline) process.stderr.write(`  cold start of the baseline checkout: ${show(baselineColdStarts)}\n`);
    }

    const serviceEnv = (port: number, validation: boolean, metrics = true): NodeJS.ProcessEnv => ({
      METRICS: metrics ? 'on' : 'off',
      ...serviceEnvForLoopbackLms,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      // The LMS's registration names the tool by this origin.
      PUBLIC_URL: publicUrl,
      RESPONSE_VALIDATION: String(validation),
      LOG_LEVEL: 'info',
    });
    const prismCli = createRequire(import.meta.url).resolve('@stoplight/prism-cli/dist/index.js');
    const single = (s: Started, baseline = false): Target => ({ name: s.name, urls: [s.url], path: (p) => p, auth: student.auth, ...(baseline ? { baseline } : {}) });
    const targets: Target[] = [];
    const profiling = options.profile ? ['--cpu-prof', '--cpu-prof-dir', options.profile] : [];
    targets.push(
      single(await startTarget(SQLITE, [...profiling, ...SERVICE_ARGS], fullPort, { ...SERVICE_START_ENV, ...serviceEnv(fullPort, false) }, '/healthz')),
    );
    if (options.baseline) {
      const port = await freePort();
      targets.push(single(await startTarget(BASELINE, BASELINE_ARGS ?? [], port, { ...BASELINE_START_ENV, ...serviceEnv(port, false) }, '/healthz', resolve(options.baseline))));
    }
    if (options['with-validation']) {
      // Same data dir (WAL allows two processes), publishing to the same school's LMS.
      targets.push(
        single(
          await startTarget(`${SQLITE}, response validation ON`, SERVICE_ARGS, validatingPort, { ...SERVICE_START_ENV, ...serviceEnv(validatingPort, true) }, '/healthz'),
        ),
      );
    }
    if (options.metrics) {
      // Same data dir and LMS; only METRICS differs, so the ratio is what the metrics cost (OPS-10).
      const port = await freePort();
      targets.push(single(await startTarget(METRICS_OFF, SERVICE_ARGS, port, { ...SERVICE_START_ENV, ...serviceEnv(port, false, false) }, '/healthz')));
    }
    if (options['no-postgres']) {
      postgresNote = 'PostgreSQL columns left out (--no-postgres)';
    } else {
      const pgColumns = await startPostgresColumns({
        databaseUrl: options.postgres,
        sqlite: { rowPath },
        lms,
        freePort,
        startService: (name, port, env) => startTarget(name, [...(name.endsWith('instance 1') ? profiling : []), ...SERVICE_ARGS], port, { ...SERVICE_START_ENV, ...env }, '/healthz'),
        sections: SECTIONS,
        keep: (name) => operations.some((o) => o.name === name),
        pin: options.pin,
      });
      if ('skipped' in pgColumns) {
        postgresNote = `PostgreSQL columns left out: ${pgColumns.skipped}`;
        process.stderr.write(`  ${postgresNote}\n`);
      } else {
        postgres = pgColumns;
        postgresNote = pgColumns.describe;
        targets.push(...pgColumns.columns);
      }
    }
    targets.push(single(await startTarget(BARE, ['--import', 'tsx', 'scripts/bench/bare.ts'], barePort, { PORT: String(barePort) }, '/healthz'), true));
    if (!options['no-prism']) {
      targets.push(
        single(
          await startTarget(
            PRISM,
            [prismCli, 'mock', 'generated/2026-09-21/openapi.json', '-h', '127.0.0.1', '-p', String(prismPort), '-v', 'warn'],
            prismPort,
            {},
            '/.well-known/jwks.json',
          ),
          true,
        ),
      );
    }

    // Every target starts from the same row, so GET reads and PATCH replaces something real.
    for (const target of targets) {
      const path = target.path(rowPath);
      if (path === null) continue;
      const seeded = await fetch(`${target.urls[0]}${path}`, {
        method: 'PUT',
        headers: { Authorization: target.auth, 'Content-Type': 'application/json' },
        body: BENCH_ROW,
      });
      if (seeded.status !== 204) throw new Error(`${target.name}: seeding the row answered ${seeded.status}: ${await seeded.text()}`);
    }

    const names = targets.map((t) => t.name);
    // Requests/s ratios: the full stack against each baseline, PostgreSQL against SQLite, and what a second
    // instance adds on the same database.
    const ratios: RatioDef[] = [{ label: 'SQLite/bare', of: SQLITE, to: BARE }];
    if (options.metrics) ratios.push({ label: 'metrics on/off', of: SQLITE, to: METRICS_OFF });
    if (options.baseline) ratios.push({ label: 'SQLite/baseline', of: SQLITE, to: BASELINE }, { label: 'baseline/bare', of: BASELINE, to: BARE });
    if (!options['no-prism']) ratios.push({ label: 'SQLite/Prism', of: SQLITE, to: PRISM });
    if (postgres) ratios.push({ label: 'PG 1/SQLite', of: PG_ONE, to: SQLITE }, { label: 'PG 2/PG 1', of: PG_TWO, to: PG_ONE });
    if (postgres && options.pg) ratios.push({ label: 'PG 1/bare', of: PG_ONE, to: BARE }, { label: 'PG 2/bare', of: PG_TWO, to: BARE });
    if (postgres && options.pin) ratios.push({ label: 'PG 2 one core/PG 1', of: PG_TWO_ONE_CORE, to: PG_ONE });

    const run: BenchRun = {
      started: startedAt.toISOString(),
      machine: '',
      options: { durationS: DURATION, warmupS: WARMUP, connections: CONNECTIONS, rounds: ROUNDS },
      targets: names,
      operations: operations.map((o) => o.name),
      cells: {},
      ratios,
      coldStart: coldStarts.length ? coldStarts : null,
      baselineColdStart: baselineColdStarts.length ? baselineColdStarts : null,
      rssMb: {},
      notes: [],
    };
    for (const op of operations) {
      const byConns: Record<string, Record<string, Cell>> = {};
      run.cells[op.name] = byConns;
      for (const conns of CONNECTIONS) {
        const perTarget: Record<string, Cell> = {};
        byConns[String(conns)] = perTarget;
        const cells = await measureInRounds(targets, op, conns, ROUNDS);
        for (const target of targets) {
          const m = cells.get(target);
          if (!m) continue;
          const pid = started.get(target.name)?.pid;
          if (pid !== undefined) m.rssMbAfter = Math.round(rssMb(pid) * 10) / 10;
          perTarget[target.name] = m;
          const database =
            (m.databaseCpuMsPerRequest === undefined ? '' : ` (+ PostgreSQL ${m.databaseCpuMsPerRequest.toFixed(2)} ms)`) +
            (m.reached === undefined ? '' : ` (+ ${m.reached.name} ${m.reached.cpuMsPerRequest.toFixed(2)} ms)`);
          process.stderr.write(
            `  ${op.name} on ${target.name}, ${conns} connections: ${fmtRps(m.rps)} req/s, p50 ${fmtMs(m.p50)}, p99 ${fmtMs(m.p99)}, CPU ${m.cpuMsPerRequest.toFixed(2)} ms/request${database}, RSS after ${m.rssMbAfter ?? 'n/a'} MB${m.bad ? ` [${m.bad}]` : ''}\n`,
          );
        }
      }
    }
    // --metrics: on a shared machine one cell each is at the neighbours' mercy, so the two are also measured
    // in alternation, five rounds at the first connection count, and the medians' ratios printed: requests/s
    // and, steadier under load, the service's CPU per request (OPS-10).
    const metricsLines: string[] = [];
    const withMetrics = targets.find((t) => t.name === SQLITE);
    const withoutMetrics = targets.find((t) => t.name === METRICS_OFF);
    if (withMetrics && withoutMetrics) {
      const conns = CONNECTIONS[0] ?? 10;
      const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
      for (const op of operations) {
        const on: Cell[] = [];
        const off: Cell[] = [];
        for (let round = 0; round < 5; round += 1) {
          const a = await measure(withMetrics, op, conns);
          const b = await measure(withoutMetrics, op, conns);
          if (a) on.push(a);
          if (b) off.push(b);
        }
        const rps = median(on.map((c) => c.rps)) / median(off.map((c) => c.rps));
        const cpuOn = median(on.map((c) => c.cpuMsPerRequest));
        const cpuOff = median(off.map((c) => c.cpuMsPerRequest));
        metricsLines.push(
          `${op.name}, ${conns} connections, 5 alternating rounds: metrics on/off requests/s ${rps.toFixed(2)}× ` +
            `(${on.map((c) => fmtRps(c.rps)).join(', ')} on; ${off.map((c) => fmtRps(c.rps)).join(', ')} off); ` +
            `CPU per request ${(cpuOn / cpuOff).toFixed(2)}× (${cpuOn.toFixed(3)} ms on, ${cpuOff.toFixed(3)} ms off, medians)`,
        );
      }
    }
    for (const [name, s] of started) run.rssMb[name] = Math.round(rssMb(s.pid) * 10) / 10;
    const loadAfter = loadavg();
    const disk = probeCommitCost(200, dataDir);

    const cpu = cpus();
    run.machine =
      `${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}), ${Math.round(totalmem() / 2 ** 30)} GB, Node ${process.version}, ` +
      `${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC; load average ${loadBefore[0]!.toFixed(2)} before, ${loadAfter[0]!.toFixed(2)} after; ` +
      `autocannon: ${CONNECTIONS.join(' and ')} connections, ${ROUNDS > 1 ? `${ROUNDS} rounds of ${DURATION} s per cell, the targets in turn,` : `${DURATION} s per cell`} after a ${WARMUP} s warm-up` +
      `${operations.filter((o) => WARMUP > 0 && Math.min(o.warmupS ?? 0, MAX_OP_WARMUP) > WARMUP).map((o) => ` (${o.name}: ${Math.min(o.warmupS ?? 0, MAX_OP_WARMUP)} s)`).join('')}; ` +
      `a SQLite WAL commit on this disk: ${disk.fullMs.toFixed(2)} ms with synchronous=FULL (an fsync each), ${disk.normalMs.toFixed(3)} ms with NORMAL; ` +
      `${postgresNote}`;
    const flagged: string[] = [];
    for (const op of operations) {
      for (const conns of CONNECTIONS) {
        for (const [name, m] of Object.entries(run.cells[op.name]?.[String(conns)] ?? {})) {
          if (m.bad) flagged.push(`${op.name} on ${name}, ${conns} connections: ${m.bad}`);
        }
      }
    }
    run.notes = flagged;
    const cold = coldStarts.length
      ? `Cold start (spawn → first 200 on /healthz; → first validated operation; wall clock, and the server's CPU time), ${coldStarts.length} runs: ` +
        coldStarts.map(describeColdStart).join('; ') +
        `; median ${describeColdStart(medianColdStart(coldStarts))}` +
        (baselineColdStarts.length
          ? `. The baseline checkout, alternating with these: ${baselineColdStarts.map(describeColdStart).join('; ')}; median ${describeColdStart(medianColdStart(baselineColdStarts))}`
          : '')
      : 'Cold start not measured (--cold-starts 0)';
    const rss = `RSS after the load: ${Object.entries(run.rssMb)
      .map(([n, mb]) => `${n} ${mb} MB`)
      .join(', ')}`;
    const last = CONNECTIONS[CONNECTIONS.length - 1] ?? 10;
    const p99s = `p99 of the full stack against bare Express at ${last} connections: ${operations
      .map((o) => {
        const r = p99Ratio(run, o.name, last, SQLITE, BARE);
        return `${o.name} ${r === null ? 'n/a' : `${r.toFixed(1)}×`}`;
      })
      .join(', ')}`;
    const cpuColumns = postgres && options.pg ? postgres.columns.map((c) => c.name) : [];
    const metricsCost = metricsLines.length ? `What the metrics cost (OPS-10): ${metricsLines.join('\n')}\n\n` : '';
    process.stdout.write(`\n${markdownTables(run, SQLITE, BARE, cpuColumns)}\n${metricsCost}${cold}\n\n${rss}\n\n${p99s}\n\n${run.machine}\n`);
    if (postgres && options.pg) {
      const conns = CONNECTIONS[0] ?? 10;
      const names = { sqlite: SQLITE, bare: BARE, pgOne: PG_ONE, pgTwo: PG_TWO };
      process.stdout.write(`\nIssue 30's goals, this run, ${conns} connections:\n${goalLines(run, names, conns, coldStarts, run.rssMb, options.pin, cpus().length).join('\n')}\n`);
    }
    const written = writeRun(run, resolve(repoRoot, options.out));
    process.stdout.write(`\nWritten: ${written.json}, ${written.svg}\n`);
    if (flagged.length) {
      process.stdout.write(`\nNot every answer was a served request; those cells count only the served ones:\n  ${flagged.join('\n  ')}\n`);
    }
    if (options.floors) {
      let below = checkFloors(run, options.floors);
      // A ratio below its floor is measured again, both targets back to back, up to twice: only a ratio
      // that stays below every time fails, so a burst of load from a neighbour does not.
      for (let retry = 0; retry < 2 && below.length > 0; retry += 1) {
        process.stderr.write(`  below a floor; measuring again (${retry + 1} of 2): ${below.join('; ')}\n`);
        const conns = CONNECTIONS[0] ?? 10;
        for (const op of operations) {
          if (!below.some((b) => b.startsWith(`${op.name},`))) continue;
          const cells = run.cells[op.name]?.[String(conns)] ?? {};
          const again: Record<string, Cell> = {};
          for (const target of targets) {
            const m = await measure(target, op, conns);
            if (m) again[target.name] = m;
          }
          const now = again[SQLITE] && again[BARE] && again[BARE].rps > 0 ? again[SQLITE].rps / again[BARE].rps : 0;
          const before = cells[SQLITE] && cells[BARE] && cells[BARE].rps > 0 ? cells[SQLITE].rps / cells[BARE].rps : 0;
          if (now > before) Object.assign(cells, again);
        }
        below = checkFloors(run, options.floors);
      }
      if (below.length) {
        process.stdout.write(`\nperformance check FAILED:\n  ${below.join('\n  ')}\n`);
        process.exitCode = 1;
      } else {
        process.stdout.write(`\nperformance check passed (floors in ${options.floors})\n`);
      }
    } else if (flagged.some((f) => f.startsWith(SQLITE) || f.includes(`on ${SQLITE},`))) {
      process.exitCode = 1;
    }
  } finally {
    await stopAll();
    await postgres?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void stopAll().finally(() => {
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(130);
    });
  });
}

main().catch(async (err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}${err instanceof Error && err.cause ? `\ncause: ${String((err.cause as Error).stack ?? err.cause)}` : ""}\n`);
  await stopAll();
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(1);
});
