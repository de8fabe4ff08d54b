import type { Database } from "../../../db/client.ts";
import { isConnectionError } from "../../../db/database-outage.ts";
import type { InFlightCaps } from "../../../db/sql/claim-dispatches.ts";
import {
  claimRouteJobs,
  deleteRouteJobs,
  nextRouteJobDueInMs,
  retryRouteJob,
  routeJobs,
  type ClaimedRouteJob,
} from "../../../db/sql/route-jobs.ts";
import type { Logger } from "../../../log/logger.ts";
import type { LaneMetrics } from "../../../metrics/lane-metrics.ts";
import { consumeRouteMessage } from "../../outbound/webhook-out-route.consumer.ts";
import { analyzeAfterLargeFanOut, LARGE_FAN_OUT, ROUTE_RULES_JSON } from "../../outbound/webhook-out-route.handler.ts";
import type { DeliverLoop } from "./deliver-loop.ts";
import { runLoop } from "./lane-loop.ts";
import type { PostgresTransport } from "./postgres-transport.ts";

/** With no job of its own but due ones locked by another worker's route statement: look again this soon. */
const LOCKED_RECHECK_MS = 20;

export interface RouteLoopOptions {
  database: Database;
  transport: PostgresTransport;
  logger: Logger;
  workerId: string;
  batchSize: number;
  /** Routing takes milliseconds: a short lease (renewed while held) lets another worker take over fast. */
  leaseMs: number;
  /** The dispatch lease, for the new dispatches handed to `deliver`. */
  dispatchLeaseMs: number;
  caps: InFlightCaps;
  /** This worker's deliver loop: the new dispatches it has room for are leased to it and attempted at once. */
  deliver: Pick<DeliverLoop, "reserve" | "adopt" | "claimTicket">;
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
 * The route consumer on the postgres transport. One statement per step
 * claims due route jobs, routes them, deletes them and leases the new
 * dispatches this worker has room for under the claim's rules; those go
 * straight to the deliver loop, the rest wait in the ledger for any
 * worker's claim. Jobs that statement leaves (a malformed message, an
 * unknown type) go through the shared consumer, which records poison and
 * reschedules failures; so does a whole batch when the statement fails for a
 * reason other than the database being away. Sleeps until the next job is
 * due, a wake-up, or `maxIdleMs`. A step that fails with the database lets go
 * of its jobs: their leases run out and any worker claims them again.
 */
export function runRouteLoop(options: RouteLoopOptions): RouteLoop {
  const { database, transport, workerId } = options;
  const deps = { database, transport, logger: options.logger, metrics: options.metrics };
  let held: number[] = [];
  let oneByOne = false;

  async function step(): Promise<void> {
    if (oneByOne) return stepOneByOne();
    const reserved = options.deliver.reserve(options.batchSize);
    let routed;
    try {
      // Its claim counts and writes this worker's in-flight row, as the deliver loop's do.
      routed = await options.deliver.claimTicket(async (ticket) => {
        try {
          const result = await routeJobs(database, {
            workerId,
            limit: options.batchSize,
            routeLeaseMs: options.leaseMs,
            rulesJson: ROUTE_RULES_JSON,
            claimLimit: reserved,
            leaseMs: options.dispatchLeaseMs,
            caps: options.caps,
            ...ticket,
            largeFanOut: LARGE_FAN_OUT,
          });
          options.deliver.adopt(result.leased, reserved);
          return result;
        } catch (error) {
          options.deliver.adopt([], reserved);
          throw error;
        }
      });
    } catch (error) {
      if (isConnectionError(error)) throw error;
      // One job the statement could not route fails the batch: route the next one job by job, where the
      // consumer reschedules a failing job alone.
      options.logger.error({ err: error }, "routing a batch failed; routing the next one job by job");
      oneByOne = true;
      return;
    }
    for (const dispatches of routed.routed) options.metrics?.routed("routed", dispatches);
    // New rows no claim took wait for one: a deliver message each, carried by a wake-up.
    const pending = routed.dispatches - routed.leased.length;
    if (pending > 0) transport.sent.deliver += pending;
    if (routed.dispatches >= LARGE_FAN_OUT) {
      // Fresh statistics first, then the claims: the statement left this wake-up to us.
      await analyzeAfterLargeFanOut(database, routed.dispatches);
      if (pending > 0) await transport.sendDeliver([]);
    } else if (pending > 0) {
      // The statement NOTIFYed other processes.
      transport.deliverSignal.wake();
    }
    if (routed.left.length > 0) await consume(routed.left);
    if (routed.found < options.batchSize) {
      const dueMs = routed.dueMs === null ? options.maxIdleMs : Math.max(routed.dueMs, LOCKED_RECHECK_MS);
      await transport.routeSignal.wait(Math.min(options.maxIdleMs, dueMs));
    }
  }

  /** The shared consumer, a job at a time: what the route statement could not route. */
  async function stepOneByOne(): Promise<void> {
    const jobs = await claimRouteJobs(database, { workerId, limit: options.batchSize, leaseMs: options.leaseMs });
    oneByOne = false;
    if (jobs.length === 0) {
      const dueInMs = await nextRouteJobDueInMs(database);
      await transport.routeSignal.wait(Math.min(options.maxIdleMs, Math.max(0, dueInMs ?? options.maxIdleMs)));
      return;
    }
    await consume(jobs);
  }

  async function consume(jobs: readonly ClaimedRouteJob[]): Promise<void> {
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
