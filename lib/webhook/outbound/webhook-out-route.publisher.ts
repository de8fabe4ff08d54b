import type { CatalogueEntry } from "../catalogue/catalogue-entry.ts";
import { catalogueByRoute } from "../catalogue/webhook-event-catalogue.ts";
import type { WebhookTransport } from "../transport/webhook-transport.ts";
import { newEventId } from "./webhook-event-body.ts";
import type { SubscriptionCache } from "./webhook-subscription-cache.ts";

/** A 2xx answer of a mutating route, as `ok()` sees it. */
export interface ApiTransaction {
  method: string;
  /** The matched route template, e.g. `/v3/payment-debts/:id`. */
  route: string;
  params: Record<string, string>;
  body: unknown;
}

export interface ApiEventPublisher {
  /** `ENABLE_API_EVENT_QUEUE`: when false, `ok()` never calls `publish`. */
  readonly enabled: boolean;
  /** Publishes one transaction if anyone listens. Never throws: failures are logged and counted. */
  publish(transaction: ApiTransaction): Promise<void>;
  /** Resolves once every publish started so far has settled (tests and graceful shutdown). */
  settled(): Promise<void>;
  readonly stats: { considered: number; published: number; unsubscribed: number; failed: number };
}

/**
 * `publishApiTransactionEvent`: derives the catalogue event from method and
 * route, checks the subscribed set, and only then sends a
 * `webhook-out-route` message. Mutations nobody listens to cost a Map lookup
 * and a Set lookup, and write nothing.
 */
export function createApiEventPublisher(deps: {
  enabled: boolean;
  livemode: boolean;
  subscriptions: SubscriptionCache;
  transport: WebhookTransport;
}): ApiEventPublisher {
  const inFlight = new Set<Promise<void>>();
  const stats = { considered: 0, published: 0, unsubscribed: 0, failed: 0 };

  async function publishApiTransactionEvent(transaction: ApiTransaction): Promise<void> {
    stats.considered++;
    const entry = catalogueByRoute(transaction.method, transaction.route);
    if (!entry) return;
    if (!(await deps.subscriptions.has(entry.internal))) {
      stats.unsubscribed++;
      return;
    }
    const resourceId = resourceIdOf(entry, transaction);
    if (!resourceId)
      throw new Error(`${entry.internal}: no resource id at ${entry.idFrom.source}.${entry.idFrom.name}`);
    await deps.transport.sendRoute({
      eventId: newEventId(),
      type: entry.internal,
      resourceId,
      occurredAt: new Date().toISOString(),
      livemode: deps.livemode,
    });
    stats.published++;
  }

  return {
    enabled: deps.enabled,
    publish(transaction) {
      const promise = publishApiTransactionEvent(transaction).catch((error) => {
        stats.failed++;
        console.error(`[publish] ${transaction.method} ${transaction.route} failed`, error);
      });
      inFlight.add(promise);
      void promise.finally(() => inFlight.delete(promise));
      return promise;
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
