import { ApiError } from "../../api/problem.ts";
import type { Database } from "../../db/client.ts";
import { catalogueByInternal } from "./webhook-event-catalogue.ts";

/**
 * Checks the event types a webhook asks for: each must be one subscribers may
 * hear (`*` means every one). Returns them without duplicates; throws a 422
 * ApiError naming the first unknown or deprecated event and its index.
 */
export async function assertSubscribableEvents(_database: Database, events: readonly string[]): Promise<string[]> {
  const unique = [...new Set(events)];
  for (const [index, name] of unique.entries()) {
    if (name === "*") continue;
    const entry = catalogueByInternal(name);
    if (!entry || entry.deprecated) {
      const message = `${name} is not an event type you can subscribe to`;
      throw new ApiError(422, "Unprocessable Content", `events[${index}]: ${message}`, {
        errors: [{ field: `events[${index}]`, message }],
      });
    }
  }
  return unique;
}
