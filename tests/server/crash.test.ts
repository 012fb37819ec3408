/**
 * Durability under SIGKILL (issue 3, "Persistence"): the real service runs as a child process (`npm start`'s
 * command line) on a temp `DATA_DIR`; a burst of concurrent row PUTs, row PATCHes and score submissions
 * hits it over real HTTP; the child is killed with SIGKILL while requests are in flight; a new child on the
 * same directory must then hold every write that had been acknowledged with a 2xx.
 *
 * What counts as "present" per kind of write:
 * - PATCH adds a key no other request touches, so every acknowledged key must be there with its value
 *   (this also shows concurrent patches of one row do not lose each other).
 * - PUT replaces a whole row, so each member row gets one chain of PUTs sent one after another with an
 *   increasing `seq`: the row must hold the last acknowledged `seq` or the one that was in flight.
 * - A score submission records an attempt: every acknowledged attempt id must exist with its score.
 *
 * It runs on the store the suite runs on (`TIS_TEST_STORE`): on PostgreSQL the children get the test
 * schema of `DATA_DIR` through `serviceStoreEnv`, and the attempts are read back through `openTestStore`.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createTool,
  dropTestStore,
  launch,
  openTestStore,
  placeLocation,
  serviceStoreEnv,
  startServer,
  type TestLaunch,
} from './harness.js';

/** The origin the service names in claims and Sandbox school URLs; the child listens on an ephemeral port. */
const PUBLIC_URL = 'https://tis.crash.test';
/**
 * The kill comes once this many writes were acknowledged AND each kind has its minimum: a score costs
 * several transactions and a publication, so on a loaded disk PUTs and PATCHes would otherwise reach the
 * total before more than a handful of scores did.
 */
const KILL_AFTER_ACKS = 200;
const MIN_PATCHES = 60;
const MIN_SCORES = 15;
/** Stops the burst regardless (and fails the test) when the minimums are not reached by then. */
const BURST_LIMIT_MS = 45_000;
const STUDENTS = 6;
const PATCH_WORKERS = 6;
const SCORE_WORKERS = 8;

interface Child {
  process: ChildProcessWithoutNullStreams;
  url: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

/** Starts the service exactly as `npm start` does, with `PORT=0`; resolves with the URL it prints. */
async function startChild(dataDir: string): Promise<Child> {
  const storeEnv = await serviceStoreEnv(dataDir);
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: process.cwd(),
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      ...storeEnv,
      PUBLIC_URL,
      LOG_LEVEL: 'warn',
      NODE_ENV: 'test',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the service did not start in 30 s: ${stderr}`)), 30_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(stdout);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code ?? signal}) before listening: ${stderr}`));
    });
  });
  // Keep draining stdout: a full pipe would stall the child's writes.
  child.stdout.resume();
  return { process: child, url, exited, stderr: () => stderr };
}

/** A claim URL (on PUBLIC_URL) rewritten onto the child's real listening origin. */
function on(base: string, claimUrl: string): string {
  return `${base}${new URL(claimUrl).pathname}`;
}

