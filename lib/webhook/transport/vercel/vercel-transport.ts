import type { QueueClient } from "@vercel/queue";
import type { Database } from "../../../db/client.ts";
import { enqueueRouteJob } from "../../../db/sql/route-jobs.ts";
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
 * The Vercel Queues transport. A route message that cannot be sent lands in
 * `webhook_route_job`, the durable fallback the sweeper re-sends from, so the
 * API never loses an event to a queue outage. Deliver messages that cannot be
 * sent are only logged: the dispatch row is the commitment, and the sweeper
 * re-sends any due row no message carries.
 */
export function createVercelTransport(database: Database, queue: Pick<QueueClient, "send">): VercelTransport {
  const sent = { route: 0, deliver: 0, fallback: 0 };

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
      console.error(
        `[transport] deliver message for ${dispatchId} not sent (${(error as Error).message}); the sweeper will resend it`,
      );
      return false;
    }
  }

  return {
    name: "vercel",
    sent,
    sendDeliverMessage,
    async sendRoute(message: RouteMessage) {
      try {
        await queue.send(ROUTE_TOPIC, message, { idempotencyKey: message.eventId });
        sent.route++;
      } catch (error) {
        console.error(
          `[transport] ${ROUTE_TOPIC} unavailable (${(error as Error).message}); ${message.eventId} kept in the fallback`,
        );
        await enqueueRouteJob(database, message);
        sent.fallback++;
      }
    },
    async sendDeliver(dispatchIds) {
      const results = await Promise.all(dispatchIds.map((id) => sendDeliverMessage(id, 1, 0)));
      const carried = dispatchIds.filter((_, i) => results[i]);
      await markDispatchesQueued(database, carried, DELIVER_MESSAGE_GRACE_MS);
    },
  };
}
