import { Hono } from "hono";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import { openApiDocument } from "../../lib/api/openapi-document.ts";
import type { OperationSpec } from "../../lib/api/operation.ts";
import { VERSION } from "../../lib/version.ts";
import { CATALOGUE } from "../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { catalogueWebhooks } from "./openapi-webhooks.ts";
import { renderApiReference } from "./api-reference-page.ts";

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
  );
  const page = renderApiReference(document);
  return new Hono<HooklaneEnv>().get("/openapi.json", (c) => c.json(document)).get("/docs", (c) => c.html(page));
}
