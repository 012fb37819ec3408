/**
 * `node --import tsx scripts/bench/lms-scores.ts [--checkout <dir>] [--rounds 3] [--duration 4] [--warmup 2]
 *  [--connections 10] [--rate <scores/s>] [--members 100] [--profile <dir>] [--memory]`: the reference
 * LMS's CPU per score on its own (issue 14; decisions PERF-110 to PERF-116).
 *
 * Starts `lms/main.ts` of this checkout, and with `--checkout` of another (e.g. /work/main), each in a
 * process of its own on its own SQLite file (`--memory`: in memory), registers a test tool through
 * Dynamic Registration, makes a course with one graded link and `--members` enrolled students, takes one
 * access token, and POSTs scores to the line item's scores URL as the service publishes them (each with a
 * later timestamp), in alternating rounds. `--rate` holds the load to that many scores per second (the
 * service's pace, where fewer writes share an fsync); without it autocannon sends as fast as the LMS
 * answers. CPU per score is from /proc of each LMS process, so nothing of the load generator is in it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { cpuMs } from './cold-start.js';
import { Children, freePort, loadOptions } from './scaffold.js';
import { untilLmsReady } from './school-lms.js';
import { LmsWorld, registerThroughDynamicRegistration, SCOPES, TestTool } from '../../tests/lms/tool.js';
import type { RunningLms } from '../../lms/app.js';

const { values: options } = parseArgs({
  options: {
    ...loadOptions({ duration: '4', warmup: '2', connections: '10', rounds: '3' }),
    members: { type: 'string', default: '100' },
    memory: { type: 'boolean', default: false },
    rate: { type: 'string' },
  },
});
const MEMBERS = Number(options.members);
const CONNECTIONS = Number(options.connections);
const DURATION = Number(options.duration);
const WARMUP = Number(options.warmup);
const ROUNDS = Number(options.rounds);

const children = new Children();
const dataDir = mkdtempSync(join(tmpdir(), 'tis-lms-bench-'));
let stamp = Date.now() * 1000;
function nextTimestamp(): string {
  stamp += 1;
  const ms = Math.floor(stamp / 1000);
  return `${new Date(ms).toISOString().slice(0, 23)}${String(stamp % 1000).padStart(3, '0')}Z`;
}
try {
  const tool = await TestTool.start();
  const targets: Array<{ name: string; pid: number; url: string; auth: string; scoresUrl: string; subs: string[] }> = [];
  for (const [name, cwd] of [['this checkout', process.cwd()], ...(options.checkout ? [['--checkout', resolve(options.checkout)]] : [])] as Array<[string, string]>) {
    const port = await freePort();
    const controlToken = `lmsc_${randomBytes(24).toString('base64url')}`;
    const child = spawn(process.execPath, [...(options.profile && name === 'this checkout' ? ['--cpu-prof', '--cpu-prof-dir', options.profile] : []), '--import', 'tsx', 'lms/main.ts'], {
      cwd,
      env: { ...process.env, LMS_PORT: String(port), LMS_HOST: '127.0.0.1', LMS_DB_FILE: options.memory ? ':memory:' : join(dataDir, `lms-${targets.length}.sqlite`), LMS_CONTROL_TOKEN: controlToken },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.add(child);
    const url = `http://127.0.0.1:${port}`;
    await untilLmsReady(url);
    const lms = { url, issuer: url, controlToken } as unknown as RunningLms;
    const reg = await registerThroughDynamicRegistration(lms, tool);
    const world = LmsWorld.on(lms, tool, reg);
    const first = await world.course();
    const subs: string[] = [first.sub];
    for (let i = 1; i < MEMBERS; i += 1) {
      const user = await world.controlJson<{ sub: string }>('POST', '/users', { given_name: 'Ada', family_name: `S ${i}`, email: `s${i}@school.example` });
      await world.controlJson('PUT', `/courses/${encodeURIComponent(first.courseId)}/enrolments/${encodeURIComponent(user.sub)}`, { roles: ['student'] }, [204]);
      subs.push(user.sub);
    }
    const bearer = await world.bearer([SCOPES.score, SCOPES.lineItem]);
    targets.push({ name, pid: child.pid ?? 0, url, auth: `Bearer ${bearer}`, scoresUrl: new URL(`${first.lineItemUrl ?? ''}/scores`).pathname, subs });
  }

  const drive = async (target: (typeof targets)[number]) => {
    let turn = 0;
    let failed = 0;
    let firstFailure: string | null = null;
    const run = (duration: number) =>
      autocannon({
        url: target.url,
        connections: CONNECTIONS,
        duration,
        ...(options.rate ? { overallRate: Number(options.rate) } : {}),
        requests: [
          {
            method: 'POST',
            setupRequest: (request) => {
              const sub = target.subs[turn++ % target.subs.length] as string;
              const body = JSON.stringify({ userId: sub, scoreGiven: 8.5, scoreMaximum: 10, comment: 'Good work on question 3.', activityProgress: 'Completed', gradingProgress: 'FullyGraded', timestamp: nextTimestamp() });
              return { ...request, path: target.scoresUrl, headers: { ...request.headers, authorization: target.auth, 'content-type': 'application/vnd.ims.lis.v1.score+json' }, body };
            },
            onResponse: (status, text) => {
              if (status === 204) return;
              failed += 1;
              firstFailure ??= `${status} ${text.slice(0, 300)}`;
            },
          },
        ],
      });
    if (WARMUP > 0) await run(WARMUP);
    failed = 0;
    const before = cpuMs(target.pid);
    const result = await run(DURATION);
    const spent = cpuMs(target.pid) - before;
    const served = result['2xx'] - failed;
    return { rps: served / result.duration, ms: spent / served, p99: result.latency.p99, failed: failed + result.non2xx + result.errors, firstFailure };
  };
  const load = loadavg()[0]?.toFixed(1);
  const rows: string[] = [];
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const target of round % 2 === 1 ? targets : [...targets].reverse()) {
      const m = await drive(target);
      const row = `round ${round}, ${target.name}: ${m.rps.toFixed(0)} scores/s, p99 ${m.p99} ms, LMS CPU per score ${(m.ms * 1000).toFixed(0)} us; load ${loadavg()[0]?.toFixed(1)}${m.failed ? `; ${m.failed} failed: ${m.firstFailure}` : ''}`;
      rows.push(row);
      process.stderr.write(`${row}\n`);
    }
  }
  process.stdout.write(`\nload ${load} before, ${loadavg()[0]?.toFixed(1)} after; ${CONNECTIONS} connections, ${DURATION} s per cell\n${rows.join('\n')}\n`);
  await tool.stop();
} finally {
  await children.stopAll();
  rmSync(dataDir, { recursive: true, force: true });
}
