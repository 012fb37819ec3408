/**
 * `node --import tsx scripts/bench/score-split.ts [--members 100] [--connections 10] [--duration 5]
 *  [--warmup 2] [--rounds 2] [--profile <dir>] [--lms-profile <dir>] [--checkout <dir>] [--compiled <dist>]`:
 * where a score submission's CPU goes, the service's own work and the LMS's, each measured in its own process
 * (issue 14; decisions PERF-43, PERF-45, PERF-100).
 *
 * The LMS is the reference LMS in a process of its own, set up as `npm run bench`'s is (`school-lms.ts`:
 * Dynamic Registration with the running service, LMS_AUTO_ACTIVATE=1, a course with one graded link and
 * MEMBERS enrolled and launched students). Then the contract's score URL is POSTed for each member in
 * turn with that member's token; the service takes an AGS access token once and POSTs each score to the
 * line item's scores endpoint.
 *
 * CPU milliseconds come from /proc (user + system, every thread) of each process, so the service's figure
 * is its own work and the LMS's is the LMS's, with nothing to subtract. `--checkout` runs another
 * checkout's service (e.g. a worktree of the parent commit) on the same fixture, for a before/after.
 *
 * `--compiled <dist>` runs what `npm start` runs instead of the TypeScript sources through tsx: the service
 * from `<dist>/server/main.js` (the esbuild bundle of `npm run build`) and the LMS from `<dist>/lms/main.js`
 * (tsc's output), each checkout's service from its own `<dist>` (build it there first); the one LMS is this
 * checkout's.
 *
 * `--bare` adds `npm run bench`'s bare Express (`scripts/bench/bare.ts`, the same score route answered at
 * once, nothing stored or published) as a target driven in the same rounds, and prints each service's p99
 * against its p99 in the same round and connections: issue 14's p99 goal with the LMS in its own process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { buildServices } from '../../server/app.js';
import { configFrom } from '../../server/config.js';
import { cpuMs } from './cold-start.js';
import { Children, connectionCounts, freePort, loadOptions, serviceArgs, serviceStartEnv, untilAnswers } from './scaffold.js';
import { gradedClass, lmsProcess, registerWithLms, serviceEnvForLoopbackLms, untilLmsReady } from './school-lms.js';

const { values: options } = parseArgs({
  options: {
    ...loadOptions({ duration: '5', warmup: '2', connections: '10', rounds: '2' }),
    members: { type: 'string', default: '100' },
    'lms-profile': { type: 'string' },
    bare: { type: 'boolean', default: false },
  },
});
const MEMBERS = Number(options.members);
const CONNECTIONS = connectionCounts(options.connections);
const DURATION = Number(options.duration);
const WARMUP = Number(options.warmup);
const ROUNDS = Number(options.rounds);
const COMMENT = 'Good work on question 3.';
const BARE = 'bare Express';
const COMPILED = options.compiled;

interface Shot {
  path: string;
  auth: string;
}

interface Measured {
  rps: number;
  serviceMs: number;
  lmsMs: number;
  p50: number;
  p99: number;
  failed: number;
  firstFailure: string | null;
}

const children = new Children();
const dataDir = mkdtempSync(join(tmpdir(), 'tis-score-split-'));
try {
  const port = await freePort();
  const lmsPort = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const services = await buildServices(configFrom({ dataDir, publicUrl, logLevel: 'silent' }));

  const lmsSpec = lmsProcess({ port: lmsPort, dataDir, checkout: process.cwd(), compiled: COMPILED });
  const lms = spawn(process.execPath, [...(options['lms-profile'] ? ['--cpu-prof', '--cpu-prof-dir', options['lms-profile']] : []), ...lmsSpec.args], {
    env: { ...process.env, ...lmsSpec.env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(lms);
  // This checkout's service, and with `--checkout` another checkout's (e.g. a worktree of the parent
  // commit) on the same data directory and public URL, driven in alternating rounds: a before/after
  // under the same neighbours. Only one of them is driven at a time.
  const targets: Array<{ name: string; url: string; process: ChildProcess }> = [];
  for (const [name, cwd] of [['this checkout', undefined], ...(options.checkout ? [['--checkout', resolve(options.checkout)]] : [])] as Array<[string, string | undefined]>) {
    const listen = targets.length === 0 ? port : await freePort();
    const child = spawn(process.execPath, [...(options.profile && !cwd ? ['--cpu-prof', '--cpu-prof-dir', options.profile] : []), ...serviceArgs(cwd ?? process.cwd(), COMPILED)], {
      env: {
        ...process.env,
        ...serviceStartEnv(cwd ?? process.cwd(), COMPILED),
        ...serviceEnvForLoopbackLms,
        LMS_AUTO_ACTIVATE: '1',
        PORT: String(listen),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        PUBLIC_URL: publicUrl,
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
      ...(cwd ? { cwd } : {}),
    });
    children.add(child);
    targets.push({ name, url: `http://127.0.0.1:${listen}`, process: child });
    await untilAnswers(`http://127.0.0.1:${listen}/healthz`, `the service (${name})`, { child });
  }
  if (options.bare) {
    const listen = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench/bare.ts'], {
      env: { ...process.env, PORT: String(listen) },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.add(child);
    targets.push({ name: BARE, url: `http://127.0.0.1:${listen}`, process: child });
    await untilAnswers(`http://127.0.0.1:${listen}/healthz`, BARE, { child });
  }
  await untilLmsReady(lmsSpec.url);

  // Dynamic Registration with the running service, then a class of MEMBERS students (school-lms.ts).
  const school = await registerWithLms(lmsSpec, services, false);
  const shots: Shot[] = (await gradedClass(lmsSpec, services, school, MEMBERS)).members;
  await services.store.close();

  const lmsPid = lms.pid ?? 0;
  const drive = async (target: { url: string; process: ChildProcess }, connections: number): Promise<Measured> => {
    const servicePid = target.process.pid ?? 0;
    let turn = 0;
    let failed = 0;
    let firstFailure: string | null = null;
    const body = JSON.stringify({ score: 0.85, comment: COMMENT });
    const run = (duration: number) =>
      autocannon({
        url: target.url,
        connections,
        duration,
        requests: [
          {
            method: 'POST',
            setupRequest: (request) => {
              const shot = shots[turn++ % shots.length] as Shot;
              return { ...request, path: shot.path, headers: { ...request.headers, authorization: shot.auth, 'content-type': 'application/json' }, body };
            },
            onResponse: (status, text) => {
              // An attempt the LMS did not take is answered 200 too: only `success` is a served score.
              if (status === 200 && (JSON.parse(text) as { status?: string }).status === 'success') return;
              failed += 1;
              firstFailure ??= `${status} ${text.slice(0, 300)}`;
            },
          },
        ],
      });
    if (WARMUP > 0) await run(WARMUP);
    failed = 0;
    const before = { service: cpuMs(servicePid), lms: cpuMs(lmsPid) };
    const result = await run(DURATION);
    const spent = { service: cpuMs(servicePid) - before.service, lms: cpuMs(lmsPid) - before.lms };
    const served = Math.max(0, result['2xx'] - failed);
    return {
      rps: served / result.duration,
      serviceMs: served ? spent.service / served : Number.NaN,
      lmsMs: served ? spent.lms / served : Number.NaN,
      p50: result.latency.p50,
      p99: result.latency.p99,
      failed: failed + result.non2xx + result.errors,
      firstFailure,
    };
  };

  const rows: string[] = [];
  const p99Ratios: string[] = [];
  const load = loadavg()[0]?.toFixed(1);
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const connections of CONNECTIONS) {
      const p99s = new Map<string, number>();
      for (const target of targets) {
        const m = await drive(target, connections);
        p99s.set(target.name, m.p99);
        rows.push(
          `round ${round}, ${target.name}, ${connections} connections: ${m.rps.toFixed(0)} scores/s, p50 ${m.p50} ms, p99 ${m.p99} ms; ` +
            `CPU per score: service ${m.serviceMs.toFixed(2)} ms, LMS ${m.lmsMs.toFixed(2)} ms (LMS share ${((100 * m.lmsMs) / (m.serviceMs + m.lmsMs)).toFixed(0)}%); ` +
            `load ${loadavg()[0]?.toFixed(1)}${m.failed ? `; ${m.failed} failed, first: ${m.firstFailure ?? ''}` : ''}`,
        );
        process.stderr.write(`${rows[rows.length - 1]}\n`);
      }
      const bare = p99s.get(BARE);
      if (bare === undefined) continue;
      for (const [name, p99] of p99s) {
        if (name !== BARE) p99Ratios.push(`round ${round}, ${name}, ${connections} connections: p99 ${p99} ms against bare Express's ${bare} ms, ${(p99 / bare).toFixed(2)}x`);
      }
    }
  }
  process.stdout.write(
    `\n${MEMBERS} members, ${DURATION} s per cell after ${WARMUP} s; reference LMS in its own process; ${COMPILED === undefined ? 'sources through tsx' : `the build (${COMPILED})`}; load average ${load} before, ${loadavg()[0]?.toFixed(1)} after\n${rows.join('\n')}\n${p99Ratios.length ? `\np99 of each service against bare Express's in the same round:\n${p99Ratios.join('\n')}\n` : ''}`,
  );
} finally {
  await children.stopAll();
  rmSync(dataDir, { recursive: true, force: true });
}
