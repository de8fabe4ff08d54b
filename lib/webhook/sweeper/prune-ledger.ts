import { pruneLedger } from "../../db/sql/prune-ledger.ts";
import type { SweeperTask } from "./sweeper-task.ts";

/** Rows of each kind deleted per step: small, so pruning never holds a table or a claim for long. */
export const LEDGER_PRUNE_BATCH = 500;

/**
 * Retention (`WEBHOOK_RETENTION`, 30 days by default): deletes attempts and
 * finished dispatches older than that, notifications already told, and
 * deleted webhooks whose log is gone, in small batches, judged on the
 * sweeper's clock. Runs again while any batch was full.
 */
export const pruneLedgerTask: SweeperTask = {
  name: "prune-ledger",
  async run({ hooklane, now }) {
    const cutoff = new Date(now().getTime() - hooklane.config.retentionMs);
    const pruned = await pruneLedger(hooklane.database, { cutoff, limit: LEDGER_PRUNE_BATCH });
    return Object.values(pruned).some((n) => n === LEDGER_PRUNE_BATCH);
  },
};
