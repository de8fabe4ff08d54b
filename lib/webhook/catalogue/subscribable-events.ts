import { and, eq, inArray } from "drizzle-orm";
import { ApiError } from "../../api/problem.ts";
import type { Database } from "../../db/client.ts";
import { webhookEventType } from "../../db/schema.ts";

/**
 * Checks the event types a webhook asks for against the database's synced
 * catalogue: each must be a type that is not deprecated (`*` means every
 * one). Returns them without duplicates; throws a 422 ApiError naming the
 * first unknown or deprecated event and its index in `events`.
 */
export async function assertSubscribableEvents(database: Database, events: readonly string[]): Promise<string[]> {
  const unique = [...new Set(events)];
  const named = unique.filter((name) => name !== "*");
  const active =
    named.length === 0
      ? new Set<string>()
      : new Set(
          (
            await database.db
              .select({ internal: webhookEventType.internal })
              .from(webhookEventType)
              .where(and(inArray(webhookEventType.internal, named), eq(webhookEventType.deprecated, false)))
          ).map((row) => row.internal),
        );
  for (const name of unique) {
    if (name === "*" || active.has(name)) continue;
    const index = events.indexOf(name);
    const message = `${name} is not an event type you can subscribe to (GET /v3/webhook-event-types lists them)`;
    throw new ApiError(422, "Unprocessable Content", `events[${index}]: ${message}`, {
      errors: [{ field: `events[${index}]`, message }],
    });
  }
  return unique;
}
