/**
 * Scores of one member at one location reach the LMS in `submitted` order (issue 13, decision LTI-16). An
 * LMS must not apply a score older than the last it applied and may answer 409, so two publications of the
 * same pair must not overtake each other between reserving their instant and the LMS's answer. Within a
 * process a keyed FIFO queue orders them; across PostgreSQL instances a transaction-scoped advisory lock on
 * the pair does (held on one pooled connection for the publication's length). SQLite takes no lock: one
 * process owns the file, and a write transaction there would stop every other writer.
 */
import { lockName } from '../store/pg-locks.js';
import type { Store } from '../store/index.js';

const queues = new WeakMap<object, Map<string, Promise<void>>>();

function queueOf(store: object): Map<string, Promise<void>> {
  let queue = queues.get(store);
  if (!queue) {
    queue = new Map();
    queues.set(store, queue);
  }
  return queue;
}

/** Runs `fn` (reserve the instant, publish) after every earlier call for the same pair has finished. */
export function inSubmittedOrder<T>(store: Pick<Store, 'driver'>, memberId: string, locationId: string, fn: () => Promise<T>): Promise<T> {
  const key = `score-order:${memberId}:${locationId}`;
  const queue = queueOf(store);
  const previous = queue.get(key) ?? Promise.resolve();
  const run = previous.then(() =>
    store.driver.dialect === 'postgres'
      ? store.driver.transaction(async (tx) => {
          await lockName(tx, key);
          return fn();
        })
      : fn(),
  );
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  queue.set(key, settled);
  void settled.then(() => {
    if (queue.get(key) === settled) queue.delete(key);
  });
  return run;
}
