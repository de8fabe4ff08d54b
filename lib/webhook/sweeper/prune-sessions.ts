import { pruneExpiredSessions } from "../../db/sql/prune-sessions.ts";
import type { SweeperTask } from "./sweeper-task.ts";

/** Expired sessions deleted per table and step: short statements, so neither table is held for long. */
export const PRUNE_SESSIONS_BATCH = 1_000;

/**
 * Deletes console and portal sessions past their expiry, and secret
 * handovers nobody took. Lookups already ignore them; this only keeps the
 * tables small. Runs again while a batch was full.
 */
export const pruneSessionsTask: SweeperTask = {
  name: "prune-sessions",
  async run({ hooklane }) {
    return (await pruneExpiredSessions(hooklane.database, PRUNE_SESSIONS_BATCH)) === PRUNE_SESSIONS_BATCH;
  },
};
