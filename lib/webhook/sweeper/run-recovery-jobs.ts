import { claimRecoveryJob, requeueRecoveryBatch } from "../../db/sql/recovery-jobs.ts";
import type { SweeperTask } from "./sweeper-task.ts";

/** Dispatches a recovery puts back per step; each step is one statement and one progress update. */
export const RECOVERY_BATCH = 200;

/**
 * Advances bulk recoveries one batch at a time: claims an unfinished job
 * under a lease (never one another sweeper holds), requeues its next batch
 * and wakes the lane for them. Asks to run again while any job had work.
 */
export const runRecoveryJobsTask: SweeperTask = {
  name: "run-recovery-jobs",
  async run({ hooklane, workerId }) {
    const { database, transport, config } = hooklane;
    const recoveryId = await claimRecoveryJob(database, { workerId, leaseMs: config.leaseMs });
    if (!recoveryId) return false;
    const ids = await requeueRecoveryBatch(database, { recoveryId, workerId, limit: RECOVERY_BATCH });
    if (ids.length > 0) await transport.sendDeliver(ids);
    return true;
  },
};
