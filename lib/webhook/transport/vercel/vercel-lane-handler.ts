import type { MessageMetadata, RetryDirective } from "@vercel/queue";
import { backoffMs } from "../../../backoff.ts";
import type { Database } from "../../../db/client.ts";
import {
  claimDispatches,
  forgetInFlight,
  markWaiting,
  type ClaimedDispatch,
  type InFlightCaps,
} from "../../../db/sql/claim-dispatches.ts";
import { recordPoisonMessage } from "../../../db/sql/poison-messages.ts";
import { holdRouteJob } from "../../../db/sql/route-jobs.ts";
import type { BreakerRule } from "../../../db/sql/record-attempts.ts";
import {
  carryDispatch,
  clearDispatchesQueued,
  dispatchState,
  nextDueDispatch,
} from "../../../db/sql/queued-dispatches.ts";
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
import { recordSpan } from "../../../observability/tracing.ts";
import { LANE_BACKOFF } from "../../outbound/webhook-retry-policy.ts";
import { HELD_LOOK_AGAIN, LANE_QUEUE, lookAgainPlan, type VercelLaneTimings } from "./vercel-queue-limits.ts";
import { DELIVER_MESSAGE_GRACE_MS, ROUTE_MESSAGE_CHECK_MS, type VercelTransport } from "./vercel-transport.ts";

/** A lease with no longer than this left is waited for; a longer one's holder records its dispatch and sends what follows. */
const SHORT_LEASE_MS = 5_000;
/** The longest an invocation waits for its webhook's next rate token before taking the next attempt itself. */
const RATE_WAIT_MS = 1_000;

