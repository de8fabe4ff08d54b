import type { MessageMetadata, QueueClient, RetryDirective } from "@vercel/queue";
import type { Database } from "../../../db/client.ts";
import type { Mailer } from "../../../mail/smtp-mailer.ts";
import { claimDispatches } from "../../../db/sql/claim-dispatches.ts";
import { clearDispatchQueued, dispatchState } from "../../../db/sql/queued-dispatches.ts";
import { recordPoisonMessage } from "../../../db/sql/poison-messages.ts";
import { recordAttempts } from "../../../db/sql/record-attempts.ts";
import { attemptDispatch, type DeliverDeps } from "../../outbound/webhook-out-deliver.handler.ts";
import { PoisonMessageError } from "../../outbound/webhook-message-errors.ts";
import {
  DELIVER_TOPIC,
  deliverMessageSchema,
  ROUTE_TOPIC,
  routeMessageSchema,
} from "../../outbound/webhook-out-queue-registrations.ts";
import { handleRouteMessage } from "../../outbound/webhook-out-route.handler.ts";
import { applyAttemptConsequences } from "../../outbound/webhook-owner-notifier.ts";
import type { VercelTransport } from "./vercel-transport.ts";

/** The message came before its dispatch is due (clock skew, an early redelivery): look again later. */
class NotYetDueError extends Error {
  override name = "NotYetDueError";
  readonly afterSeconds: number;
  constructor(afterSeconds: number) {
    super(`dispatch not due for ${afterSeconds} s`);
    this.afterSeconds = afterSeconds;
  }
}

export interface VercelLaneDeps {
  database: Database;
  transport: VercelTransport;
  deliver: DeliverDeps;
  queue: Pick<QueueClient, "handleCallback">;
  /** Longer than the delivery deadline, so a message is never redelivered mid-attempt. */
  visibilityTimeoutSeconds: number;
  /** Owners' e-mail, when SMTP is configured. */
  mailer?: Mailer | undefined;
}

/**
 * Never leaves the backoff to the platform: poison is acknowledged, a message
 * that came early waits exactly what is left, and anything else (the
 * database down) backs off exponentially up to 5 minutes.
 */
export function laneRetryDirective(error: unknown, metadata: Pick<MessageMetadata, "deliveryCount">): RetryDirective {
  if (error instanceof PoisonMessageError) return { acknowledge: true };
  if (error instanceof NotYetDueError) return { afterSeconds: error.afterSeconds };
  return { afterSeconds: Math.min(300, 5 * 2 ** Math.max(0, metadata.deliveryCount - 1)) };
}

/**
 * The `webhook-out` lane as a Vercel Queues push consumer of both topics:
 * `(Request) => Promise<Response>`, for the lane's own function.
 */
export function createVercelLaneHandler(deps: VercelLaneDeps): (request: Request) => Promise<Response> {
  const { database, transport } = deps;

  async function consumeRoute(message: unknown): Promise<void> {
    const parsed = routeMessageSchema.safeParse(message);
    if (!parsed.success) throw new PoisonMessageError(parsed.error.message);
    await handleRouteMessage({ database, transport }, parsed.data);
  }

  async function consumeDeliver(message: unknown, metadata: MessageMetadata): Promise<void> {
    const parsed = deliverMessageSchema.safeParse(message);
    if (!parsed.success) throw new PoisonMessageError(parsed.error.message);
    const { dispatchId } = parsed.data;
    const workerId = `vercel/${metadata.messageId}`;
    const [dispatch] = await claimDispatches(database, {
      workerId,
      limit: 1,
      leaseMs: deps.visibilityTimeoutSeconds * 1_000,
      onlyIds: [dispatchId],
    });
    if (!dispatch) return settleUnclaimed(dispatchId);
    const result = await attemptDispatch(deps.deliver, dispatch);
    await recordAttempts(database, workerId, [result]);
    if (result.gone || result.status === "exhausted") await applyAttemptConsequences(database, [result], deps.mailer);
    if (result.status === "error" && result.retryInMs !== null) {
      // Sent after the record, so the message cannot arrive before the row is due.
      const sent = await transport.sendDeliverMessage(dispatch.id, dispatch.attempt + 1, result.retryInMs);
      if (!sent) await clearDispatchQueued(database, dispatch.id);
    }
  }

  /** Acknowledges a message whose dispatch is done, held elsewhere or paused; waits for one not yet due. */
  async function settleUnclaimed(dispatchId: string): Promise<void> {
    const state = await dispatchState(database, dispatchId);
    if (!state || state.status === "success" || state.status === "exhausted" || state.leased) return;
    if (!state.webhookActive) {
      // Re-enabling the webhook makes the sweeper send it again.
      await clearDispatchQueued(database, dispatchId);
      return;
    }
    if (state.dueInMs > 0) throw new NotYetDueError(Math.ceil(state.dueInMs / 1_000));
  }

  return deps.queue.handleCallback(
    async (message, metadata) => {
      try {
        if (metadata.topicName === ROUTE_TOPIC) await consumeRoute(message);
        else if (metadata.topicName === DELIVER_TOPIC) await consumeDeliver(message, metadata);
        else throw new PoisonMessageError(`no consumer for topic ${metadata.topicName}`);
      } catch (error) {
        if (error instanceof PoisonMessageError) {
          await recordPoisonMessage(database, metadata.topicName, message, error.message);
        }
        throw error;
      }
    },
    { visibilityTimeoutSeconds: deps.visibilityTimeoutSeconds, retry: laneRetryDirective },
  );
}
