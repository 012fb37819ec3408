/**
 * `npm run bench`: what the full stack costs per request, against two baselines, in one run.
 *
 *   full stack  the real service (`server/main.ts`, as `npm start` runs it) with NODE_ENV=production:
 *               request validation, credential resolution, permission checks, SQLite (WAL,
 *               synchronous=FULL), access logs (to /dev/null); response validation OFF, as production runs.
 *   PostgreSQL  the same service on PostgreSQL with the shared blob store, as one instance and as two
 *               instances on one database with the load spread over both (scripts/bench/postgres.ts).
 *   bare        Express 5 with the same routes and nothing else (scripts/bench/bare.ts).
 *   Prism       `prism mock` of generated/2026-09-21/openapi.json (validates requests, serves examples).
 *
 * Each runs in its own process; autocannon drives them from this one. For storage GET, PUT, PATCH (one
 * key) of a member row and a score submission, each target gets a warm-up and then a measured run. The
 * output is a Markdown table (requests/s, p50 and p99 latency, ratios) for README.md's Performance section.
 *
 * Options: --duration <s> (default 6), --warmup <s> (2), --connections <n> (10),
 *          --with-validation (adds the full stack with RESPONSE_VALIDATION=true as another target),
 *          --postgres <url> (the database of the PostgreSQL columns; default BENCH_DATABASE_URL,
 *          TIS_TEST_DATABASE_URL or the test database), --no-postgres (leaves those columns out),
 *          --profile <dir> (writes a V8 CPU profile of the SQLite full-stack process there, for Chrome DevTools),
 *          --files [--uploads <n>] (instead: the cost of one upload per blob store, scripts/bench/files.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { buildServices } from '../server/app.js';
import { configFrom } from '../server/config.js';
import { probeCommitCost } from './bench/disk-probe.js';
import { runFilesBench } from './bench/files.js';
import { DEFAULT_BENCH_DATABASE_URL, type PostgresColumns, startPostgresColumns } from './bench/postgres.js';
// The test fixtures go through the real launch service: the bench's token is one a tool would get.
import { createTool, launch, placeLocation } from '../tests/server/harness.js';

const { values: options } = parseArgs({
  options: {
    duration: { type: 'string', default: '6' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '10' },
    'with-validation': { type: 'boolean', default: false },
    postgres: { type: 'string', default: DEFAULT_BENCH_DATABASE_URL },
    'no-postgres': { type: 'boolean', default: false },
    profile: { type: 'string' },
    // The files section (scripts/bench/files.ts): uploads through the embedded store and an object store.
    files: { type: 'boolean', default: false },
    uploads: { type: 'string', default: '3' },
  },
});
const DURATION = Number(options.duration);
const WARMUP = Number(options.warmup);
const CONNECTIONS = Number(options.connections);

const repoRoot = new URL('..', import.meta.url).pathname;
const children: ChildProcess[] = [];
const dataDir = mkdtempSync(join(tmpdir(), 'tis-bench-'));

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', resolve);
  });
  const address = probe.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

interface Started {
  name: string;
  url: string;
}

/** A column of the table: where the load goes, and the fixture that target holds. */
interface Target {
  name: string;
  /** Several URLs when the target is several instances; autocannon spreads connections over them. */
  urls: string[];
  /** The SQLite fixture's path rewritten onto this target's own fixture (PostgreSQL has other IDs). */
  path(path: string): string;
  auth: string;
}

