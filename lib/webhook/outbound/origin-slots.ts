/**
 * A semaphore per origin: at most `perOrigin` requests hold a slot at once,
 * and the rest wait their turn in order. With as many sockets per origin as
 * slots, a request that holds a slot never queues inside the HTTP client,
 * so its deadline measures the subscriber, not its neighbours.
 */
export class OriginSlots {
  readonly #perOrigin: number;
  readonly #origins = new Map<string, { held: number; waiting: Array<() => void> }>();

  constructor(perOrigin: number) {
    this.#perOrigin = perOrigin;
  }

  /** Resolves with a release function once a slot of `origin` is free. */
  async acquire(origin: string): Promise<() => void> {
    let state = this.#origins.get(origin);
    if (!state) this.#origins.set(origin, (state = { held: 0, waiting: [] }));
    if (state.held >= this.#perOrigin) await new Promise<void>((resolve) => state.waiting.push(resolve));
    else state.held++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = state.waiting.shift();
      // A waiter inherits the slot; with none, it is returned (and an idle origin forgotten).
      if (next) next();
      else if (--state.held === 0) this.#origins.delete(origin);
    };
  }
}
