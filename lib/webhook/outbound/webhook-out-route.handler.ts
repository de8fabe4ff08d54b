import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { insertDispatches, type RouteRule } from "../../db/sql/insert-dispatches.ts";
import type { CatalogueEntry } from "../catalogue/catalogue-entry.ts";
import { CATALOGUE, catalogueByInternal } from "../catalogue/webhook-event-catalogue.ts";
import type { WebhookTransport } from "../transport/webhook-transport.ts";
import { PoisonMessageError } from "./webhook-message-errors.ts";
import type { RouteMessage } from "./webhook-out-queue-registrations.ts";

/**
 * The `webhook-out-route` consumer: in one statement resolves the owning
 * account, builds the thin body and inserts one pending dispatch per
 * matching webhook (`insertDispatches`), then hands the new rows to the
 * deliver topic. Safe to run twice for one message: rows are unique per
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
  await analyzeAfterLargeFanOut(deps.database, dispatchIds.length);
  if (dispatchIds.length > 0) await deps.transport.sendDeliver(dispatchIds);
  return dispatchIds;
}

/** What routing needs of a catalogue entry: the body's `data.object` and the owner strategy. */
export function routeRule(entry: CatalogueEntry): RouteRule {
  return { object: entry.resource, owner: entry.owner };
}

/**
 * Every catalogue event's `RouteRule`, by internal name, as JSON: what the
 * postgres transport's route statement routes by (a type it lacks goes to
 * the consumer above, which records it as poison).
 */
export const ROUTE_RULES_JSON = JSON.stringify(
  Object.fromEntries(CATALOGUE.map((entry) => [entry.internal, routeRule(entry)])),
);

/** From this many new dispatches on, the table's statistics are refreshed before any claim is woken. */
export const LARGE_FAN_OUT = 1_000;
const ANALYZE_AT_MOST_EVERY_MS = 60_000;
const lastAnalyzed = new WeakMap<Database, number>();

/**
 * Without fresh statistics the claim plan scans every due row, and autovacuum
 * would only catch up later: a large fan-out refreshes them, at most once a
 * minute per process so no tenant can turn fan-outs into database load.
 */
export async function analyzeAfterLargeFanOut(database: Database, inserted: number): Promise<void> {
  if (inserted < LARGE_FAN_OUT) return;
  const now = Date.now();
  if (now - (lastAnalyzed.get(database) ?? -Infinity) < ANALYZE_AT_MOST_EVERY_MS) return;
  lastAnalyzed.set(database, now);
  await database.rows(sql`analyze webhook_dispatch`);
}
