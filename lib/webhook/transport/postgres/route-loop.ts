import type { Database } from "../../../db/client.ts";
import { claimRouteJobs, deleteRouteJobs, nextRouteJobDueInMs, retryRouteJob } from "../../../db/sql/route-jobs.ts";
import type { Logger } from "../../../log/logger.ts";
import type { LaneMetrics } from "../../../metrics/lane-metrics.ts";
import { consumeRouteMessage } from "../../outbound/webhook-out-route.consumer.ts";
import { runLoop } from "./lane-loop.ts";
import type { PostgresTransport } from "./postgres-transport.ts";

export interface RouteLoopOptions {
  database: Database;
  transport: PostgresTransport;
  logger: Logger;
  workerId: string;
  batchSize: number;
  /** Routing takes milliseconds: a short lease (renewed while held) lets another worker take over fast. */
  leaseMs: number;
  maxIdleMs: number;
  running: () => boolean;
  metrics?: LaneMetrics | undefined;
}

export interface RouteLoop {
  /** Resolves when the loop has stopped (after `running()` turned false and it was woken). */
  readonly done: Promise<void>;
  /** The route jobs this loop is working on: the leases worth renewing. */
  readonly held: readonly number[];
}

/**
 * The route consumer on the postgres transport: claims due route jobs, hands
 * each to the shared consumer, removes the routed and the poison ones and
 * reschedules the rest. Sleeps until the next job is due, a wake-up, or
 * `maxIdleMs`. A step that fails (the database went away) lets go of its
 * jobs: their leases run out and any worker claims them again.
 */
export function runRouteLoop(options: RouteLoopOptions): RouteLoop {
  const { database, transport, workerId } = options;
  const deps = { database, transport, logger: options.logger, metrics: options.metrics };
  let held: number[] = [];

  async function step(): Promise<void> {
    const jobs = await claimRouteJobs(database, { workerId, limit: options.batchSize, leaseMs: options.leaseMs });
    if (jobs.length === 0) {
      const dueInMs = await nextRouteJobDueInMs(database);
      await transport.routeSignal.wait(Math.min(options.maxIdleMs, Math.max(0, dueInMs ?? options.maxIdleMs)));
      return;
    }
    held = jobs.map((job) => job.id);
    try {
      const outcomes = await Promise.all(jobs.map((job) => consumeRouteMessage(deps, job.message, job.attempts)));
      const done: number[] = [];
      await Promise.all(
        outcomes.map((outcome, i) => {
          const job = jobs[i]!;
          if (outcome.kind !== "retry") return void done.push(job.id);
          return retryRouteJob(database, job.id, outcome.delayMs, outcome.reason);
        }),
      );
      await deleteRouteJobs(database, done);
    } finally {
      held = [];
    }
  }

  return {
    done: runLoop("route", step, { running: options.running, database, logger: options.logger }),
    get held() {
      return held;
    },
  };
}
