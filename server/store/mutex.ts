/**
 * A FIFO async mutex. The SQLite connection is one shared resource: an open transaction on it would
 * otherwise absorb any statement another async flow issues in the meantime.
 */
export class AsyncMutex {
  #locked = false;
  readonly #waiters: Array<() => void> = [];

  get locked(): boolean {
    return this.#locked;
  }

  /** The release function when the mutex is free (taken at once, no promise), else null. */
  tryAcquire(): (() => void) | null {
    if (this.#locked) return null;
    this.#locked = true;
    return this.#releaser();
  }

  async acquire(): Promise<() => void> {
    if (!this.#locked) {
      this.#locked = true;
      return this.#releaser();
    }
    await new Promise<void>((resolve) => this.#waiters.push(resolve));
    return this.#releaser();
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      // Ownership passes straight to the next waiter, so nobody can barge in between.
      if (next) next();
      else this.#locked = false;
    };
  }
}
