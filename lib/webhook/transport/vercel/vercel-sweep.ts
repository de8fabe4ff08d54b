import type { QueueClient } from "@vercel/queue";
import type { Database } from "../../../db/client.ts";
import { clearDispatchQueued, takeStrandedDispatches } from "../../../db/sql/queued-dispatches.ts";
import { claimRouteJobs, deleteRouteJobs, retryRouteJob } from "../../../db/sql/route-jobs.ts";
import { ROUTE_TOPIC } from "../../outbound/webhook-out-queue-registrations.ts";
import { DELIVER_MESSAGE_GRACE_MS, type VercelTransport } from "./vercel-transport.ts";

const BATCH = 500;

/**
 * What the Vercel transport needs from the sweeper (a cron there, a timer in
 * self-hosted workers): re-send route messages that waited in the fallback
 * during a queue outage, and deliver messages for due dispatches that no
 * message carries (never sent, lost, or a lease that ran out). Returns how
 * many of each it sent; stops at the first failure of the queue.
 */
export async function sweepVercelTransport(deps: {
  database: Database;
  transport: VercelTransport;
  queue: Pick<QueueClient, "send">;
  workerId: string;
}): Promise<{ routes: number; dispatches: number }> {
  const { database } = deps;
  let routes = 0;
  for (;;) {
    const jobs = await claimRouteJobs(database, { workerId: deps.workerId, limit: BATCH, leaseMs: 60_000 });
    if (jobs.length === 0) break;
    const sent: number[] = [];
    for (const job of jobs) {
      try {
        // The event id is the idempotency key: a message the queue did take before failing is not doubled.
        const message = job.message as { eventId?: string };
        await deps.queue.send(ROUTE_TOPIC, job.message, message.eventId ? { idempotencyKey: message.eventId } : {});
        sent.push(job.id);
      } catch (error) {
        await deleteRouteJobs(database, sent);
        await Promise.all(
          jobs.filter((j) => !sent.includes(j.id)).map((j) => retryRouteJob(database, j.id, 0, String(error))),
        );
        return { routes: routes + sent.length, dispatches: 0 };
      }
    }
    await deleteRouteJobs(database, sent);
    routes += sent.length;
  }

  let dispatches = 0;
  for (;;) {
    const stranded = await takeStrandedDispatches(database, { limit: BATCH, withinMs: DELIVER_MESSAGE_GRACE_MS });
    if (stranded.length === 0) break;
    const results = await Promise.all(stranded.map((d) => deps.transport.sendDeliverMessage(d.id, d.attempt, 0, true)));
    dispatches += results.filter(Boolean).length;
    const unsent = stranded.filter((_, i) => !results[i]);
    if (unsent.length > 0) {
      // The queue is down: leave them for the next sweep instead of the grace period.
      await Promise.all(unsent.map((d) => clearDispatchQueued(database, d.id)));
      break;
    }
  }
  return { routes, dispatches };
}
