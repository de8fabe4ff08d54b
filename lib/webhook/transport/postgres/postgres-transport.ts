import { sql } from "drizzle-orm";
import type { Database } from "../../../db/client.ts";
import { ROUTE_WAKE_CHANNEL, routeJobInsert } from "../../../db/sql/route-jobs.ts";
import type { RouteMessage } from "../../outbound/webhook-out-queue-registrations.ts";
import type { WebhookTransport } from "../webhook-transport.ts";
import { LaneSignal } from "./lane-signal.ts";

export const DELIVER_WAKE_CHANNEL = "hooklane_deliver";

export interface PostgresTransport extends WebhookTransport {
  readonly name: "postgres";
  /** Wakes this process's lane loop: a route message committed, dispatches to deliver, a NOTIFY heard. */
  readonly signal: LaneSignal;
  /** Wakes the lane loops and listen streams of other processes (`NOTIFY hooklane_deliver`). */
  wakeOtherProcesses(): Promise<void>;
}

/**
 * The postgres transport: `webhook-out-route` is the `webhook_route_job`
 * table, and `webhook-out-deliver` is the open dispatches themselves, so
 * sending a deliver message is only a wake-up. Consumers claim with
 * `FOR UPDATE SKIP LOCKED`; see postgres-lane.ts.
 */
export function createPostgresTransport(database: Database): PostgresTransport {
  const signal = new LaneSignal();
  const sent = { route: 0, deliver: 0 };
  const wakeOtherProcesses = async () => void (await database.rows(sql`select pg_notify(${DELIVER_WAKE_CHANNEL}, '')`));
  return {
    name: "postgres",
    signal,
    sent,
    routesAtCommit: true,
    wakeOtherProcesses,
    async enqueueRoute(tx, message: RouteMessage, entry) {
      // Sent with the COMMIT (still inside the transaction, so the owner is read as the mutation left it): a failure
      // to write it fails the transaction, and nothing commits.
      const insert = routeJobInsert(message, entry?.owner, entry?.attributes);
      await tx.beforeCommit(insert.query, insert.name);
      // Workers in other processes hear it after the commit, from this NOTIFY or one shared with other commits.
      await tx.notifyAtCommit(ROUTE_WAKE_CHANNEL);
      return { message };
    },
    async routeCommitted() {
      // Other processes hear the NOTIFY that followed the commit.
      sent.route++;
      signal.wake();
    },
    async sendDeliver(dispatchIds) {
      sent.deliver += dispatchIds.length;
      signal.wake();
      await wakeOtherProcesses();
    },
  };
}
