import { and, eq, inArray } from "drizzle-orm";
import { ApiError } from "../../api/problem.ts";
import type { Database } from "../../db/client.ts";
import { webhookEventType } from "../../db/schema.ts";

/** Who a webhook hears: one account's events, or every account's and those of no account. */
export type WebhookAudience = "account" | "global";

/** A webhook of `audience` can hear events of this owner kind: `none` belongs to no account, so only global ones. */
export const hears = (audience: WebhookAudience, ownerKind: string): boolean =>
  audience === "global" || ownerKind !== "none";

/**
 * Checks the event types a webhook asks for against the database's synced
 * catalogue: each must be a type that is not deprecated (`*` means every
 * one) and that a webhook of `audience` can hear: an account webhook never
 * hears an event no account owns (a purge, a general address). Returns them
 * without duplicates; throws a 422 ApiError naming the first refused event,
 * its index in `events` and why.
 */
export async function assertSubscribableEvents(
  database: Database,
  events: readonly string[],
  audience: WebhookAudience,
): Promise<string[]> {
  const unique = [...new Set(events)];
  const named = unique.filter((name) => name !== "*");
  const ownerKinds =
    named.length === 0
      ? new Map<string, string>()
      : new Map(
          (
            await database.db
              .select({ internal: webhookEventType.internal, ownerKind: webhookEventType.ownerKind })
              .from(webhookEventType)
              .where(and(inArray(webhookEventType.internal, named), eq(webhookEventType.deprecated, false)))
          ).map((row) => [row.internal, row.ownerKind]),
        );
  for (const name of unique) {
    if (name === "*") continue;
    const ownerKind = ownerKinds.get(name);
    const message =
      ownerKind === undefined
        ? `${name} is not an event type you can subscribe to (GET /v3/webhook-event-types lists them)`
        : hears(audience, ownerKind)
          ? undefined
          : `${name} belongs to no account, so only global webhooks hear it; an account webhook subscribed to it would never receive one`;
    if (message === undefined) continue;
    const index = events.indexOf(name);
    throw new ApiError(422, "Unprocessable Content", `events[${index}]: ${message}`, {
      errors: [{ field: `events[${index}]`, message }],
    });
  }
  return unique;
}
