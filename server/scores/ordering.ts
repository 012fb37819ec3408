/**
 * Scores of one member at one location reach the LMS in `submitted` order (issue 13, decision LTI-16). An
 * LMS must not apply a score older than the last it applied and may answer 409, so two publications of the
 * same pair must not overtake each other between reserving their instant and the LMS's answer. Within a
 * process a keyed FIFO queue orders them; across PostgreSQL instances a transaction-scoped advisory lock on
 * the pair does (held on one pooled connection for the publication's length). SQLite takes no lock: one
 * process owns the file, and a write transaction there would stop every other writer.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { lockName, lockStatement } from '../store/pg-locks.js';
import type { BatchResult, BatchStatement, PipelinedStore, Store } from '../store/index.js';

/**
 * On PostgreSQL, the pair's publication as ONE transaction on the connection that holds the pair's lock
 * (PERF-171): `open` takes the lock in the same exchange as BEGIN and the publication's reads, `commit`
 * sends the attempt's writes with COMMIT, which also releases the lock. Null on SQLite.
 */
export interface PairTransaction extends PipelinedStore {
  /** BEGIN, the pair's lock, then `statements`, in one exchange; answers the statements' results. */
  open(statements: readonly BatchStatement[]): Promise<BatchResult[]>;
}

type Orderable = Pick<Store, 'driver' | 'pipelined'>;

/**
 * Pairs holding their PostgreSQL lock at once, per process: each holds one pooled connection while its
 * publication needs others, so they must not take the whole pool (default 10 connections).
 */
export const MAX_LOCKED_PUBLICATIONS = 4;
/**
 * With the pair's transaction pipelined on the lock's own connection (PERF-171), a warm publication needs no
 * second connection while it holds one, so all but these of the pool may hold a pair (PERF-174): the rest
 * serve the guard's and the credential's reads and a publication's colder reads (a token's signing key).
 */
export const CONNECTIONS_LEFT_TO_OTHERS = 2;

class Semaphore {
  #free: number;
  readonly #waiting: Array<() => void> = [];
  constructor(size: number) {
    this.#free = size;
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free -= 1;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free += 1;
    }
  }
}

const lockHolders = new WeakMap<object, Semaphore>();

const queues = new WeakMap<object, Map<string, Promise<void>>>();

function queueOf(store: object): Map<string, Promise<void>> {
  let queue = queues.get(store);
  if (!queue) {
    queue = new Map();
    queues.set(store, queue);
  }
  return queue;
}

/**
 * Runs `fn` (read the instant, publish, write the attempt) after every earlier call for the same pair has
 * finished. On PostgreSQL `fn` gets the pair's transaction and must `open` it before anything else: the lock
 * is taken there.
 */
export function inSubmittedOrder<T>(
  store: Orderable,
  memberId: string,
  locationId: string,
  fn: (pair: PairTransaction | null) => Promise<T>,
): Promise<T> {
  const key = `score-order:${memberId}:${locationId}`;
  const queue = queueOf(store);
  const previous = queue.get(key);
  const start = (): Promise<T> => (store.driver.dialect === 'postgres' ? underLock(store, key, fn) : fn(null));
  // A pair with nothing queued (the usual case) starts at once, without a turn through a resolved promise.
  const run = previous === undefined ? start() : previous.then(start);
  // Settled either way, the pair's queue ends here unless a later call has queued behind this one.
  const release = (): void => {
    if (queue.get(key) === settled) queue.delete(key);
  };
  const settled: Promise<void> = run.then(release, release);
  queue.set(key, settled);
  return run;
}

function underLock<T>(store: Orderable, key: string, fn: (pair: PairTransaction | null) => Promise<T>): Promise<T> {
  let holders = lockHolders.get(store);
  if (!holders) {
    const pool = store.pipelined ? store.driver.poolStats?.().max : undefined;
    holders = new Semaphore(pool === undefined ? MAX_LOCKED_PUBLICATIONS : Math.max(1, pool - CONNECTIONS_LEFT_TO_OTHERS));
    lockHolders.set(store, holders);
  }
  const { pipelined } = store;
  if (pipelined) {
    const lock = lockStatement(key);
    return holders.run(() =>
      pipelined((tx) =>
        fn({
          ...tx,
          open: async (statements) => (await tx.open([lock, ...statements])).slice(1),
        }),
      ),
    );
  }
  // The publication runs outside the lock's transaction (its statements are its own, on other
  // connections): the transaction only holds the advisory lock, no row the publication could need.
  const outside = AsyncLocalStorage.snapshot();
  return holders.run(() =>
    store.driver.transaction(async (tx) => {
      await lockName(tx, key);
      return outside(() => fn(null));
    }),
  );
}

