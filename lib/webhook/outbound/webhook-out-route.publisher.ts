import type { Database } from "../../db/client.ts";
import type { Logger } from "../../log/logger.ts";
import { endSpan, SpanKind, type Span, type Tracing } from "../../observability/tracing.ts";
import type { CatalogueEntry } from "../catalogue/catalogue-entry.ts";
import { catalogueByRoute } from "../catalogue/webhook-event-catalogue.ts";
import type { RouteReceipt, WebhookTransport } from "../transport/webhook-transport.ts";
import { newEventId } from "./webhook-event-body.ts";
import type { RouteMessage } from "./webhook-out-queue-registrations.ts";
import type { SubscriptionCache } from "./webhook-subscription-cache.ts";

/** A 2xx answer of a mutating route, as `ok()` recorded it. */
export interface ApiTransaction {
  method: string;
  /** The matched route template, e.g. `/v3/payment-debts/:id`. */
  route: string;
  params: Record<string, string>;
  body: unknown;
  /** With tracing on: the request span's `traceparent`, under which the event's publish span starts. */
  traceparent?: string | undefined;
}

export interface ApiEventPublisher {
  /** `ENABLE_API_EVENT_QUEUE`: when false, requests never ask the publisher anything. */
  readonly enabled: boolean;
  /**
   * The catalogue event a 2xx of `method route` emits, if anyone listens to
   * it; undefined otherwise, and then the request writes nothing for events
   * and needs no transaction of its own. Loads the subscribed set on first use.
   */
  subscribedEvent(method: string, route: string): Promise<CatalogueEntry | undefined>;
  /**
   * Writes the `webhook-out-route` message into `tx`, the mutation's own
   * transaction: the event exists if and only if the mutation commits, and
   * its owner is the resource's owner as the mutation left it.
   * Throws when it cannot (the request then fails rather than lose the event).
   */
  publish(tx: Database, entry: CatalogueEntry, transaction: ApiTransaction): Promise<RouteReceipt>;
  /**
   * Whether `publish` may be called before the statements that create the
   * event's resource (`lastStatements()`): its message is then written with
   * the COMMIT, after them, and reads the resource's owner as they left it.
   */
  publishesAhead(tx: Database): boolean;
  /**
   * After commit: lets the transport carry what was written (a wake-up, or a
   * forward to a queue, kept alive past the response with `waitUntil`).
   */
  committed(receipt: RouteReceipt): void;
  /** Resolves once every forward started so far has settled (tests and graceful shutdown). */
  settled(): Promise<void>;
  readonly stats: { considered: number; published: number; unsubscribed: number; failed: number };
}

/**
 * `publishApiTransactionEvent`, split around the mutation's commit: before
 * the handler runs, the route is looked up in the catalogue and the
 * subscribed set (a Map and a Set lookup for mutations nobody listens to);
 * inside its transaction the message is written; after commit the transport
 * carries it.
 */
export function createApiEventPublisher(deps: {
  enabled: boolean;
  livemode: boolean;
  subscriptions: SubscriptionCache;
  transport: WebhookTransport;
  logger: Logger;
  /** With tracing on: each publish is a span under the request's, and its `traceparent` travels with the event. */
  tracing?: Tracing | undefined;
  /** Keeps a forward alive past the response (`waitUntil` of `@vercel/functions`, given with the vercel transport). */
  waitUntil?: (promise: Promise<unknown>) => void;
}): ApiEventPublisher {
  const inFlight = new Set<Promise<void>>();
  const stats = { considered: 0, published: 0, unsubscribed: 0, failed: 0 };
  const log = deps.logger.child({ component: "publish" });

  return {
    enabled: deps.enabled,
    async subscribedEvent(method, route) {
      stats.considered++;
      const entry = catalogueByRoute(method, route);
      if (!entry) return undefined;
      if (await deps.subscriptions.has(entry.internal)) return entry;
      stats.unsubscribed++;
      return undefined;
    },
    async publish(tx, entry, transaction) {
      let span: Span | undefined;
      try {
        const resourceId = resourceIdOf(entry, transaction);
        if (!resourceId) {
          throw new Error(`${entry.internal}: no resource id at ${entry.idFrom.source}.${entry.idFrom.name}`);
        }
        const message: RouteMessage = {
          eventId: newEventId(),
          type: entry.internal,
          resourceId,
          occurredAt: new Date().toISOString(),
          livemode: deps.livemode,
        };
        span = deps.tracing?.start(`publish ${entry.internal}`, transaction.traceparent, {
          kind: SpanKind.PRODUCER,
          attributes: { "hooklane.event.type": entry.internal, "hooklane.event.id": message.eventId },
        });
        if (span) message.traceparent = deps.tracing!.traceparentOf(span);
        const receipt = await deps.transport.enqueueRoute(tx, message, entry);
        span?.end();
        return receipt;
      } catch (error) {
        stats.failed++;
        if (span) endSpan(span, "publish_failed");
        throw error;
      }
    },
    publishesAhead(tx) {
      return deps.transport.routesAtCommit && tx.pipelined;
    },
    committed(receipt) {
      stats.published++;
      const forward = deps.transport.routeCommitted(receipt).catch((error: unknown) => {
        // The outbox row stays; the transport's sweep carries it later.
        log.warn(
          { err: error, eventId: receipt.message.eventId },
          "forwarding a committed event failed; the sweep resends it",
        );
      });
      deps.waitUntil?.(forward);
      inFlight.add(forward);
      void forward.finally(() => inFlight.delete(forward));
    },
    async settled() {
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
    stats,
  };
}

function resourceIdOf(entry: CatalogueEntry, transaction: ApiTransaction): string | undefined {
  const { source, name } = entry.idFrom;
  const value =
    source === "param" ? transaction.params[name] : (transaction.body as Record<string, unknown> | null)?.[name];
  return typeof value === "string" || typeof value === "number" ? String(value) : undefined;
}
