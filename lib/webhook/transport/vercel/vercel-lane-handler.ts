import type { MessageMetadata, RetryDirective } from "@vercel/queue";
import { backoffMs } from "../../../backoff.ts";
import type { Database } from "../../../db/client.ts";
import { claimDispatches, forgetInFlight, type InFlightCaps } from "../../../db/sql/claim-dispatches.ts";
import { recordPoisonMessage } from "../../../db/sql/poison-messages.ts";
import type { BreakerRule } from "../../../db/sql/record-attempts.ts";
import { clearDispatchesQueued, dispatchState } from "../../../db/sql/queued-dispatches.ts";
import type { Logger } from "../../../log/logger.ts";
import type { Mailer } from "../../../mail/smtp-mailer.ts";
import { randomBase64url } from "../../../random-id.ts";
import { PoisonMessageError } from "../../outbound/webhook-message-errors.ts";
import { attemptClaimed, recordResults } from "../../outbound/webhook-out-deliver.consumer.ts";
import type { DeliverDeps } from "../../outbound/webhook-out-deliver.handler.ts";
import {
  DELIVER_TOPIC,
  deliverMessageSchema,
  ROUTE_TOPIC,
  type DeliverMessage,
} from "../../outbound/webhook-out-queue-registrations.ts";
import { consumeRouteMessage } from "../../outbound/webhook-out-route.consumer.ts";
import { LANE_BACKOFF } from "../../outbound/webhook-retry-policy.ts";
import { LANE_QUEUE, lookAgainPlan, type VercelLaneTimings } from "./vercel-queue-limits.ts";
import type { VercelTransport } from "./vercel-transport.ts";

/** Handle the same message again later: it came early, a cap held it back, or its route failed. */
class LookAgainError extends Error {
  override name = "LookAgainError";
  readonly afterSeconds: number;
  constructor(afterSeconds: number, reason: string) {
    super(reason);
    this.afterSeconds = afterSeconds;
  }
}

export interface VercelLaneDeps {
  database: Database;
  transport: VercelTransport;
  deliver: DeliverDeps;
  logger: Logger;
  caps: InFlightCaps;
  breaker: BreakerRule;
  /** The message's visibility and the dispatch's lease, tied to the function's maxDuration. */
  timings: VercelLaneTimings;
  /** Owners' e-mail, when SMTP is configured. */
  mailer?: Mailer | undefined;
  /** The clock a message's expiry is judged by (the emulator's, in tests). */
  now?: () => number;
}

/**
 * Never leaves the backoff to the platform: poison is acknowledged, a message
 * that must be looked at again waits what it was told, and anything else
 * (the database down) backs off per LANE_BACKOFF.queueMessage — none longer
 * than the service's longest visibility change.
 */
export function laneRetryDirective(error: unknown, metadata: Pick<MessageMetadata, "deliveryCount">): RetryDirective {
  if (error instanceof PoisonMessageError) return { acknowledge: true };
  const afterSeconds =
    error instanceof LookAgainError
      ? error.afterSeconds
      : Math.round(backoffMs(LANE_BACKOFF.queueMessage, metadata.deliveryCount - 1) / 1_000);
  return { afterSeconds: Math.min(Math.max(1, afterSeconds), LANE_QUEUE.maxLookAgainSeconds) };
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
  const now = deps.now ?? Date.now;
  const consumer = {
    database,
    deliver: deps.deliver,
    logger,
    breaker: deps.breaker,
    mailer: deps.mailer,
    sweepersListen: false,
  };

  async function consumeRoute(message: unknown, metadata: MessageMetadata): Promise<void> {
    const outcome = await consumeRouteMessage({ database, transport, logger }, message, metadata.deliveryCount);
    if (outcome.kind === "retry") throw new LookAgainError(Math.ceil(outcome.delayMs / 1_000), outcome.reason);
  }

  async function consumeDeliver(raw: unknown, metadata: MessageMetadata): Promise<void> {
    const parsed = deliverMessageSchema.safeParse(raw);
    if (!parsed.success) {
      await recordPoisonMessage(database, DELIVER_TOPIC, raw, parsed.error.message);
      throw new PoisonMessageError(parsed.error.message);
    }
    const message = parsed.data;
    // One invocation, one worker: a message the queue hands out twice at once must not share a row of the
    // in-flight book (the second, taking nothing, would delete the first's).
    const workerId = `vercel/${metadata.messageId}/${randomBase64url(6)}`;
    const claim = await claimDispatches(database, {
      workerId,
      limit: 1,
      leaseMs: deps.timings.leaseMs,
      caps: deps.caps,
      onlyId: message.dispatchId,
    });
    const [dispatch] = claim.dispatches;
    if (!dispatch) return settleUnclaimed(message, claim.waitMs, metadata);
    const result = await attemptClaimed(consumer, dispatch);
    await recordResults(consumer, workerId, [result]);
    // Its one attempt is over: out of the in-flight book now rather than when its lease runs out.
    await forgetInFlight(database, workerId);
    // Sent after the record, for the row as recorded: it cannot arrive before the row is due.
    if (result.status === "error" && result.retryInMs !== null) await transport.sendDeliver([dispatch.id]);
  }

  /**
   * Acknowledges a message that is spent (its dispatch is finished or its
   * attempt was made) or whose webhook is paused; otherwise looks again when
   * the row falls due, a lease on it ends, or a cap, a rate limit or an open
   * circuit breaker lets it through — in hops no longer than the service
   * allows, and from a fresh message when this one would expire first.
   */
  async function settleUnclaimed(message: DeliverMessage, waitMs: number | null, metadata: MessageMetadata) {
    const state = await dispatchState(database, message.dispatchId);
    if (!state || state.status === "success" || state.status === "exhausted") return;
    const namesAttempt = message.run !== undefined && message.attempt !== undefined;
    if (namesAttempt && (message.run !== state.run || message.attempt !== state.attempt)) return;
    if (!state.webhookActive) {
      // Re-enabling the webhook makes the sweeper send it again.
      await clearDispatchesQueued(database, [state.id]);
      return;
    }
    const wait = Math.max(state.dueInMs, state.leaseLeftMs, waitMs ?? 0);
    const plan = lookAgainPlan(wait, metadata, now());
    if ("afterSeconds" in plan) throw new LookAgainError(plan.afterSeconds, `dispatch ${state.id} held back`);
    const unsent = await transport.sendDeliverMessages([state], { fresh: true });
    // Not taken: this message stays, backing off like any other failure.
    if (unsent.length > 0) throw new Error(`dispatch ${state.id}: the queue refused its fresh message`);
  }

  return transport.queue.handleCallback(
    async (message, metadata) => {
      if (metadata.topicName === ROUTE_TOPIC) await consumeRoute(message, metadata);
      else if (metadata.topicName === DELIVER_TOPIC) await consumeDeliver(message, metadata);
      else {
        await recordPoisonMessage(database, metadata.topicName, message, "no consumer for this topic");
        throw new PoisonMessageError(`no consumer for topic ${metadata.topicName}`);
      }
    },
    { visibilityTimeoutSeconds: deps.timings.visibilitySeconds, retry: laneRetryDirective },
  );
}