/** Spawns a server process and waits until `probePath` answers at all. */
async function startTarget(name: string, args: string[], port: number, env: NodeJS.ProcessEnv, probePath: string): Promise<Started> {
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    // stdout to /dev/null: the service's access log costs what it costs in production, without a reader.
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited early (${child.exitCode}):\n${stderr}`);
    try {
      await fetch(`${url}${probePath}`);
      return { name, url };
    } catch {
      if (Date.now() > deadline) throw new Error(`${name} did not start within 60 s:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

async function stopAll(): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      process.kill(child.pid, 'SIGTERM');
      const timer = setTimeout(() => child.pid !== undefined && child.exitCode === null && process.kill(child.pid, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

interface Operation {
  name: string;
  method: 'GET' | 'PUT' | 'PATCH' | 'POST';
  path: string;
  body?: string;
}

interface Measure {
  rps: number;
  p50: number;
  p99: number;
  bad: string | null;
}

async function measure(target: Target, op: Operation): Promise<Measure> {
  const path = target.path(op.path);
  const headers: Record<string, string> =
    op.body === undefined ? { Authorization: target.auth } : { Authorization: target.auth, 'Content-Type': 'application/json' };
  const run = (duration: number) =>
    autocannon({
      url: target.urls.length === 1 ? `${target.urls[0]}${path}` : target.urls.map((u) => `${u}${path}`),
      method: op.method,
      headers,
      ...(op.body === undefined ? {} : { body: op.body }),
      connections: CONNECTIONS,
      duration,
    });
  if (WARMUP > 0) await run(WARMUP);
  const result = await run(DURATION);
  const problems: string[] = [];
  if (result.non2xx > 0) problems.push(`${result.non2xx} non-2xx (${JSON.stringify(result.statusCodeStats)})`);
  if (result.errors > 0) problems.push(`${result.errors} errors`);
  return {
    rps: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    bad: problems.length ? problems.join(', ') : null,
  };
}

const fmtRps = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
// autocannon's latencies are whole milliseconds.
const fmtMs = (n: number) => `${Math.round(n * 10) / 10} ms`;
const ratio = (a: number | undefined, b: number | undefined) =>
  a !== undefined && b !== undefined && b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a';

const SQLITE = 'full stack, SQLite';
const PG_ONE = 'PostgreSQL, 1 instance';
const PG_TWO = 'PostgreSQL, 2 instances';
const BARE = 'bare Express';
const PRISM = 'Prism mock';

async function main(): Promise<void> {
  if (options.files) {
    process.stdout.write(`\n${await runFilesBench({ uploads: Number(options.uploads) })}\n`);
    return;
  }
  const loadBefore = loadavg();
  const started = new Date();
  let postgres: PostgresColumns | null = null;
  let postgresNote: string;
  try {
    const [fullPort, validatingPort, barePort, prismPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const publicUrl = `http://127.0.0.1:${fullPort}`;

    // A tool, a graded placement and a student's launch, written to the data dir the service then opens.
    const services = await buildServices(configFrom({ dataDir, publicUrl, logLevel: 'silent' }));
    const tool = await createTool({ services });
    const quiz = await placeLocation({ services }, { app: tool.app.id, type: 'assessment', points: 10 });
    const student = await launch({ services }, { placed: quiz, groups: ['student'] });
    await services.store.close();

    const serviceEnv = (port: number, validation: boolean): NodeJS.ProcessEnv => ({
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      // The Sandbox LMS that scores are published to is reached through the public URL.
      PUBLIC_URL: publicUrl,
      RESPONSE_VALIDATION: String(validation),
      LOG_LEVEL: 'info',
    });
    const prismCli = createRequire(import.meta.url).resolve('@stoplight/prism-cli/dist/index.js');
    const rowPath = new URL(student.claims.storage.member).pathname;
    const scorePath = new URL(student.claims.grade.submit ?? '').pathname;
    const single = (s: Started): Target => ({ name: s.name, urls: [s.url], path: (p) => p, auth: student.auth });
    const targets: Target[] = [];
    const profiling = options.profile ? ['--cpu-prof', '--cpu-prof-dir', options.profile] : [];
    targets.push(
      single(await startTarget(SQLITE, [...profiling, '--import', 'tsx', 'server/main.ts'], fullPort, serviceEnv(fullPort, false), '/healthz')),
    );
    if (options['with-validation']) {
      // Same data dir (WAL allows two processes); each process publishes scores to its own Sandbox LMS.
      targets.push(
        single(
          await startTarget(`${SQLITE}, response validation ON`, ['--import', 'tsx', 'server/main.ts'], validatingPort, serviceEnv(validatingPort, true), '/healthz'),
        ),
      );
    }
    if (options['no-postgres']) {
      postgresNote = 'PostgreSQL columns left out (--no-postgres)';
    } else {
      const pgColumns = await startPostgresColumns({
        databaseUrl: options.postgres,
        sqlite: { rowPath, scorePath },
        freePort,
        startService: (name, port, env) => startTarget(name, ['--import', 'tsx', 'server/main.ts'], port, env, '/healthz'),
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
    targets.push(single(await startTarget(BARE, ['--import', 'tsx', 'scripts/bench/bare.ts'], barePort, { PORT: String(barePort) }, '/healthz')));
    targets.push(
      single(
        await startTarget(
          PRISM,
          [prismCli, 'mock', 'generated/2026-09-21/openapi.json', '-h', '127.0.0.1', '-p', String(prismPort), '-v', 'warn'],
          prismPort,
          {},
          '/.well-known/jwks.json',
        ),
      ),
    );

    const row = JSON.stringify({
      progress: 3,
      answers: { q1: 'b', q2: 'd', q3: ['a', 'c'] },
      notes: 'Second attempt at question 3 after reviewing the lecture.',
      updated: '2026-11-03T10:15:00Z',
    });
    const operations: Operation[] = [
      { name: 'storage GET (member row)', method: 'GET', path: rowPath },
      { name: 'storage PUT (member row, 160 B)', method: 'PUT', path: rowPath, body: row },
      { name: 'storage PATCH (one key)', method: 'PATCH', path: rowPath, body: JSON.stringify({ patch: [{ op: 'replace', path: '/progress', value: 4 }] }) },
      { name: 'score submission', method: 'POST', path: scorePath, body: JSON.stringify({ score: 0.85, comment: 'Good work on question 3.' }) },
    ];

    // Every target starts from the same row, so GET reads and PATCH replaces something real.
    for (const target of targets) {
      const seeded = await fetch(`${target.urls[0]}${target.path(rowPath)}`, {
        method: 'PUT',
        headers: { Authorization: target.auth, 'Content-Type': 'application/json' },
        body: row,
      });
      if (seeded.status !== 204) throw new Error(`${target.name}: seeding the row answered ${seeded.status}: ${await seeded.text()}`);
    }

    const results = new Map<string, Map<string, Measure>>();
    for (const op of operations) {
      const perTarget = new Map<string, Measure>();
      results.set(op.name, perTarget);
      for (const target of targets) {
        process.stderr.write(`  ${op.name} on ${target.name} ...`);
        const m = await measure(target, op);
        perTarget.set(target.name, m);
        process.stderr.write(` ${fmtRps(m.rps)} req/s, p50 ${fmtMs(m.p50)}, p99 ${fmtMs(m.p99)}${m.bad ? ` [${m.bad}]` : ''}\n`);
      }
    }
    const loadAfter = loadavg();
    const disk = probeCommitCost(200, dataDir);

    const names = targets.map((t) => t.name);
    // Requests/s ratios: the full stack against each baseline, PostgreSQL against SQLite, and what a second
    // instance adds on the same database.
    const ratios: Array<[string, string, string]> = [
      ['SQLite/bare', SQLITE, BARE],
      ['SQLite/Prism', SQLITE, PRISM],
    ];
    if (postgres) ratios.push(['PG 1/SQLite', PG_ONE, SQLITE], ['PG 2/PG 1', PG_TWO, PG_ONE]);
    const header = ['Operation', ...names.flatMap((n) => [`${n} req/s`, 'p50', 'p99']), ...ratios.map(([label]) => label)];
    const lines = [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`];
    const flagged: string[] = [];
    for (const op of operations) {
      const perTarget = results.get(op.name)!;
      const cells = names.flatMap((n) => {
        const m = perTarget.get(n)!;
        if (m.bad) flagged.push(`${op.name} on ${n}: ${m.bad}`);
        return [`${fmtRps(m.rps)}${m.bad ? ' (!)' : ''}`, fmtMs(m.p50), fmtMs(m.p99)];
      });
      const rates = ratios.map(([, a, b]) => ratio(perTarget.get(a)?.rps, perTarget.get(b)?.rps));
      lines.push(`| ${[op.name, ...cells, ...rates].join(' | ')} |`);
    }
    const cpu = cpus();
    const machine =
      `${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}), ${Math.round(totalmem() / 2 ** 30)} GB, Node ${process.version}, ` +
      `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC; load average ${loadBefore[0]!.toFixed(2)} before, ${loadAfter[0]!.toFixed(2)} after; ` +
      `autocannon: ${CONNECTIONS} connections, ${DURATION} s per cell after a ${WARMUP} s warm-up; ` +
      `a SQLite WAL commit on this disk: ${disk.fullMs.toFixed(2)} ms with synchronous=FULL, ${disk.normalMs.toFixed(3)} ms with NORMAL; ` +
      `${postgresNote}`;
    process.stdout.write(`\n${lines.join('\n')}\n\n${machine}\n`);
    if (flagged.length) {
      process.stdout.write(`\nNot every answer was a 2xx; those cells count only the 2xx:\n  ${flagged.join('\n  ')}\n`);
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
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  await stopAll();
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(1);
});
