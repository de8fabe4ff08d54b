import type { CatalogueEntry } from "../../lib/webhook/catalogue/catalogue-entry.ts";

/**
 * The event catalogue as OpenAPI 3.1 `webhooks`: one entry per event type,
 * named by the type, describing the POST a subscriber receives: the thin
 * body (`EventBody`, with this type and its resource fixed) and the
 * catalogue's own example. Generated from the catalogue, so the two cannot
 * drift apart.
 */
export function catalogueWebhooks(catalogue: readonly CatalogueEntry[]): Record<string, unknown> {
  return Object.fromEntries(
    catalogue.map((entry) => [
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
              description: "The event's id, the same on every attempt: dedupe on it.",
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
                        type: { const: entry.internal },
                        data: { type: "object", properties: { object: { const: entry.resource } } },
                      },
                    },
                  ],
                },
                example: entry.example,
              },
            },
          },
          responses: {
            "2XX": { description: "Received. Any other answer, or none within 10 s, is retried on the schedule." },
            "410": { description: "Gone: the webhook is disabled and nothing more is sent to it." },
          },
        },
      },
    ]),
  );
}
