import type { QueueClient } from "@vercel/queue";
import type { Database } from "../../../db/client.ts";
import type { Logger } from "../../../log/logger.ts";
import { deleteRouteJobs, enqueueRouteJob, retryRouteJob } from "../../../db/sql/route-jobs.ts";
import { errorFacts } from "../../../log/error-facts.ts";
import { markDispatchesQueued } from "../../../db/sql/queued-dispatches.ts";
import {
  DELIVER_TOPIC,
  ROUTE_TOPIC,
  type DeliverMessage,
  type RouteMessage,
} from "../../outbound/webhook-out-queue-registrations.ts";
import type { WebhookTransport } from "../webhook-transport.ts";

/** How long after its delay a deliver message may take to arrive before the sweeper sends another. */
export const DELIVER_MESSAGE_GRACE_MS = 5 * 60_000;
/** How long the sweep leaves a fresh outbox row to the forward that follows its commit. */
export const OUTBOX_FORWARD_GRACE_MS = 30_000;
/** Vercel Queues keeps a message (and its delay) for 7 days at most. */
const MAX_DELAY_SECONDS = 7 * 86_400;

export interface VercelTransport extends WebhookTransport {
  readonly name: "vercel";
  /**
   * Sends one deliver message for attempt `attempt` of a dispatch, `delayMs`
   * from now. `unique` makes its idempotency key unique (sweeper re-sends),
   * so the queue cannot deduplicate it against a lost original.
   */
  sendDeliverMessage(dispatchId: string, attempt: number, delayMs: number, unique?: boolean): Promise<boolean>;
  readonly sent: { route: number; deliver: number; fallback: number };
}

/**
 * The Vercel Queues transport. A route message is written to the outbox
 * (`webhook_route_job`) in the mutation's transaction and forwarded to the
 * queue after commit; the row goes once the queue took it, and the sweep
 * forwards whatever is left (a queue outage at once, a process that died
 * between commit and forward once `forwardGraceMs` has passed; default
 * OUTBOX_FORWARD_GRACE_MS). Deliver messages that cannot be sent are only logged:
 * the dispatch row is the commitment, and the sweep re-sends any due row no
 * message carries.
 */
export function createVercelTransport(
  database: Database,
  queue: Pick<QueueClient, "send">,
  logger: Logger,
  options: { forwardGraceMs?: number } = {},
): VercelTransport {
  const forwardGraceMs = options.forwardGraceMs ?? OUTBOX_FORWARD_GRACE_MS;
  const sent = { route: 0, deliver: 0, fallback: 0 };
  const log = logger.child({ component: "transport" });

  async function sendDeliverMessage(dispatchId: string, attempt: number, delayMs: number, unique = false) {
    const delaySeconds = Math.min(Math.ceil(delayMs / 1_000), MAX_DELAY_SECONDS);
    const message: DeliverMessage = { dispatchId };
    try {
      await queue.send(DELIVER_TOPIC, message, {
        idempotencyKey: unique ? `${dispatchId}:${attempt}:${Date.now()}` : `${dispatchId}:${attempt}`,
        ...(delaySeconds > 0 ? { delaySeconds } : {}),
      });
      sent.deliver++;
      return true;
    } catch (error) {
      log.warn({ err: error, dispatchId }, "deliver message not sent; the sweep resends it");
      return false;
    }
  }

  return {
    name: "vercel",
    sent,
    sendDeliverMessage,
    async enqueueRoute(tx, message: RouteMessage) {
      // Left alone by the sweep for a while: the forward after commit normally carries it first.
      return { message, jobId: await enqueueRouteJob(tx, message, { notBeforeMs: forwardGraceMs }) };
    },
    async routeCommitted({ message, jobId }) {
      try {
        // The event id is the idempotency key: a sweep that sends it again is not doubled.
        await queue.send(ROUTE_TOPIC, message, { idempotencyKey: message.eventId });
      } catch (error) {
        // Due now for the sweep: the grace was only for this forward.
        sent.fallback++;
        await retryRouteJob(database, jobId, 0, errorFacts(error).message);
        throw error;
      }
      sent.route++;
      await deleteRouteJobs(database, [jobId]);
    },
    async sendDeliver(dispatchIds) {
      const results = await Promise.all(dispatchIds.map((id) => sendDeliverMessage(id, 1, 0)));
      const carried = dispatchIds.filter((_, i) => results[i]);
      await markDispatchesQueued(database, carried, DELIVER_MESSAGE_GRACE_MS);
    },
  };
}
