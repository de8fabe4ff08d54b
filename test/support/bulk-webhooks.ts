import { webhook } from "../../lib/db/schema.ts";
import type { Hooklane } from "../../lib/hooklane.ts";
import { generateWebhookSecret } from "../../lib/webhook/outbound/webhook-signature.ts";

/**
 * Inserts global webhooks for `events` straight into the table, a thousand
 * rows a statement, one shared secret: fan-outs of thousands without
 * thousands of API calls. `url(i)` names the i-th one's endpoint.
 */
export async function insertGlobalWebhooks(
  hooklane: Hooklane,
  options: { from?: number; to: number; events: string[]; url: (i: number) => string },
): Promise<void> {
  const secretSealed = await hooklane.secrets.seal(generateWebhookSecret());
  for (let start = options.from ?? 0; start < options.to; start += 1_000) {
    const rows = Array.from({ length: Math.min(1_000, options.to - start) }, (_, i) => ({
      account: null,
      url: options.url(start + i),
      events: options.events,
      secretSealed,
      createdBy: "test",
    }));
    await hooklane.database.db.insert(webhook).values(rows);
  }
}
