import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The transaction whose callback is running, as the drivers' misuse checks read it (the store itself used
 * inside its own transaction; an outer handle used inside a nested one).
 *
 * Kept in an `AsyncLocalStorage`, disabled whenever no root transaction's callback runs (PERF-215): while one
 * is enabled, node runs an init hook for every promise of the process, which cost a few percent of every
 * request's CPU although almost no request runs a transaction. Outside every callback `current()` is
 * undefined; a handle or a statement left behind by an ended transaction reads that, as it read an ended
 * scope before, which the drivers refuse by its own state, not by this.
 */
export class TransactionContext<Scope> {
  readonly #als = new AsyncLocalStorage<Scope>();
  /** Root transactions between their callback's start and end. */
  #running = 0;

  current(): Scope | undefined {
    return this.#als.getStore();
  }

  /** A root transaction's callback, with `scope` as its context. */
  async runRoot<T>(scope: Scope, fn: () => Promise<T>): Promise<T> {
    this.#running += 1;
    try {
      return await this.#als.run(scope, fn);
    } finally {
      this.#running -= 1;
      if (this.#running === 0) this.#als.disable();
    }
  }

  /** A nested transaction's callback, inside its root's. */
  run<T>(scope: Scope, fn: () => T): T {
    return this.#als.run(scope, fn);
  }
}
