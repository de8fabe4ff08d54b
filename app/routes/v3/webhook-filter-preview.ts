import { z } from "zod";
import type { OperationRouter } from "../../../lib/api/operation.ts";
import { ApiError } from "../../../lib/api/problem.ts";
import type { Database } from "../../../lib/db/client.ts";
import { PREVIEW_EVENTS, previewFilter, type FilterPreview } from "../../../lib/db/sql/filter-preview.ts";
import { assertSubscribableEvents } from "../../../lib/webhook/catalogue/subscribable-events.ts";
import { FILTER_MAX_LENGTH } from "../../../lib/webhook/outbound/webhook-filter.ts";
import { owningAccount } from "./tenancy.ts";
import { compileFilter, FILTER } from "./webhook-schemas.ts";

const previewBody = z
  .strictObject({
    events: z.array(z.string().min(1).max(200)).min(1).max(200).describe('Event types, or `["*"]` for all.'),
    filter: z.string().min(1).max(FILTER_MAX_LENGTH).describe(FILTER),
    scope: z
      .enum(["account", "global"])
      .default("account")
      .describe("`global`: judged on every account's events; admins only."),
  })
  .meta({ examples: [{ events: ["payment-debt.created"], filter: 'currency in ["EUR"]' }] });

const previewSchema = z
  .strictObject({
    object: z.literal("webhook-filter-preview"),
    matched: z.number().int().describe("How many of those events the filter matches."),
    of: z
      .number()
      .int()
      .describe(
        `How many events it was judged on: the newest (at most ${PREVIEW_EVENTS}) of these types in the delivery log, counted once each, test events left out.`,
      ),
  })
  .meta({ id: "WebhookFilterPreview", examples: [{ object: "webhook-filter-preview", matched: 37, of: 100 }] });

/** `POST /v3/webhooks/filter-preview`: what a filter would have matched of the recent events, before it is set. */
export function addWebhookFilterPreview(router: OperationRouter): void {
  router.add(
    {
      method: "post",
      path: "/v3/webhooks/filter-preview",
      operationId: "previewWebhookFilter",
      summary: "Preview a webhook filter",
      description: `Checks a filter as creating or updating a webhook would, and says how many of the newest (at most ${PREVIEW_EVENTS}) events of these types it would have matched: the account's, as its webhooks' delivery logs hold them, with the attributes each event was published with. Nothing is stored.`,
      tag: "Webhooks",
      body: previewBody,
      responses: {
        200: { description: "How the filter judges the recent events.", schema: previewSchema },
        403: { description: "Only admins preview over every account (`scope: global`)." },
        422: {
          description:
            "Invalid input, a filter that does not parse (naming the position) or names an attribute an event type does not declare, or an event type the scope never hears.",
        },
      },
    },
    async (c, { body }) => {
      const database = c.get("database");
      const principal = c.get("principal");
      if (body.scope === "global" && !principal.admin) {
        throw new ApiError(403, "Forbidden", "Only admins can preview a filter over every account.");
      }
      const account = body.scope === "global" ? null : await owningAccount(c, undefined);
      const preview = await judgeFilter(database, { account, events: body.events, filter: body.filter });
      return c.json({ object: "webhook-filter-preview", ...preview });
    },
  );
}

/**
 * Checks a filter as saving a webhook of `account` (null: a global one) with these events would, and judges it on
 * that account's recent events: what both this route and the console's Preview answer. A refusal is the 422 saving
 * would give.
 */
export async function judgeFilter(
  database: Database,
  given: { account: string | null; events: readonly string[]; filter: string },
): Promise<FilterPreview> {
  const audience = given.account === null ? "global" : "account";
  const events = await assertSubscribableEvents(database, given.events, audience);
  const { filterPath } = compileFilter(given.filter, events, audience);
  return previewFilter(database, { account: given.account, events, path: filterPath! });
}
