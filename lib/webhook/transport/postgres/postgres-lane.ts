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
import { startLaneLoop } from "./lane-loop.ts";
import { startLeaseKeeper } from "./lease-keeper.ts";
import { DELIVER_WAKE_CHANNEL, type PostgresTransport } from "./postgres-transport.ts";

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
 * The `webhook-out` lane on the postgres transport: one loop whose every step
 * routes due route jobs and claims due dispatches for the worker's free slots
 * in one statement, leases that a keeper renews while this worker lives, woken
 * by NOTIFY (on a LISTEN session that heals itself) or a local signal, and
 * sleeping until the next scheduled retry otherwise. A light-load event goes
 * from its route message to its POST in one statement. Any number of these
 * may share one database: their claims wait for each other only where they
 * take from the same webhook, origin or account.
 */
export async function startPostgresLane(options: PostgresLaneOptions): Promise<Lane> {
  const { database, transport } = options;
  const workerId = options.workerId ?? `${hostname()}/${process.pid}/${randomBytes(3).toString("hex")}`;
  const logger = options.logger.child({ component: "lane", workerId });
  const maxIdleMs = options.maxIdleMs ?? 2_000;
  const routeLeaseMs = options.routeLeaseMs ?? 5_000;
  let running = true;

  const unlisten = await Promise.all(
    [ROUTE_WAKE_CHANNEL, DELIVER_WAKE_CHANNEL].map((channel) =>
      database.listen(channel, () => transport.signal.wake()),
    ),
  );

  const lane = startLaneLoop({
    database,
    transport,
    logger,
    workerId,
    batchSize: options.batchSize,
    maxIdleMs,
    metrics: options.metrics,
    deliver: options.deliver,
    mailer: options.mailer,
    concurrency: options.concurrency,
    leaseMs: options.leaseMs,
    routeLeaseMs,
    caps: options.caps,
    breaker: options.breaker,
    running: () => running,
  });
  const keeper = startLeaseKeeper({
    database,
    logger,
    workerId,
    dispatchLeaseMs: options.leaseMs,
    routeLeaseMs,
    everyMs: Math.max(250, Math.min(options.leaseMs, routeLeaseMs) / 3),
    held: () => lane.held,
    inFlight: () => lane.inFlight,
    lastClaimAt: () => lane.lastClaimAt,
  });
  const unwatch = options.metrics?.watch({
    get inFlight() {
      return lane.inFlight;
    },
    concurrency: options.concurrency,
  });
  logger.info("lane started");

  return {
    workerId,
    async stop() {
      running = false;
      transport.signal.close();
      await lane.drain();
      await keeper.stop();
      unwatch?.();
      await Promise.all(unlisten.map((stop) => stop()));
      logger.info("lane stopped");
    },
  };
}
