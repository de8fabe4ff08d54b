import type { Hooklane } from "../../hooklane.ts";
import { LaneSignal } from "../transport/postgres/lane-signal.ts";
import { SWEEP_WAKE_CHANNEL } from "./wake-sweepers.ts";
import { disableFailingWebhooksTask } from "./disable-failing-webhooks.ts";
import { pruneIdempotencyKeysTask } from "./prune-idempotency-keys.ts";
import { expireListenSessionsTask } from "./expire-listen-sessions.ts";
import { forgetStoppedWorkersTask } from "./forget-stopped-workers.ts";
import { pruneHealthRollupsTask } from "./prune-health-rollups.ts";
import { pruneLedgerTask } from "./prune-ledger.ts";
import { pruneSessionsTask } from "./prune-sessions.ts";
import { notifyOwnersTask } from "./notify-owners.ts";
import { runRecoveryJobsTask } from "./run-recovery-jobs.ts";
import { requestConsentTask } from "./request-consent.ts";
import type { SweeperContext, SweeperTask } from "./sweeper-task.ts";

export { SWEEP_WAKE_CHANNEL, wakeSweepers } from "./wake-sweepers.ts";

/** How often a self-hosted worker's sweeper runs when nothing wakes it. */
export const SWEEP_INTERVAL_MS = 30_000;

/** The tasks every sweeper runs, whatever the transport. */
export const SWEEPER_TASKS: readonly SweeperTask[] = [
  disableFailingWebhooksTask,
  notifyOwnersTask,
  requestConsentTask,
  runRecoveryJobsTask,
  pruneIdempotencyKeysTask,
  pruneSessionsTask,
  expireListenSessionsTask,
  pruneHealthRollupsTask,
  pruneLedgerTask,
  forgetStoppedWorkersTask,
];

export interface Sweeper {
  /** Lets the running round finish and stops. */
  stop(): Promise<void>;
}

/** One phase of a sweep with a time budget: a bounded step of work, saying whether more is waiting. */
export interface SweepPhase {
  readonly name: string;
  /** Does one bounded step; `items` counts what it handled (messages sent, rows requeued). */
  step(): Promise<{ items: number; more: boolean }>;
}

/** What a sweep with a time budget did, and what it left for the next run. */
export interface SweepReport {
  budgetMs: number;
  elapsedMs: number;
  phases: Record<string, { steps: number; items: number; more: boolean }>;
  /** Phases that still had work when the budget ran out, or whose step failed; the next run continues them. */
  left: string[];
}

/**
 * Runs `phases`, then every sweeper task, interleaved — one step of each in
 * turn while it reports more work — until none has any or `budgetMs` is
 * spent by `clock` (no step starts after that): a backlog in one phase never
 * keeps the others from running. A failing step is logged and ends its
 * phase for this run. The sweeper for a cron (Vercel), where nothing stays
 * up between runs.
 */
export async function sweepWithin(
  hooklane: Hooklane,
  options: { workerId: string; budgetMs: number; phases?: readonly SweepPhase[]; clock?: () => number },
): Promise<SweepReport> {
  const clock = options.clock ?? Date.now;
  const context: SweeperContext = { hooklane, workerId: options.workerId, now: () => new Date() };
  const taskPhases = SWEEPER_TASKS.map((task): SweepPhase => ({
    name: task.name,
    step: async () => ({ items: 0, more: await task.run(context) }),
  }));
  const phases = [...(options.phases ?? []), ...taskPhases];
  const report: SweepReport = {
    budgetMs: options.budgetMs,
    elapsedMs: 0,
    phases: Object.fromEntries(phases.map((p) => [p.name, { steps: 0, items: 0, more: true }])),
    left: [],
  };
  const failed: string[] = [];
  const start = clock();
  let due = phases;
  while (due.length > 0 && clock() - start < options.budgetMs) {
    const again: SweepPhase[] = [];
    for (const phase of due) {
      if (clock() - start >= options.budgetMs) {
        again.push(phase);
        continue;
      }
      const entry = report.phases[phase.name]!;
      try {
        const { items, more } = await phase.step();
        entry.steps++;
        entry.items += items;
        entry.more = more;
        if (more) again.push(phase);
      } catch (error) {
        reportTaskFailure(hooklane, phase.name, error);
        failed.push(phase.name);
      }
    }
    due = again;
  }
  report.elapsedMs = clock() - start;
  report.left = [...due.map((p) => p.name), ...failed];
  return report;
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
      reportTaskFailure(hooklane, task.name, error);
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

function reportTaskFailure(hooklane: Hooklane, task: string, error: unknown): void {
  if (hooklane.database.outage.report(error)) return;
  hooklane.logger.child({ component: "sweeper" }).error({ err: error, task }, "sweeper task failed");
}
