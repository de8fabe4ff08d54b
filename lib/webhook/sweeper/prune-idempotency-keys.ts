import { pruneIdempotencyKeys } from "../../db/sql/idempotency-keys.ts";
import type { SweeperTask } from "./sweeper-task.ts";

/** Expired keys deleted per step: one short statement, so it never holds the table for long. */
export const PRUNE_BATCH = 1_000;

/**
 * Deletes `Idempotency-Key` answers past their 24 h. Lookups already ignore
 * expired rows; this only keeps the table small. Runs again while a batch was full.
 */
export const pruneIdempotencyKeysTask: SweeperTask = {
  name: "prune-idempotency-keys",
  async run({ hooklane }) {
    return (await pruneIdempotencyKeys(hooklane.database, PRUNE_BATCH)) === PRUNE_BATCH;
  },
};
