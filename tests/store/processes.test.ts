import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { STORE_TARGETS, openAt, seedCourse } from './helpers.js';

const WRITER = fileURLToPath(new URL('./fixtures/writer.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Child {
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  kill: (signal: NodeJS.Signals) => void;
  go: () => void;
  waitForLines: (n: number) => Promise<void>;
}

function startWriter(args: Record<string, unknown>): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, JSON.stringify(args)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let buffer = '';
  let stderr = '';
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffer += chunk;
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    lines.push(...parts);
    for (const w of waiters.splice(0)) {
      if (lines.length >= w.n) w.resolve();
      else waiters.push(w);
    }
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stderr })),
  );
  return {
    lines,
    exited,
    kill: (signal) => child.kill(signal),
    go: () => child.stdin.end('go\n'),
    waitForLines: (n) =>
      new Promise<void>((resolve, reject) => {
        if (lines.length >= n) return resolve();
        waiters.push({ n, resolve });
        void exited.then(({ code, stderr: err }) => reject(new Error(`writer exited (${code}) early: ${err}`)));
      }),
  };
}

describe.each(STORE_TARGETS)('durability and several processes ($name)', (target) => {
  it('keeps every acknowledged write when the writing process is killed with SIGKILL mid-burst', async () => {
    const { store, location, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      await store.close();

      const child = startWriter({
        store: location,
        mode: 'crash',
        appId: c.appId,
        contextId: c.contextId,
        locationId: c.locationId,
        memberId: c.studentMemberId,
        lanes: 4,
      });
      await child.waitForLines(150);
      child.kill('SIGKILL');
      const exit = await child.exited;
      expect(exit.signal).toBe('SIGKILL');

      const acked = child.lines.filter((l) => l !== 'ready');
      const rows = acked.filter((l) => l.startsWith('row ')).map((l) => l.slice(4));
      const attempts = acked.filter((l) => l.startsWith('att ')).map((l) => l.slice(4));
      expect(rows.length + attempts.length).toBeGreaterThanOrEqual(149);

      const reopened = await openAt(location);
      try {
        if (target.name === 'sqlite') {
          expect(await reopened.driver.get('PRAGMA integrity_check')).toEqual({ integrity_check: 'ok' });
        }
        for (const locationId of rows) {
          const body = await reopened.rows.getRow({ appId: c.appId, contextId: c.contextId, kind: 'location', locationId });
          const [lane, i] = locationId.replace('lane', '').split('-').map(Number);
          expect(JSON.parse(body)).toMatchObject({ lane, i });
        }
        for (const id of attempts) expect(await reopened.attempts.get(id)).not.toBeNull();
        // And the file is writable again after the crash.
        await reopened.rows.putRow({ appId: c.appId, contextId: c.contextId, kind: 'context' }, { after: 'crash' }, { maxBytes: 1024 });
      } finally {
        await reopened.close();
      }
    } finally {
      await done();
    }
  });

  it('gives strictly later attempt timestamps across two processes writing at once', async () => {
    const { store, location, done } = await target.fresh();
    try {
      const c = await seedCourse(store);
      const args = {
        store: location,
        mode: 'attempts',
        appId: c.appId,
        contextId: c.contextId,
        locationId: c.locationId,
        memberId: c.studentMemberId,
        // Interleaving shows within the first hundred writes of each (CI-30).
        count: 100,
      };
      const children = [startWriter(args), startWriter(args)];
      await Promise.all(children.map((ch) => ch.waitForLines(1)));
      for (const ch of children) ch.go();
      const exits = await Promise.all(children.map((ch) => ch.exited));
      for (const exit of exits) expect(exit).toMatchObject({ code: 0, stderr: '' });
      for (const ch of children) expect(ch.lines.shift()).toBe('ready');
      const stamps = children.flatMap((ch) => ch.lines.map((l) => Number(l.split(' ')[2])));
      expect(stamps).toHaveLength(200);
      expect(new Set(stamps).size).toBe(200);
      const stored = await store.driver.all<{ submitted_us: number }>(
        'SELECT submitted_us FROM grade_attempts WHERE member_id = ? AND location_id = ? ORDER BY submitted_us',
        [c.studentMemberId, c.locationId],
      );
      expect(stored).toHaveLength(200);
      // The two processes really did interleave: ownership of consecutive timestamps changes hands.
      const owner = new Map<number, number>();
      children.forEach((ch, n) => ch.lines.forEach((l) => owner.set(Number(l.split(' ')[2]), n)));
      const switches = stored.filter((r, i) => i > 0 && owner.get(r.submitted_us) !== owner.get(stored[i - 1]!.submitted_us));
      expect(switches.length).toBeGreaterThan(10);
      // Each process saw its own attempts strictly later, one after another.
      for (const ch of children) {
        const own = ch.lines.map((l) => Number(l.split(' ')[2]));
        for (let i = 1; i < own.length; i += 1) expect(own[i]!).toBeGreaterThan(own[i - 1]!);
      }
    } finally {
      await done();
    }
  });
});
