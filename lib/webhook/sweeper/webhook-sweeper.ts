import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import type { Hooklane } from "../../hooklane.ts";
import { LaneSignal } from "../transport/postgres/lane-signal.ts";
import { disableFailingWebhooksTask } from "./disable-failing-webhooks.ts";
import { pruneHealthRollupsTask } from "./prune-health-rollups.ts";
import { runRecoveryJobsTask } from "./run-recovery-jobs.ts";
import type { SweeperContext, SweeperTask } from "./sweeper-task.ts";

export const SWEEP_WAKE_CHANNEL = "hooklane_sweep";

/** How often a self-hosted worker's sweeper runs when nothing wakes it. */
export const SWEEP_INTERVAL_MS = 30_000;

/** The tasks every sweeper runs, whatever the transport. */
export const SWEEPER_TASKS: readonly SweeperTask[] = [
  disableFailingWebhooksTask,
  runRecoveryJobsTask,
  pruneHealthRollupsTask,
];

export interface Sweeper {
  /** Lets the running round finish and stops. */
  stop(): Promise<void>;
}

/** Asks every sweeper on this database (any process) to run now, e.g. for a new recovery job. */
export async function wakeSweepers(database: Database): Promise<void> {
  await database.rows(sql`select pg_notify(${SWEEP_WAKE_CHANNEL}, '')`);
}

/**
 * Runs every task once, and again while it reports more work (at most
 * `maxRounds` times): the sweeper for a cron (Vercel), where nothing stays up
 * between runs.
 */
export async function sweepOnce(
  hooklane: Hooklane,
  options: { workerId: string; now?: () => Date; tasks?: readonly SweeperTask[]; maxRounds?: number },
): Promise<void> {
  const context: SweeperContext = { hooklane, workerId: options.workerId, now: options.now ?? (() => new Date()) };
  for (const task of options.tasks ?? SWEEPER_TASKS) {
    for (let round = 0; round < (options.maxRounds ?? 20); round++) {
      try {
        if (!(await task.run(context))) break;
      } catch (error) {
        reportTaskFailure(hooklane, task, error);
        break;
      }
    }
  }
}

/**
 * Runs `tasks` every `intervalMs` and whenever `wakeSweepers` asks (from
 * any process). A task that reports more work runs again straight away,
 * alone, until it has none. A failing task is logged and tried next round;
 * it never stops the others.
 */
export async function startSweeper(
  hooklane: Hooklane,
  options: { intervalMs: number; workerId: string; now?: () => Date; tasks?: readonly SweeperTask[] },
): Promise<Sweeper> {
  const tasks = options.tasks ?? SWEEPER_TASKS;
  const context: SweeperContext = {
    hooklane,
    workerId: options.workerId,
    now: options.now ?? (() => new Date()),
  };
  const signal = new LaneSignal();
  const unlisten = await hooklane.database.listen(SWEEP_WAKE_CHANNEL, () => signal.wake());
  let running = true;

  async function runTask(task: SweeperTask): Promise<boolean> {
    try {
      return await task.run(context);
    } catch (error) {
      reportTaskFailure(hooklane, task, error);
      return false;
    }
  }

  const loop = (async () => {
    let due = [...tasks];
    while (running) {
      const again: SweeperTask[] = [];
      for (const task of due) {
        if (running && (await runTask(task))) again.push(task);
      }
      if (again.length > 0) {
        due = again;
        continue;
      }
      await signal.wait(options.intervalMs);
      due = [...tasks];
    }
  })();

  return {
    async stop() {
      running = false;
      signal.close();
      await loop;
      await unlisten();
    },
  };
}

function reportTaskFailure(hooklane: Hooklane, task: SweeperTask, error: unknown): void {
  if (hooklane.database.outage.report(error)) return;
  hooklane.logger.child({ component: "sweeper" }).error({ err: error, task: task.name }, "sweeper task failed");
}