/** The outbox row a route message names, if it names one. */
function outboxIdOf(message: unknown): number | undefined {
  const outboxId = (message as { outboxId?: unknown } | null)?.outboxId;
  return typeof outboxId === "number" && Number.isSafeInteger(outboxId) && outboxId > 0 ? outboxId : undefined;
}

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

  /**
   * Routes a message; one that fails is tried again after LANE_BACKOFF.routeJob, its outbox row left alone by
   * the sweep meanwhile. One that would expire before its next try is recorded as poison and acknowledged: its
   * outbox row stays, and the sweep forwards the event again after ROUTE_MESSAGE_CHECK_MS (and POST
   * /v3/poison-messages/:id/replay sends it at once).
   */
  async function consumeRoute(message: unknown, metadata: MessageMetadata): Promise<void> {
    const outcome = await consumeRouteMessage(
      { database, transport, logger, tracing: deps.deliver.tracing },
      message,
      metadata.deliveryCount,
    );
    if (outcome.kind !== "retry") return;
    const outboxId = outboxIdOf(message);
    const plan = lookAgainPlan(outcome.delayMs, metadata, now());
    if ("replace" in plan) {
      const reason = `failed until its retention ran out: ${outcome.reason}`;
      await recordPoisonMessage(database, ROUTE_TOPIC, message, reason);
      if (outboxId !== undefined) await holdRouteJob(database, outboxId, ROUTE_MESSAGE_CHECK_MS, reason);
      logger.error({ outboxId, reason: outcome.reason.slice(0, 300) }, "route message expiring: recorded as poison");
      throw new PoisonMessageError(reason);
    }
    if (outboxId !== undefined) {
      // Best effort: with the database down the row is only forwarded again later, which routing tolerates.
      await holdRouteJob(database, outboxId, plan.afterSeconds * 1_000 + ROUTE_MESSAGE_CHECK_MS, outcome.reason).catch(
        () => {},
      );
    }
    throw new LookAgainError(plan.afterSeconds, outcome.reason);
  }

  async function consumeDeliver(raw: unknown, metadata: MessageMetadata): Promise<void> {
    // The function's own clock, not the queue's: it bounds how long this invocation goes on.
    const started = Date.now();
    const parsed = deliverMessageSchema.safeParse(raw);
    if (!parsed.success) {
      await recordPoisonMessage(database, DELIVER_TOPIC, raw, parsed.error.message);
      throw new PoisonMessageError(parsed.error.message);
    }
    const message = parsed.data;
    // One invocation, one worker: a message the queue hands out twice at once must not share a row of the
    // in-flight book (the second, taking nothing, would delete the first's).
    const workerId = `vercel/${metadata.messageId}/${randomBase64url(6)}`;
    const claim = await claimOne(workerId, message.dispatchId);
    const [dispatch] = claim.dispatches;
    if (!dispatch) return settleUnclaimed(message, claim.waitMs, metadata);
    await deliverInTurn(workerId, dispatch, started);
  }

  const claimOne = async (workerId: string, dispatchId: string) => {
    const start = new Date();
    const claim = await claimDispatches(database, {
      workerId,
      limit: 1,
      leaseMs: deps.timings.leaseMs,
      caps: deps.caps,
      onlyId: dispatchId,
    });
    const { tracing } = deps.deliver;
    const claimed = claim.dispatches[0];
    if (tracing && claimed?.traceparent) {
      const attributes = { "hooklane.webhook.id": claimed.webhookId, "hooklane.dispatch.id": claimed.id };
      recordSpan(tracing, `claim ${claimed.eventType}`, claimed.traceparent, { start, end: new Date() }, attributes);
    }
    return claim;
  };

  /**
   * Attempts the dispatch, then the webhook's next due ones in turn while the
   * function has time for another attempt: the messages held back meanwhile
   * for this webhook's caps were acknowledged, and this invocation takes
   * their dispatches instead. Out of time, it hands the next one on in a
   * fresh message. It stops where its webhook's breaker opened or others
   * hold the webhook's slots (they go on in turn); a rate limit's next token
   * within a second is waited for.
   */
  async function deliverInTurn(workerId: string, first: ClaimedDispatch, started: number): Promise<void> {
    let dispatch: ClaimedDispatch | undefined = first;
    while (dispatch) {
      const result = await attemptClaimed(consumer, dispatch);
      await recordResults(consumer, workerId, [result]);
      // Sent after the record, for the row as recorded: it cannot arrive before the row is due.
      if (result.status === "error" && result.retryInMs !== null) await transport.sendDeliver([dispatch.id]);
      dispatch = await nextInTurn(workerId, dispatch.webhookId, started);
    }
  }

  /** The webhook's next due dispatch, claimed, when this invocation is to take it; it leaves no book row otherwise. */
  async function nextInTurn(
    workerId: string,
    webhookId: string,
    started: number,
  ): Promise<ClaimedDispatch | undefined> {
    for (;;) {
      // Out of the in-flight book before looking: a message held meanwhile for this webhook either saw this
      // worker there, and its dispatch is then among those looked at here, or did not, and looks again itself.
      await forgetInFlight(database, workerId);
      const nextId = await nextDueDispatch(database, webhookId);
      if (!nextId) return undefined;
      if (Date.now() - started > deps.timings.continueWithinMs) {
        await transport.handOver([nextId]);
        return undefined;
      }
      const claim = await claimOne(workerId, nextId);
      if (claim.dispatches[0]) return claim.dispatches[0];
      const state = await dispatchState(database, nextId);
      // Others at this webhook take it in turn; an open breaker waits for the sweep's probe.
      if (!state || state.webhookWorkers > 0 || state.breakerLeftMs > 0 || state.leaseLeftMs > 0) return undefined;
      const waitMs = claim.waitMs ?? Infinity;
      // Held by an origin's or an account's cap, or a token too far off: its own message looks again.
      if (waitMs > RATE_WAIT_MS || Date.now() + waitMs - started > deps.timings.continueWithinMs) return undefined;
      await markWaiting(database, workerId, webhookId, waitMs + RATE_WAIT_MS);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }

  /**
   * Settles a message whose dispatch could not be claimed, so that waiting
   * costs next to nothing: acknowledged when the dispatch is spent (finished,
   * or its attempt made), its webhook paused, a live lease holds it (its
   * holder records it and sends what follows), its webhook's breaker is open
   * (the sweep sends one probe when it lets one through, and a probe that
   * succeeds hands the rest on), or an invocation at its webhook takes it
   * next. Held back by an earlier event of its resource (`resource`
   * ordering), it looks again after that one's next try, not every few
   * seconds. Otherwise it looks again when the dispatch falls due, a short lease
   * ends, or — held by a cap elsewhere or a rate limit — when its turn should
   * come, never sooner than a floor and with jitter; the sweep leaves a
   * dispatch alone while its message waits. Hops are no longer than the
   * service allows, and a message that would expire first is replaced.
   */
  async function settleUnclaimed(message: DeliverMessage, waitMs: number | null, metadata: MessageMetadata) {
    const state = await dispatchState(database, message.dispatchId);
    if (!state || state.status === "success" || state.status === "exhausted") return;
    const namesAttempt = message.run !== undefined && message.attempt !== undefined;
    if (namesAttempt && (message.run !== state.run || message.attempt !== state.attempt)) return;
    if (!state.webhookActive) {
      // Re-enabling the webhook, or its endpoint's consent, makes the sweeper send it again.
      await clearDispatchesQueued(database, [state.id]);
      return;
    }
    let lookAgainMs: number;
    if (state.dueInMs > 0 || (state.leaseLeftMs > 0 && state.leaseLeftMs <= SHORT_LEASE_MS)) {
      lookAgainMs = Math.max(state.dueInMs, state.leaseLeftMs);
    } else if (state.leaseLeftMs > 0) {
      return;
    } else if (state.breakerLeftMs > 0) {
      await clearDispatchesQueued(database, [state.id]);
      return;
    } else if (state.webhookWorkers > 0) {
      await carryDispatch(database, state.id, DELIVER_MESSAGE_GRACE_MS);
      return;
    } else if (state.orderingWaitMs !== null) {
      // An earlier event of its resource goes first: look again when that one is next tried (its success hands
      // this one on at once, through the invocation that made it), not every few seconds meanwhile.
      lookAgainMs =
        Math.max(HELD_LOOK_AGAIN.floorMs, state.orderingWaitMs + HELD_LOOK_AGAIN.floorMs) *
        (1 + Math.random() * HELD_LOOK_AGAIN.jitter);
    } else {
      const turnMs = state.rateLimit ? ((state.ahead + 1) / state.rateLimit) * 1_000 : HELD_LOOK_AGAIN.capMs;
      lookAgainMs =
        Math.max(HELD_LOOK_AGAIN.floorMs, waitMs ?? 0, turnMs) * (1 + Math.random() * HELD_LOOK_AGAIN.jitter);
    }
    const plan = lookAgainPlan(lookAgainMs, metadata, now());
    if ("afterSeconds" in plan) {
      // Carried by this message until it is back, and the grace after: the sweep sends no other meanwhile.
      if (state.dueInMs <= 0)
        await carryDispatch(database, state.id, plan.afterSeconds * 1_000 + DELIVER_MESSAGE_GRACE_MS);
      throw new LookAgainError(plan.afterSeconds, `dispatch ${state.id} held back`);
    }
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
