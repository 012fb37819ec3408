/**
 * The attempts of scores answered in the same turn share one transaction (decision PERF-101), and a
 * write that throws fails alone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { writeWithOthers } from '../../../server/scores/attempt-writes.js';
import type { Repositories, Store } from '../../../server/store/index.js';
import type { Course, FreshDatabase } from '../../store/helpers.js';
import { STORE_TARGETS, seedCourse } from '../../store/helpers.js';

describe.each(STORE_TARGETS)('attempt writes ($name)', (target) => {
  let db: FreshDatabase | null = null;
  afterEach(async () => {
    await db?.done();
    db = null;
  });

  /** The store, counting the transactions asked of it. */
  function counted(store: Store): { store: Pick<Store, 'transaction'>; transactions: () => number } {
    let transactions = 0;
    return {
      store: {
        transaction: (fn) => {
          transactions += 1;
          return store.transaction(fn);
        },
      },
      transactions: () => transactions,
    };
  }

  function attemptOf(course: Course, submittedUs: number) {
    return (tx: Repositories) =>
      tx.attempts.record({
        appId: course.appId,
        contextId: course.contextId,
        locationId: course.locationId,
        memberId: course.studentMemberId,
        score: 0.5,
        maxScore: null,
        sourceType: 'api_key',
        submittedUs,
        outcome: { status: 'success', response: { status: 200, body: '' }, error: '' },
      });
  }

  it('writes the attempts asked for in one turn in one transaction, each answered with its own record', async () => {
    db = await target.fresh();
    const course = await seedCourse(db.store);
    const { store, transactions } = counted(db.store);
    const written = await Promise.all([1, 2, 3].map((us) => writeWithOthers(store, attemptOf(course, 1_000_000 + us))));
    expect(transactions()).toBe(1);
    expect(written.map((a) => a.submittedUs)).toEqual([1_000_001, 1_000_002, 1_000_003]);
    for (const attempt of written) expect(await db.store.attempts.get(attempt.id)).toEqual(attempt);

    // A write asked for in a later turn gets a transaction of its own.
    const later = await writeWithOthers(store, attemptOf(course, 1_000_004));
    expect(transactions()).toBe(2);
    expect(await db.store.attempts.get(later.id)).toEqual(later);
  });

  it('while the store says a WAL fsync is running, gathers the writes of later turns too and commits them once it ends', async () => {
    db = await target.fresh();
    const course = await seedCourse(db.store);
    const { store: plain, transactions } = counted(db.store);
    let running: Promise<void> | null = null;
    let end: () => void = () => undefined;
    // The fsync's promise as the SQLite driver hands it out (PERF-141), held open by the test.
    const store = { ...plain, driver: { syncRunning: () => running } };
    running = new Promise<void>((resolve) => (end = resolve));
    const first = writeWithOthers(store, attemptOf(course, 3_000_001));
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const second = writeWithOthers(store, attemptOf(course, 3_000_002));
    await new Promise((resolve) => setImmediate(resolve));
    expect(transactions()).toBe(0);
    running = null;
    end();
    const written = await Promise.all([first, second]);
    expect(transactions()).toBe(1);
    expect(written.map((a) => a.submittedUs)).toEqual([3_000_001, 3_000_002]);
    for (const attempt of written) expect(await db.store.attempts.get(attempt.id)).toEqual(attempt);

    // No fsync running: a write asked for in a later turn gets a transaction of its own, as before.
    await writeWithOthers(store, attemptOf(course, 3_000_003));
    expect(transactions()).toBe(2);
  });

  it('keeps the others when one write throws, and answers that one its own error', async () => {
    db = await target.fresh();
    const course = await seedCourse(db.store);
    const { store } = counted(db.store);
    const failure = new Error('this write fails');
    const outcomes = await Promise.allSettled([
      writeWithOthers(store, attemptOf(course, 2_000_001)),
      writeWithOthers(store, async (tx) => {
        await attemptOf(course, 2_000_002)(tx);
        throw failure;
      }),
      writeWithOthers(store, attemptOf(course, 2_000_003)),
    ]);
    expect(outcomes[1]).toEqual({ status: 'rejected', reason: failure });
    const kept = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    expect(kept.map((a) => a.submittedUs)).toEqual([2_000_001, 2_000_003]);
    const history = await db.store.attempts.list({ appId: course.appId });
    // The failed write's attempt was rolled back with it, and the others are written once each.
    expect(history.items.map((a) => a.submittedUs).sort()).toEqual([2_000_001, 2_000_003]);
  });
});
