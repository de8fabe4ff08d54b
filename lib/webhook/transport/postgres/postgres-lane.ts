import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Database } from "../../../db/client.ts";
import type { InFlightCaps } from "../../../db/sql/claim-dispatches.ts";
import type { BreakerRule } from "../../../db/sql/record-attempts.ts";
import { ROUTE_WAKE_CHANNEL } from "../../../db/sql/route-jobs.ts";
import type { Logger } from "../../../log/logger.ts";
import type { Mailer } from "../../../mail/smtp-mailer.ts";
import type { LaneMetrics } from "../../../metrics/lane-metrics.ts";
import type { DeliverDeps } from "../../outbound/webhook-out-deliver.handler.ts";
import { startDeliverLoop } from "./deliver-loop.ts";
import { startLeaseKeeper } from "./lease-keeper.ts";
import { DELIVER_WAKE_CHANNEL, type PostgresTransport } from "./postgres-transport.ts";
import { runRouteLoop } from "./route-loop.ts";

export interface PostgresLaneOptions {
  database: Database;
  transport: PostgresTransport;
  deliver: DeliverDeps;
  logger: Logger;
  batchSize: number;
  /** POSTs in flight at once in this worker. */
  concurrency: number;
  /** Dispatch lease; renewed every third of it while the attempt runs. */
  leaseMs: number;
  /** Route job lease (routing takes milliseconds). */
  routeLeaseMs?: number;
  caps: InFlightCaps;
  breaker: BreakerRule;
  /** E-mails owners about exhausted dispatches and disabled webhooks (`SMTP_URL`). */
  mailer?: Mailer | undefined;
  /** Longest idle sleep: bounds how late an expired lease or another worker's retry is noticed. */
  maxIdleMs?: number;
  workerId?: string;
  /** Where the lane counts what it does (the process's metrics); nowhere when absent. */
  metrics?: LaneMetrics | undefined;
}

export interface Lane {
  readonly workerId: string;
  /** Stops claiming, lets in-flight attempts finish and records them. */
  stop(): Promise<void>;
}

/**
 * The `webhook-out` lane on the postgres transport: a route loop and a
 * deliver loop, each claiming with `FOR UPDATE SKIP LOCKED` under short
 * leases that a keeper renews while this worker lives, woken by NOTIFY (on a
 * LISTEN session that heals itself) or a local signal, and sleeping until
 * the next scheduled retry otherwise. The route loop leases the dispatches it
 * creates to this worker's deliver loop in the same statement, under the
 * claim's rules, so a light-load event reaches its POST without a deliver
 * claim. Any number of these may share one database.
 */
export async function startPostgresLane(options: PostgresLaneOptions): Promise<Lane> {
  const { database, transport } = options;
  const workerId = options.workerId ?? `${hostname()}/${process.pid}/${randomBytes(3).toString("hex")}`;
  const logger = options.logger.child({ component: "lane", workerId });
  const maxIdleMs = options.maxIdleMs ?? 2_000;
  const routeLeaseMs = options.routeLeaseMs ?? 5_000;
  let running = true;

  const unlisten = await Promise.all([
    database.listen(ROUTE_WAKE_CHANNEL, () => transport.routeSignal.wake()),
    database.listen(DELIVER_WAKE_CHANNEL, () => transport.deliverSignal.wake()),
  ]);

  const common = {
    database,
    transport,
    logger,
    workerId,
    batchSize: options.batchSize,
    maxIdleMs,
    metrics: options.metrics,
  };
  const deliver = startDeliverLoop({
    ...common,
    deliver: options.deliver,
    mailer: options.mailer,
    concurrency: options.concurrency,
    leaseMs: options.leaseMs,
    caps: options.caps,
    breaker: options.breaker,
    running: () => running,
  });
  // The route stage leases the dispatches it creates to this worker's deliver loop, under the same rules.
  const route = runRouteLoop({
    ...common,
    leaseMs: routeLeaseMs,
    dispatchLeaseMs: options.leaseMs,
    caps: options.caps,
    deliver,
    running: () => running,
  });
  const keeper = startLeaseKeeper({
    database,
    logger,
    workerId,
    dispatchLeaseMs: options.leaseMs,
    routeLeaseMs,
    everyMs: Math.max(250, Math.min(options.leaseMs, routeLeaseMs) / 3),
    held: () => ({ dispatches: deliver.held, routeJobs: route.held }),
    inFlight: () => deliver.inFlight,
    lastClaimAt: () => deliver.lastClaimAt,
  });
  const unwatch = options.metrics?.watch({
    get inFlight() {
      return deliver.inFlight;
    },
    concurrency: options.concurrency,
  });
  logger.info("lane started");

  return {
    workerId,
    async stop() {
      running = false;
      transport.routeSignal.close();
      transport.deliverSignal.close();
      // The route loop first: it may still hand the deliver loop dispatches to attempt.
      await route.done;
      await deliver.drain();
      await keeper.stop();
      unwatch?.();
      await Promise.all(unlisten.map((stop) => stop()));
      logger.info("lane stopped");
    },
  };
}
