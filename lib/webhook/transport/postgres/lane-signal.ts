/**
 * Wakes an idle consumer loop: by a local call when the producer is in the
 * same process, by LISTEN/NOTIFY across processes, and by a timer for work
 * scheduled in the future. Wake-ups that arrive while the loop is busy are
 * remembered, so none is lost.
 */
export class LaneSignal {
  #pending = false;
  #waiter: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  wake(): void {
    if (this.#waiter) {
      const resolve = this.#waiter;
      this.#waiter = undefined;
      resolve();
    } else {
      this.#pending = true;
    }
  }

  /** Waits for a wake-up, or `ms` at most. */
  wait(ms: number): Promise<void> {
    if (this.#pending || this.#closed) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#waiter = () => {
        clearTimeout(this.#timer);
        resolve();
      };
      this.#timer = setTimeout(() => this.wake(), Math.max(0, ms));
    });
  }

  /** Ends every wait now and later: the consumer is stopping. */
  close(): void {
    this.#closed = true;
    this.wake();
  }
}
