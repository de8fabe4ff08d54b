import { pruneHealthRollups } from "../../db/sql/prune-health-rollups.ts";
import type { SweeperTask } from "./sweeper-task.ts";

/** Rollup rows deleted per table per round. */
const PRUNE_BATCH = 5_000;

/** Drops endpoint-health and throughput rollups past their retention, in batches. */
export const pruneHealthRollupsTask: SweeperTask = {
  name: "prune-health-rollups",
  run: ({ hooklane }) => pruneHealthRollups(hooklane.database, PRUNE_BATCH),
};
