import { backoffMs } from "../../backoff.ts";
import type { Database } from "../../db/client.ts";
import { recordPoisonMessage } from "../../db/sql/poison-messages.ts";
import { errorFacts } from "../../log/error-facts.ts";
import type { Logger } from "../../log/logger.ts";
import type { LaneMetrics } from "../../metrics/lane-metrics.ts";
import type { WebhookTransport } from "../transport/webhook-transport.ts";
import { PoisonMessageError } from "./webhook-message-errors.ts";
import { ROUTE_TOPIC, routeMessageSchema } from "./webhook-out-queue-registrations.ts";
import { handleRouteMessage } from "./webhook-out-route.handler.ts";
import { LANE_BACKOFF } from "./webhook-retry-policy.ts";
import { endSpan, SpanKind, type Tracing } from "../../observability/tracing.ts";

export type RouteOutcome =
  | { kind: "routed"; dispatches: number }
  /** Recorded in `webhook_poison_message`: acknowledge it, never retry. */
  | { kind: "poison" }
  /** Try the same message again after `delayMs`. */
  | { kind: "retry"; delayMs: number; reason: string };

/**
 * The `webhook-out-route` consumer, whichever transport carried the message:
 * parse it, route it, and decide what becomes of it. A message that fails
 * its schema or names an unknown event is poison (recorded, acknowledged);
 * any other failure is retried after LANE_BACKOFF.routeJob for its
 * `deliveries` so far. The outcome is counted in `metrics` when given.
 * Never throws, except when the poison record itself cannot be written (the
 * database is down: the message stays).
 */
export async function consumeRouteMessage(
  deps: {
    database: Database;
    transport: WebhookTransport;
    logger: Logger;
    metrics?: LaneMetrics | undefined;
    /** With tracing on: routing an event that carries a trace is a span in it. */
    tracing?: Tracing | undefined;
  },
  message: unknown,
  deliveries: number,
): Promise<RouteOutcome> {
  const outcome = await routeOnce(deps, message, deliveries);
  deps.metrics?.routed(outcome.kind, outcome.kind === "routed" ? outcome.dispatches : 0);
  return outcome;
}

async function routeOnce(
  deps: { database: Database; transport: WebhookTransport; logger: Logger; tracing?: Tracing | undefined },
  message: unknown,
  deliveries: number,
): Promise<RouteOutcome> {
  const parsed = routeMessageSchema.safeParse(message);
  const traceparent = parsed.success ? parsed.data.traceparent : undefined;
  const span =
    traceparent && deps.tracing
      ? deps.tracing.start(`route ${parsed.data!.type}`, traceparent, {
          kind: SpanKind.CONSUMER,
          attributes: { "hooklane.event.type": parsed.data!.type, "hooklane.event.id": parsed.data!.eventId },
        })
      : undefined;
  try {
    if (!parsed.success) throw new PoisonMessageError(parsed.error.message);
    const dispatches = (await handleRouteMessage(deps, parsed.data)).length;
    span?.setAttribute("hooklane.dispatches", dispatches);
    span?.end();
    return { kind: "routed", dispatches };
  } catch (error) {
    if (span) endSpan(span, error instanceof PoisonMessageError ? "poison" : "route_failed");
    if (error instanceof PoisonMessageError) {
      await recordPoisonMessage(deps.database, ROUTE_TOPIC, message, error.message);
      deps.logger.warn({ reason: error.message.slice(0, 300) }, "poison route message recorded");
      return { kind: "poison" };
    }
    const delayMs = backoffMs(LANE_BACKOFF.routeJob, deliveries - 1);
    if (!deps.database.outage.report(error)) {
      deps.logger.error({ err: error, retryInMs: delayMs }, "route message failed; retrying");
    }
    return { kind: "retry", delayMs, reason: errorFacts(error).message };
  }
}
