/**
 * `node --import tsx scripts/bench/score-split.ts [--members 100] [--connections 10] [--duration 5]
 *  [--rounds 2] [--profile <dir>] [--checkout <dir>]`: where a score submission's CPU goes, the service's own work and the
 * LMS's, measured separately (issue 14; decision PERF-43).
 *
 *   full path   POST the contract's score URL for many members in turn, each with their own launch's token:
 *               the service (`server/main.ts`, NODE_ENV=production) validates, authorizes, publishes to the
 *               LMS over real HTTP and records the attempt.
 *   LMS alone   the same scores POSTed straight to the LMS's AGS scores endpoints, with the access token and
 *               the exact body the service's publisher sends (recorded from one real publication per
 *               member), timestamps moving forward: what the LMS costs per score, without the service.
 *
 * Both run against the same server process (the Sandbox LMS is served by the service's own process), so
 * "CPU of the full path − CPU of the LMS alone" is the service's own work per score. The rounds alternate,
 * so both see the same neighbours. CPU milliseconds come from /proc (user + system, every thread).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { buildServices } from '../../server/app.js';
import { configFrom } from '../../server/config.js';
import { createDefaultPublisher } from '../../server/scores/index.js';
import { createTool, launch, placeLocation } from '../../tests/server/harness.js';
import { cpuMs } from './cold-start.js';

const { values: options } = parseArgs({
  options: {
    members: { type: 'string', default: '100' },
    connections: { type: 'string', default: '10' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
    profile: { type: 'string' },
    checkout: { type: 'string' },
  },
});
const MEMBERS = Number(options.members);
const CONNECTIONS = Number(options.connections);
const DURATION = Number(options.duration);
const WARMUP = Number(options.warmup);
const ROUNDS = Number(options.rounds);
const COMMENT = 'Good work on question 3.';

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

interface Shot {
  path: string;
  headers: Record<string, string>;
  body: () => string;
}

interface Measured {
  rps: number;
  cpuMsPerScore: number;
  p50: number;
  p99: number;
  failed: number;
}

async function drive(url: string, pid: number, shots: Shot[], isFailure: (status: number, body: string) => boolean): Promise<Measured> {
  let turn = 0;
  let failed = 0;
  const run = (duration: number) =>
    autocannon({
      url,
      connections: CONNECTIONS,
      duration,
      requests: [
        {
          method: 'POST',
          setupRequest: (request) => {
            const shot = shots[turn++ % shots.length] as Shot;
            return { ...request, path: shot.path, headers: { ...request.headers, ...shot.headers }, body: shot.body() };
          },
          onResponse: (status, body) => {
            if (isFailure(status, body)) failed += 1;
          },
        },
      ],
    });
  if (WARMUP > 0) await run(WARMUP);
  failed = 0;
  const before = cpuMs(pid);
  const result = await run(DURATION);
  const spent = cpuMs(pid) - before;
  const served = Math.max(0, result['2xx'] - failed);
  return { rps: served / result.duration, cpuMsPerScore: served ? spent / served : Number.NaN, p50: result.latency.p50, p99: result.latency.p99, failed: failed + result.non2xx + result.errors };
}

/** ISO 8601 with six fractional digits, as the service writes `submitted`. */
function isoUs(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString().replace('Z', `${String(us % 1000).padStart(3, '0')}Z`);
}

