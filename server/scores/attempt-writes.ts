/**
 * The attempts of scores published at about the same time are written in one transaction (decision
 * PERF-101). Each score's attempt is still written once, with what its publication settled, and answered
 * only after the commit that holds it (and, on SQLite, that commit's fsync); what changes is that the
 * scores whose LMS answers arrived in the same turn of the event loop share one `BEGIN IMMEDIATE`/`COMMIT`
 * (SQLite: one append of the WAL's pages, where each attempt appended the same b-tree pages again;
 * PostgreSQL: one round trip for BEGIN and COMMIT) instead of each paying its own.
 *
 * A write that throws must fail alone: the shared transaction is rolled back and each write of it runs
 * again in a transaction of its own, so the others are kept and the one that threw answers its own error.
 * A write runs inside its pair's publication order (`ordering.ts`) as before: the pair's next score waits
 * for this commit, so two writes of one pair are never in one batch.
 */
import type { Repositories, Store } from '../store/index.js';

type Write<T> = (tx: Repositories) => Promise<T>;

interface Pending {
  write: Write<unknown>;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/** The writes gathered for each store's next transaction, until it starts. */
const gathering = new WeakMap<Pick<Store, 'transaction'>, Pending[]>();

/** Runs `write` in a transaction shared with the other writes asked for in this turn of the event loop. */
export function writeWithOthers<T>(store: Pick<Store, 'transaction'>, write: Write<T>): Promise<T> {
  let batch = gathering.get(store);
  if (!batch) {
    const gathered: Pending[] = [];
    batch = gathered;
    gathering.set(store, gathered);
    // After the answers that arrived in this turn have reached their writes.
    setImmediate(() => {
      gathering.delete(store);
      void flush(store, gathered);
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
