import { Hono } from "hono";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import { openApiDocument } from "../../lib/api/openapi-document.ts";
import type { OperationSpec } from "../../lib/api/operation.ts";
import { VERSION } from "../../lib/version.ts";
import { CATALOGUE } from "../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { catalogueWebhooks } from "./openapi-webhooks.ts";
import { renderApiReference } from "./api-reference-page.ts";

/** What each group of operations is for, in the order the reference lists them. */
const TAGS: Record<string, string> = {
  Accounts: "The accounts whose resources and webhooks the API scopes everything to.",
  "Payment debts": "A resource of the API: every change to one becomes a `payment-debt.*` event.",
  Subscriptions: "A resource of the API and its history: changes become `subscription.*` events.",
  "General addresses": "Addresses that belong to no account: their events reach global webhooks only.",
  Webhooks: "Endpoints that receive events: create, change, pause, test, rotate the secret, read their health.",
  "Delivery log": "Every delivery and attempt, searched and retried; recoveries and resends in bulk.",
  "Event types": "The catalogue of events a webhook can subscribe to, with example bodies.",
  "Listen sessions": "Deliveries streamed to `hooklane listen` on a developer's machine, with no public URL.",
  Operations: "What operators read: poison messages the lane set aside.",
  Audit: "Who did what to which object, and when.",
  Notifications: "What webhook owners were told: exhausted deliveries in digests, disabled webhooks.",
  Lane: "The delivery lane's state: backlog, workers, throughput, breakers.",
  Portal: "Sessions that open the console for one account, embeddable in the customer's own app.",
  "Event stream":
    "A webhook's events in order, by `sequence`: fill a gap a receiver saw, or poll with a stored position instead of receiving POSTs.",
  Events: "The POSTs a webhook receives: one per event type, signed, with a thin body.",
};

/**
 * `GET /openapi.json` (OpenAPI 3.1, generated from the operations' zod
 * schemas: every /v3 route) and `GET /docs` (the same document as a page). Both are public:
 * they describe the API, they hold no data.
 */
export function apiReferenceRoutes(operations: readonly OperationSpec[]): Hono<HooklaneEnv> {
  const document = openApiDocument(
    operations,
    {
      title: "hooklane API",
      version: VERSION,
      description:
        "The API's resources, whose changes become webhook events, and the webhooks control plane: manage webhooks, read their delivery log, retry and recover deliveries. Bearer JWTs; every object is scoped to the token's account, and another account's object answers 404. Every object has `id` and `object`, timestamps are ISO-8601 UTC with milliseconds, every list is `{object: \"list\", data, nextCursor}` paged with `limit` and `cursor`, and every mutation accepts an `Idempotency-Key`.",
    },
    catalogueWebhooks(CATALOGUE),
    {
      servers: [
        { url: "/", description: "The deployment that serves this document." },
        { url: "http://localhost:3000", description: "`npm start` on your own machine." },
      ],
      tags: TAGS,
    },
  );
  const page = renderApiReference(document);
  return new Hono<HooklaneEnv>().get("/openapi.json", (c) => c.json(document)).get("/docs", (c) => c.html(page));
}
