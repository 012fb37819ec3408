/**
 * Requests' statements that arrive while earlier ones are in flight wait, then go together as one statement
 * (PERF-183 for PUTs, PERF-210 for the row guard's read). On PostgreSQL most of a short statement's cost, to
 * the instance and to the server, is the exchange itself: a pooled connection taken and given back, the
 * protocol's messages written and parsed, a socket write that wakes the backend, a statement planned or
 * looked up and executed, and for a write its commit. Coalescing pays that once per batch. With nothing in
 * flight an item goes at once, so a quiet service answers as fast as before; under load, batches grow by
 * themselves with the wait.
 */

/** One item waiting for its batch, settled by the batch's runner. */
export interface Pending<I, O> {
  readonly input: I;
  resolve(output: O): void;
  reject(err: unknown): void;
}

export interface CoalescerOptions {
  /** At most this many items share one batch; the rest take the next. */
  maxBatch: number;
  /** Batches running at once. */
  maxInFlight: number;
}

/**
 * Queues items and hands them to `run` in arrival order, at most `maxBatch` at a time, with at most
 * `maxInFlight` batches running. `run` settles every item of its batch; if it rejects instead, the items it
 * left unsettled get its error (settling twice is a no-op).
 */
export class Coalescer<I, O> {
  readonly #run: (batch: readonly Pending<I, O>[]) => Promise<void>;
  readonly #options: CoalescerOptions;
  #queue: Pending<I, O>[] = [];
  #inFlight = 0;

  constructor(run: (batch: readonly Pending<I, O>[]) => Promise<void>, options: CoalescerOptions) {
    this.#run = run;
    this.#options = options;
  }

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ input, resolve, reject });
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#inFlight < this.#options.maxInFlight && this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#options.maxBatch);
      this.#inFlight += 1;
      void this.#run(batch)
        .catch((err: unknown) => {
          for (const item of batch) item.reject(err);
        })
        .finally(() => {
          this.#inFlight -= 1;
          this.#pump();
        });
    }
  }
}
