/**
 * The repositories over PostgreSQL's pipelined transaction (`pg-batch.ts`, PERF-170): reads are sent as
 * statements with the transaction's first exchange, and what the repositories write in `commit` is not run
 * one statement at a time but collected and sent with COMMIT in one exchange. The repositories stay the one
 * place their SQL is written; only when it reaches PostgreSQL changes.
 */
import type { BatchResult, BatchStatement, Driver, PipelinedTransaction, RunResult, SqlParam } from './driver.js';
import type { Clock } from './time.js';

/** `R`: the repositories (`Repositories` of `index.ts`, which builds this). */
export interface PipelinedStore<R> {
  readonly clock: Clock;
  /** BEGIN and `statements`, in one exchange. */
  open(statements: readonly BatchStatement[]): Promise<BatchResult[]>;
  /** More statements inside the transaction, in one exchange (paths off the usual one). */
  run(statements: readonly BatchStatement[]): Promise<BatchResult[]>;
  /**
   * `write` against repositories whose writes are collected, then sent with COMMIT in one exchange. It may
   * only write (a read would need its answer before the exchange): a read throws. Answers what `write` did.
   */
  commit<T>(write: (tx: R) => Promise<T>): Promise<T>;
}

/** A driver that keeps each write for later and refuses reads; `changes` answers 1 (none is read). */
class DeferredWrites implements Driver {
  readonly dialect = 'postgres' as const;
  readonly forUpdate = ' FOR UPDATE';
  readonly statements: BatchStatement[] = [];

  get<T extends object>(): Promise<T | undefined> {
    return Promise.reject(new Error('a read inside a pipelined commit: its writes are sent with COMMIT, unanswered until then'));
  }

  all<T extends object>(): Promise<T[]> {
    return Promise.reject(new Error('a read inside a pipelined commit: its writes are sent with COMMIT, unanswered until then'));
  }

  run(sql: string, params?: readonly SqlParam[]): Promise<RunResult> {
    this.statements.push(params === undefined ? { sql } : { sql, params });
    return Promise.resolve({ changes: 1 });
  }

  transaction<T>(fn: (tx: Driver) => Promise<T>): Promise<T> {
    return fn(this);
  }
}

export function pipelinedStore<R>(
  tx: PipelinedTransaction,
  clock: Clock,
  repositoriesOf: (db: Driver, clock: Clock) => R,
): PipelinedStore<R> {
  return {
    clock,
    open: (statements) => tx.open(statements),
    run: (statements) => tx.run(statements),
    commit: async (write) => {
      const deferred = new DeferredWrites();
      const result = await write(repositoriesOf(deferred, clock));
      await tx.commit(deferred.statements);
      return result;
    },
  };
}
