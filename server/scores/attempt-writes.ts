/**
 * The attempts of scores published at about the same time are written in one transaction (decision
 * PERF-101). Each score's attempt is still written once, with what its publication settled, and answered
 * only after the commit that holds it (and, on SQLite, that commit's fsync); what changes is that the
 * scores whose LMS answers arrived in the same turn of the event loop share one `BEGIN IMMEDIATE`/`COMMIT`
 * (SQLite: one append of the WAL's pages, where each attempt appended the same b-tree pages again;
 * PostgreSQL: one round trip for BEGIN and COMMIT) instead of each paying its own. A store with pipelined
 * transactions (PostgreSQL) writes the attempt with its pair's own COMMIT instead (`publish.ts`, PERF-171).
 *
 * A write that throws must fail alone: the shared transaction is rolled back and each write of it runs
 * again in a transaction of its own, so the others are kept and the one that threw answers its own error.
 * A write runs inside its pair's publication order (`ordering.ts`) as before: the pair's next score waits
 * for this commit, so two writes of one pair are never in one batch.
 */
import type { Repositories, RootDriver, Store } from '../store/index.js';

type Write<T> = (tx: Repositories) => Promise<T>;

interface Pending {
  write: Write<unknown>;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/** The store, and its driver when it can say whether a WAL fsync is running (SQLite). */
type Writable = Pick<Store, 'transaction'> & { readonly driver?: Pick<RootDriver, 'syncRunning'> };

/** The writes gathered for each store's next transaction, until it starts. */
const gathering = new WeakMap<Writable, Pending[]>();

/**
 * Runs `write` in a transaction shared with the other writes asked for in this turn of the event loop,
 * and, while the store's WAL fsync is running, with those asked for until it ends (PERF-141): a commit
 * made during that fsync is answered only after the next one, which starts after it ends, so the writes
 * gathered meanwhile commit together just before it, at no later answer, in one BEGIN/COMMIT.
 */
export function writeWithOthers<T>(store: Writable, write: Write<T>): Promise<T> {
  let batch = gathering.get(store);
  if (!batch) {
    const gathered: Pending[] = [];
    batch = gathered;
    gathering.set(store, gathered);
    const start = (): void => {
      gathering.delete(store);
      void flush(store, gathered);
    };
    // After the answers that arrived in this turn have reached their writes.
    setImmediate(() => {
      const running = store.driver?.syncRunning?.() ?? null;
      if (running) running.then(start, start);
      else start();
    });
  }
  const pending = batch;
  return new Promise<T>((resolve, reject) => {
    pending.push({ write: write as Write<unknown>, resolve: resolve as (value: unknown) => void, reject });
  });
}

/** One write in a transaction of its own; whatever goes wrong is that write's answer, never the caller's. */
function alone(store: Pick<Store, 'transaction'>, pending: Pending): void {
  try {
    store.transaction(pending.write).then(pending.resolve, pending.reject);
  } catch (err) {
    pending.reject(err);
  }
}

async function flush(store: Pick<Store, 'transaction'>, batch: readonly Pending[]): Promise<void> {
  if (batch.length === 1) {
    alone(store, batch[0] as Pending);
    return;
  }
  let results: unknown[];
  try {
    results = await store.transaction(async (tx) => {
      const out: unknown[] = [];
      for (const pending of batch) out.push(await pending.write(tx));
      return out;
    });
  } catch {
    // Rolled back as a whole: each write again on its own, so only the one that threw fails.
    for (const pending of batch) alone(store, pending);
    return;
  }
  for (let i = 0; i < batch.length; i += 1) (batch[i] as Pending).resolve(results[i]);
}
