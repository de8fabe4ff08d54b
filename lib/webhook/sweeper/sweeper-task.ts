import type { Hooklane } from "../../hooklane.ts";

/** What a sweeper task runs with. */
export interface SweeperContext {
  hooklane: Hooklane;
  /** Names the leases this sweeper takes. */
  workerId: string;
  /** The clock rules are judged by (injected in tests). */
  now(): Date;
}

/** One periodic job of the sweeper. Any number of sweepers may run it at once. */
export interface SweeperTask {
  readonly name: string;
  /** Does one round of work; resolves true when more is waiting and the task should run again at once. */
  run(context: SweeperContext): Promise<boolean>;
}
