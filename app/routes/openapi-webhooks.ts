import { TEST_EVENT_TYPE } from "../../lib/db/schema.ts";
import { exampleAsDelivered, type CatalogueEntry } from "../../lib/webhook/catalogue/catalogue-entry.ts";

/**
 * `webhook.test`, which `POST /v3/webhooks/:id/test` sends to one webhook: not in the catalogue (nobody subscribes
 * to it, every webhook can receive it), but a POST an endpoint must be ready for all the same.
 */
const TEST_EVENT: Pick<CatalogueEntry, "internal" | "description" | "resource" | "example" | "deprecated"> = {
  internal: TEST_EVENT_TYPE,
  description:
    "A test event, sent to one webhook when asked (`POST /v3/webhooks/{id}/test`), optionally in a test mode: `duplicate` POSTs it twice, `late` signs it with an old timestamp, `bad-signature` with another secret. Its attempts count toward nothing: not the endpoint's health, its breaker or its owner's notifications.",
  resource: "webhook",
  example: {
    id: "evt_9b2d4e7f8a6c5b4d3e2f1a0b3e8a1f0c",
    type: TEST_EVENT_TYPE,
    created: "2026-12-01T09:30:00.000Z",
    livemode: false,
    data: { object: "webhook", id: "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b", account: "acc_3e8a1f0c9b2d" },
  },
  deprecated: false,
};

/**
 * The event catalogue as OpenAPI 3.1 `webhooks`: one entry per event type,
 * named by the type, describing the POST a subscriber receives: the thin
 * body (`EventBody`, with this type and its resource fixed) and the
 * catalogue's own example. Generated from the catalogue, so the two cannot
 * drift apart.
 */
export function catalogueWebhooks(catalogue: readonly CatalogueEntry[]): Record<string, unknown> {
  return Object.fromEntries(
    [...catalogue, TEST_EVENT].map((entry) => [
      entry.internal,
      {
        post: {
          operationId: `event.${entry.internal}`,
          summary: entry.internal,
          description: `${entry.description}${entry.deprecated ? " Deprecated: no new subscriptions." : ""}`,
          tags: ["Events"],
          ...(entry.deprecated ? { deprecated: true } : {}),
          parameters: [
            {
              name: "Hooklane-Signature",
              in: "header",
              required: true,
              schema: { type: "string" },
              description:
                "`t=<unix seconds>,v1=<hex HMAC-SHA256>`; see “Verify a signature”. Standard Webhooks endpoints get `webhook-id`, `webhook-timestamp` and `webhook-signature` instead.",
            },
            {
              name: "Hooklane-Event-Id",
              in: "header",
              required: true,
              schema: { type: "string" },
              description:
                "The event's id: the body's `id`, the same on every attempt and every run. Dedupe on the body's `id`.",
            },
            {
              name: "Hooklane-Attempt",
              in: "header",
              required: true,
              schema: { type: "string" },
              description: "1 for the first attempt of a run.",
            },
          ],
          requestBody: {
            required: true,
            content: {
              "application/json": {
                schema: {
                  allOf: [
                    { $ref: "#/components/schemas/EventBody" },
                    {
                      type: "object",
                      properties: {
                        type: { const: entry.internal, description: "This event's type." },
                        data: {
                          type: "object",
                          description: "What the event is about: fetch it by `data.id` for its current state.",
                          properties: { object: { const: entry.resource, description: "The resource's kind." } },
                        },
                      },
                    },
                  ],
                },
                example: exampleAsDelivered(entry.example, entry.internal === TEST_EVENT_TYPE ? undefined : 1),
              },
            },
          },
          responses: {
            "2XX": { description: "Received. Any other answer, or none within 10 s, is retried on the schedule." },
            "410": {
              description:
                "Gone: the webhook is disabled and nothing more is sent to it (a `webhook.test` event's 410 disables nothing).",
            },
          },
        },
      },
    ]),
  );
}