const json = (auth: string, method: string, body: unknown): RequestInit => ({
  method,
  headers: { Authorization: auth, 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
});

const dataDir = mkdtempSync(join(tmpdir(), 'tis-crash-'));
const children: Child[] = [];
afterAll(async () => {
  for (const child of children) if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
  await dropTestStore(dataDir);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('crash safety', () => {
  it('every write acknowledged before a SIGKILL is present after restart', async () => {
    // Fixtures through the real launch service on the same store, closed before the child opens it.
    const setup = await startServer({ dataDir, config: { publicUrl: PUBLIC_URL, logLevel: 'warn' } });
    const tool = await createTool(setup);
    const quiz = await placeLocation(setup, { app: tool.app.id, type: 'assessment', points: 10 });
    const instructor = await launch(setup, { placed: quiz, groups: ['instructor'] });
    const students: TestLaunch[] = [];
    for (let i = 0; i < STUDENTS; i += 1) students.push(await launch(setup, { placed: quiz, groups: ['student'] }));
    await setup.stop();

    const first = await startChild(dataDir);
    children.push(first);
    const base = first.url;

    // Ledgers of what the service acknowledged.
    const patched: Array<{ row: 'context' | 'location'; key: string; value: number }> = [];
    const putChains = new Map<string, { acked: number; sent: number; student: TestLaunch; row: 'member' | 'member_location' }>();
    const attempts: Array<{ id: string; score: number; member: string; status: string }> = [];
    let acks = 0;
    let inFlight = 0;
    let killed = false;
    let inFlightAtKill = -1;
    let unexpected: string[] = [];
    let killedAt: Promise<void> | null = null;

    const ack = (): void => {
      acks += 1;
      if (acks >= KILL_AFTER_ACKS && patched.length >= MIN_PATCHES && attempts.length >= MIN_SCORES && !killed) {
        killed = true;
        inFlightAtKill = inFlight;
        first.process.kill('SIGKILL');
        killedAt = first.exited.then(() => undefined);
      }
    };

    /** One request; its body when acknowledged with `expected`, null when refused or the process died under it. */
    const send = async (url: string, init: RequestInit, expected: number): Promise<{ text: string } | null> => {
      if (killed) return null;
      inFlight += 1;
      try {
        const response = await fetch(url, init);
        const text = await response.text();
        if (response.status !== expected) {
          unexpected.push(`${init.method} ${new URL(url).pathname} -> ${response.status} ${text.slice(0, 200)}`);
          return null;
        }
        return { text };
      } catch (err) {
        // After the kill the connection dies with the process: not acknowledged, so nothing is owed.
        if (!killed) unexpected.push(`${init.method} ${new URL(url).pathname} failed: ${String(err)}`);
        return null;
      } finally {
        inFlight -= 1;
      }
    };

    const patchWorker = async (worker: number): Promise<void> => {
      for (let n = 0; !killed; n += 1) {
        const row = n % 2 === 0 ? 'context' : 'location';
        const key = `w${worker}_${n}`;
        const value = worker * 100_000 + n;
        const url = on(base, instructor.claims.storage[row]);
        const answer = await send(url, json(instructor.auth, 'PATCH', { patch: [{ op: 'add', path: `/${key}`, value }] }), 204);
        if (!answer) return;
        patched.push({ row, key, value });
        ack();
      }
    };

    const putWorker = async (student: TestLaunch, row: 'member' | 'member_location'): Promise<void> => {
      const chain = { acked: 0, sent: 0, student, row };
      putChains.set(`${student.member.id}/${row}`, chain);
      for (let seq = 1; !killed; seq += 1) {
        chain.sent = seq;
        const body = { seq, member: student.member.id, answers: Array.from({ length: 20 }, (_, i) => `answer ${seq}.${i}`) };
        const answer = await send(on(base, student.claims.storage[row]), json(student.auth, 'PUT', body), 204);
        if (!answer) return;
        chain.acked = seq;
        ack();
      }
    };

    const scoreWorker = async (worker: number): Promise<void> => {
      for (let n = 0; !killed; n += 1) {
        const student = students[(worker + n) % students.length]!;
        const score = Math.round(((worker * 37 + n * 11) % 100) + 1) / 100;
        // Both credentials: the student's session, and the tool's API key (allowed on /contexts URLs).
        const auth = n % 2 === 0 ? student.auth : `Bearer ${tool.apiKey}`;
        const answer = await send(on(base, student.claims.grade.submit ?? ''), json(auth, 'POST', { score, comment: `burst ${worker}.${n}` }), 200);
        if (!answer) return;
        const attempt = JSON.parse(answer.text) as { id: string; status: string };
        attempts.push({ id: attempt.id, score, member: student.member.id, status: attempt.status });
        ack();
      }
    };

    const started = Date.now();
    const workers: Array<Promise<void>> = [];
    for (let w = 0; w < PATCH_WORKERS; w += 1) workers.push(patchWorker(w));
    for (const student of students) {
      workers.push(putWorker(student, 'member'));
      workers.push(putWorker(student, 'member_location'));
    }
    for (let w = 0; w < SCORE_WORKERS; w += 1) workers.push(scoreWorker(w));
    // A worker that stops on a refusal must not hang the burst: stop everything after BURST_LIMIT_MS regardless.
    const guard = setTimeout(() => {
      if (!killed) {
        killed = true;
        first.process.kill('SIGKILL');
      }
    }, BURST_LIMIT_MS);
    await Promise.all(workers);
    clearTimeout(guard);
    expect(unexpected).toEqual([]);
    expect(
      killedAt,
      `only ${acks} writes (${patched.length} patches, ${attempts.length} scores) acknowledged before the guard fired`,
    ).not.toBeNull();
    await killedAt;
    const death = await first.exited;
    expect(death.signal).toBe('SIGKILL');
    // The kill landed mid-burst: requests were on the wire, not between rounds.
    expect(inFlightAtKill).toBeGreaterThan(0);
    expect(patched.length).toBeGreaterThanOrEqual(MIN_PATCHES);
    expect(attempts.length).toBeGreaterThanOrEqual(MIN_SCORES);
    expect([...putChains.values()].every((c) => c.acked > 0)).toBe(true);
    const burstMs = Date.now() - started;

    // Restart on the same directory and read everything back through the API.
    const second = await startChild(dataDir);
    children.push(second);
    const read = async (auth: string, claimUrl: string): Promise<Record<string, unknown>> => {
      const response = await fetch(on(second.url, claimUrl), { headers: { Authorization: auth } });
      expect(response.status).toBe(200);
      return (await response.json()) as Record<string, unknown>;
    };
    const sharedRows = {
      context: await read(instructor.auth, instructor.claims.storage.context),
      location: await read(instructor.auth, instructor.claims.storage.location),
    };
    const missingPatches = patched.filter((p) => sharedRows[p.row][p.key] !== p.value);
    expect(missingPatches, `${missingPatches.length} of ${patched.length} acknowledged patches lost`).toEqual([]);

    for (const chain of putChains.values()) {
      const row = await read(chain.student.auth, chain.student.claims.storage[chain.row]);
      // The last acknowledged PUT, or the one in flight at the kill (it may have committed unanswered).
      expect(row['seq']).toBeGreaterThanOrEqual(chain.acked);
      expect(row['seq']).toBeLessThanOrEqual(chain.sent);
      expect(row['member']).toBe(chain.student.member.id);
    }

    // The restarted service still takes writes.
    const after = await fetch(on(second.url, students[0]!.claims.storage.member), json(students[0]!.auth, 'PUT', { after: true }));
    expect(after.status).toBe(204);

    second.process.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);

    // Attempts have no read operation in this contract: read them from the store the service wrote.
    const store = await openTestStore(dataDir);
    try {
      const lost: string[] = [];
      for (const attempt of attempts) {
        const record = await store.attempts.get(attempt.id);
        if (!record || record.score !== attempt.score || record.memberId !== attempt.member || record.status !== attempt.status) {
          lost.push(attempt.id);
        }
      }
      expect(lost, `${lost.length} of ${attempts.length} acknowledged attempts lost`).toEqual([]);
    } finally {
      await store.close();
    }
    unexpected = [];
    console.info(
      `crash test: ${acks} acknowledged writes (${patched.length} patches, ${attempts.length} scores, ` +
        `${acks - patched.length - attempts.length} puts) in ${burstMs} ms; SIGKILL with ${inFlightAtKill} requests in flight`,
    );
  }, 150_000);
});
