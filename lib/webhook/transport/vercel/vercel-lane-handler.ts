import type { MessageMetadata, QueueClient, RetryDirective } from "@vercel/queue";
import { backoffMs } from "../../../backoff.ts";
import type { Database } from "../../../db/client.ts";
import { claimDispatches, type InFlightCaps } from "../../../db/sql/claim-dispatches.ts";
import { recordPoisonMessage } from "../../../db/sql/poison-messages.ts";
import { clearDispatchQueued, dispatchState } from "../../../db/sql/queued-dispatches.ts";
import type { Logger } from "../../../log/logger.ts";
import type { Mailer } from "../../../mail/smtp-mailer.ts";
import { PoisonMessageError } from "../../outbound/webhook-message-errors.ts";
import { attemptClaimed, recordResults } from "../../outbound/webhook-out-deliver.consumer.ts";
import type { DeliverDeps } from "../../outbound/webhook-out-deliver.handler.ts";
import { DELIVER_TOPIC, deliverMessageSchema, ROUTE_TOPIC } from "../../outbound/webhook-out-queue-registrations.ts";
import { consumeRouteMessage } from "../../outbound/webhook-out-route.consumer.ts";
import { LANE_BACKOFF } from "../../outbound/webhook-retry-policy.ts";
import type { VercelTransport } from "./vercel-transport.ts";

/** Handle the same message again later: it came early, a cap held it back, or its route failed. */
class LookAgainError extends Error {
  override name = "LookAgainError";
  readonly afterSeconds: number;
  constructor(afterMs: number, reason: string) {
    super(reason);
    this.afterSeconds = Math.max(1, Math.ceil(afterMs / 1_000));
  }
}

export interface VercelLaneDeps {
  database: Database;
  transport: VercelTransport;
  deliver: DeliverDeps;
  logger: Logger;
  caps: InFlightCaps;
  queue: Pick<QueueClient, "handleCallback">;
  /** Longer than the delivery deadline, so a message is never redelivered mid-attempt. */
  visibilityTimeoutSeconds: number;
  /** Owners' e-mail, when SMTP is configured. */
  mailer?: Mailer | undefined;
}

/**
 * Never leaves the backoff to the platform: poison is acknowledged, a message
 * that must be looked at again waits exactly what it was told, and anything
 * else (the database down) backs off per LANE_BACKOFF.queueMessage.
 */
export function laneRetryDirective(error: unknown, metadata: Pick<MessageMetadata, "deliveryCount">): RetryDirective {
  if (error instanceof PoisonMessageError) return { acknowledge: true };
  if (error instanceof LookAgainError) return { afterSeconds: error.afterSeconds };
  return { afterSeconds: Math.round(backoffMs(LANE_BACKOFF.queueMessage, metadata.deliveryCount - 1) / 1_000) };
}

/**
 * The `webhook-out` lane as a Vercel Queues push consumer of both topics,
 * `(Request) => Promise<Response>` for the lane's own function. It only
 * carries messages: routing and delivering are the shared consumers', with
 * the same behaviour as on the postgres transport.
 */
export function createVercelLaneHandler(deps: VercelLaneDeps): (request: Request) => Promise<Response> {
  const { database, transport } = deps;
  const logger = deps.logger.child({ component: "lane" });

  async function consumeRoute(message: unknown, metadata: MessageMetadata): Promise<void> {
    const outcome = await consumeRouteMessage({ database, transport, logger }, message, metadata.deliveryCount);
    if (outcome.kind === "retry") throw new LookAgainError(outcome.delayMs, outcome.reason);
  }

  async function consumeDeliver(message: unknown, metadata: MessageMetadata): Promise<void> {
    const parsed = deliverMessageSchema.safeParse(message);
    if (!parsed.success) {
      await recordPoisonMessage(database, DELIVER_TOPIC, message, parsed.error.message);
      throw new PoisonMessageError(parsed.error.message);
    }
    const { dispatchId } = parsed.data;
    const workerId = `vercel/${metadata.messageId}`;
    const claim = await claimDispatches(database, {
      workerId,
      limit: 1,
      leaseMs: deps.visibilityTimeoutSeconds * 1_000,
      caps: deps.caps,
      onlyId: dispatchId,
    });
    const [dispatch] = claim.dispatches;
    if (!dispatch) return settleUnclaimed(dispatchId, claim.waitMs);
    const result = await attemptClaimed({ database, deliver: deps.deliver, logger, mailer: deps.mailer }, dispatch);
    await recordResults({ database, logger, mailer: deps.mailer }, workerId, [result]);
    if (result.status === "error" && result.retryInMs !== null) {
      // Sent after the record, so the message cannot arrive before the row is due.
      const sent = await transport.sendDeliverMessage(dispatch.id, dispatch.attempt + 1, result.retryInMs);
      if (!sent) await clearDispatchQueued(database, dispatch.id);
    }
  }

  /**
   * Acknowledges a message whose dispatch is done, held by another attempt or
   * paused; looks again later at one not yet due, or held back by a cap, a
   * rate limit or an open circuit breaker.
   */
  async function settleUnclaimed(dispatchId: string, waitMs: number | null): Promise<void> {
    const state = await dispatchState(database, dispatchId);
    if (!state || state.status === "success" || state.status === "exhausted" || state.leased) return;
    if (!state.webhookActive) {
      // Re-enabling the webhook makes the sweeper send it again.
      await clearDispatchQueued(database, dispatchId);
      return;
    }
    throw new LookAgainError(Math.max(state.dueInMs, waitMs ?? 0), `dispatch ${dispatchId} held back`);
  }

  return deps.queue.handleCallback(
    async (message, metadata) => {
      if (metadata.topicName === ROUTE_TOPIC) await consumeRoute(message, metadata);
      else if (metadata.topicName === DELIVER_TOPIC) await consumeDeliver(message, metadata);
      else {
        await recordPoisonMessage(database, metadata.topicName, message, "no consumer for this topic");
        throw new PoisonMessageError(`no consumer for topic ${metadata.topicName}`);
      }
    },
    { visibilityTimeoutSeconds: deps.visibilityTimeoutSeconds, retry: laneRetryDirective },
  );
}