const dataDir = mkdtempSync(join(tmpdir(), 'tis-score-split-'));
let child: ChildProcess | null = null;
try {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const services = await buildServices(configFrom({ dataDir, publicUrl, logLevel: 'silent' }));
  const tool = await createTool({ services });
  const placed = await placeLocation({ services }, { app: tool.app.id, type: 'assessment', points: 10 });
  // Two classes: one submits through the service, the other's scores go to the LMS directly, so neither
  // sends a timestamp older than the other's last one for the same person (the LMS would answer 409).
  const students = [];
  const direct = [];
  for (let i = 0; i < MEMBERS; i += 1) students.push(await launch({ services }, { placed, groups: ['student'] }));
  for (let i = 0; i < MEMBERS; i += 1) direct.push(await launch({ services }, { placed, groups: ['student'] }));

  child = spawn(process.execPath, [...(options.profile ? ['--cpu-prof', '--cpu-prof-dir', options.profile] : []), '--import', 'tsx', 'server/main.ts'], {
    env: { ...process.env, NODE_ENV: 'production', PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, PUBLIC_URL: publicUrl, RESPONSE_VALIDATION: 'false', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'inherit'],
    // Another checkout's service (e.g. a worktree of the parent commit) on this fixture, for a before/after.
    ...(options.checkout ? { cwd: resolve(options.checkout) } : {}),
  });
  for (let tries = 0; ; tries += 1) {
    try {
      await fetch(`${publicUrl}/healthz`);
      break;
    } catch {
      if (tries > 300) throw new Error('the service did not start');
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  // What the publisher sends the LMS for each member: one real publication each, recorded on the way.
  const sent: Array<{ url: string; authorization: string; contentType: string; body: Record<string, unknown> }> = [];
  const publisher = createDefaultPublisher({
    signer: services.signer,
    publicUrl,
    fetch: async (input, init) => {
      const headers = init.headers as Record<string, string>;
      if (new URL(input).pathname.endsWith('/scores')) {
        sent.push({ url: input, authorization: headers['authorization'] ?? '', contentType: headers['content-type'] ?? '', body: JSON.parse(String(init.body)) as Record<string, unknown> });
      }
      return fetch(input, init);
    },
  });
  let us = Date.now() * 1000;
  for (const s of direct) {
    const outcome = await publisher.publish({
      app: s.app, organization: s.organization, context: s.context, location: s.location, placement: s.placement, member: s.member, user: s.user,
      score: 0.85, maxScore: null, comment: COMMENT, activityProgress: 'Completed', gradingProgress: 'FullyGraded', timestamp: isoUs((us += 1)),
    });
    if (outcome.status !== 'success') throw new Error(`publishing through the LMS failed: ${outcome.error}`);
  }
  await services.store.close();

  const full: Shot[] = students.map((s) => ({
    path: new URL(s.claims.grade.submit ?? '').pathname,
    headers: { authorization: s.auth, 'content-type': 'application/json' },
    body: () => JSON.stringify({ score: 0.85, comment: COMMENT }),
  }));
  const lmsAlone: Shot[] = sent.map((s) => ({
    path: new URL(s.url).pathname,
    headers: { authorization: s.authorization, 'content-type': s.contentType },
    body: () => JSON.stringify({ ...s.body, timestamp: isoUs((us += 1)) }),
  }));
  const attemptFailed = (status: number, body: string) => status !== 200 || (JSON.parse(body) as { status?: string }).status !== 'success';
  const refused = (status: number) => status < 200 || status > 299;

  const pid = child.pid ?? 0;
  const rows: string[] = [];
  const fmt = (m: Measured) => `${m.rps.toFixed(0)} scores/s, p50 ${m.p50} ms, p99 ${m.p99} ms, CPU ${m.cpuMsPerScore.toFixed(2)} ms/score${m.failed ? `, ${m.failed} failed` : ''}`;
  const load = loadavg()[0]?.toFixed(1);
  for (let round = 1; round <= ROUNDS; round += 1) {
    const lms = await drive(publicUrl, pid, lmsAlone, refused);
    const path = await drive(publicUrl, pid, full, attemptFailed);
    const own = path.cpuMsPerScore - lms.cpuMsPerScore;
    rows.push(
      `round ${round}: full path ${fmt(path)}\n         LMS alone ${fmt(lms)}\n         the service's own work ${own.toFixed(2)} ms CPU/score; the LMS's share ${((100 * lms.cpuMsPerScore) / path.cpuMsPerScore).toFixed(0)}%`,
    );
    process.stderr.write(`${rows[rows.length - 1]}\n`);
  }
  process.stdout.write(
    `\n${MEMBERS} members, ${CONNECTIONS} connections, ${DURATION} s per cell after ${WARMUP} s; load average ${load} before, ${loadavg()[0]?.toFixed(1)} after\n${rows.join('\n')}\n`,
  );
} finally {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child?.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
}
