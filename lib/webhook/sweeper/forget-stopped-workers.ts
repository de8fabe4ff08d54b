import { forgetStoppedWorkers } from "../../db/sql/claim-dispatches.ts";
import type { SweeperTask } from "./sweeper-task.ts";

/**
 * Drops the in-flight book rows of workers that stopped without forgetting
 * themselves (killed, or a Vercel invocation cut short): they stopped counting
 * when their leases ran out, and claims need not read past them.
 */
export const forgetStoppedWorkersTask: SweeperTask = {
  name: "forget-stopped-workers",
  run: async ({ hooklane }) => {
    await forgetStoppedWorkers(hooklane.database);
    return false;
  },
};
