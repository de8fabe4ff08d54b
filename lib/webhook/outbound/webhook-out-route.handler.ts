import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { insertDispatches } from "../../db/sql/insert-dispatches.ts";
import { catalogueByInternal } from "../catalogue/webhook-event-catalogue.ts";
import type { WebhookTransport } from "../transport/webhook-transport.ts";
import { resolveOwnerAccount } from "./webhook-account-resolver.ts";
import { buildEventBody } from "./webhook-event-body.ts";
import { PoisonMessageError } from "./webhook-message-errors.ts";
import type { RouteMessage } from "./webhook-out-queue-registrations.ts";

/**
 * The `webhook-out-route` consumer: resolves the owning account, inserts one
 * pending dispatch per matching webhook and hands the new rows to the
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
  const account = await resolveOwnerAccount(deps.database, entry.owner, message.resourceId);
  const payload = buildEventBody({
    id: message.eventId,
    type: message.type,
    created: message.occurredAt,
    livemode: message.livemode,
    object: entry.resource,
    resourceId: message.resourceId,
    account,
  });
  const dispatchIds = await insertDispatches(deps.database, {
    eventId: message.eventId,
    eventType: message.type,
    account,
    payload,
  });
  await analyzeAfterLargeFanOut(deps.database, dispatchIds.length);
  if (dispatchIds.length > 0) await deps.transport.sendDeliver(dispatchIds);
  return dispatchIds;
}

const LARGE_FAN_OUT = 1_000;
const ANALYZE_AT_MOST_EVERY_MS = 60_000;
const lastAnalyzed = new WeakMap<Database, number>();

/**
 * Without fresh statistics the claim plan scans every due row, and autovacuum
 * would only catch up later: a large fan-out refreshes them, at most once a
 * minute per process so no tenant can turn fan-outs into database load.
 */
async function analyzeAfterLargeFanOut(database: Database, inserted: number): Promise<void> {
  if (inserted < LARGE_FAN_OUT) return;
  const now = Date.now();
  if (now - (lastAnalyzed.get(database) ?? -Infinity) < ANALYZE_AT_MOST_EVERY_MS) return;
  lastAnalyzed.set(database, now);
  await database.rows(sql`analyze webhook_dispatch`);
}
