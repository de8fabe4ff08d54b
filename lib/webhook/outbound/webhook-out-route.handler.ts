import type { Database } from "../../db/client.ts";
import { insertDispatches, type RouteRule } from "../../db/sql/insert-dispatches.ts";
import { deleteRoutedJob } from "../../db/sql/route-jobs.ts";
import type { CatalogueEntry } from "../catalogue/catalogue-entry.ts";
import { CATALOGUE, catalogueByInternal } from "../catalogue/webhook-event-catalogue.ts";
import type { WebhookTransport } from "../transport/webhook-transport.ts";
import { PoisonMessageError } from "./webhook-message-errors.ts";
import type { RouteMessage } from "./webhook-out-queue-registrations.ts";

/**
 * The `webhook-out-route` consumer: in one statement resolves the owning
 * account, builds the thin body and inserts one pending dispatch per
 * matching webhook (`insertDispatches`), deletes the outbox row the message
 * was forwarded from (if any), then hands the new rows to the deliver topic. Safe to run twice for one message: rows are unique per
 * event x webhook. Throws PoisonMessageError for an event the catalogue does
 * not know (never retried); any other error is retryable.
 */
export async function handleRouteMessage(
  deps: { database: Database; transport: WebhookTransport },
  message: RouteMessage,
): Promise<string[]> {
  const entry = catalogueByInternal(message.type);
  if (!entry) throw new PoisonMessageError(`unknown event type ${message.type}`);
  const dispatchIds = await insertDispatches(deps.database, message, routeRule(entry));
  // Its dispatches exist: the outbox row it was forwarded from has done its work.
  if (message.outboxId !== undefined) await deleteRoutedJob(deps.database, message.outboxId, message.eventId);
  if (dispatchIds.length > 0) await deps.transport.sendDeliver(dispatchIds);
  return dispatchIds;
}

/** What routing needs of a catalogue entry: the body's `data.object` and the owner strategy. */
export function routeRule(entry: CatalogueEntry): RouteRule {
  return { object: entry.resource, owner: entry.owner };
}

/**
 * Every catalogue event's `RouteRule`, by internal name, as JSON: what the
 * postgres lane's step routes by (a type it lacks goes to the consumer
 * above, which records it as poison).
 */
export const ROUTE_RULES_JSON = JSON.stringify(
  Object.fromEntries(CATALOGUE.map((entry) => [entry.internal, routeRule(entry)])),
);
