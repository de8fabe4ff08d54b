import { Hono } from "hono";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import { openApiDocument } from "../../lib/api/openapi-document.ts";
import type { OperationSpec } from "../../lib/api/operation.ts";
import { VERSION } from "../../lib/version.ts";
import { renderApiReference } from "./api-reference-page.ts";

/**
 * `GET /openapi.json` (OpenAPI 3.1, generated from the operations' zod
 * schemas) and `GET /docs` (the same document as a page). Both are public:
 * they describe the API, they hold no data.
 */
export function apiReferenceRoutes(operations: readonly OperationSpec[]): Hono<HooklaneEnv> {
  const document = openApiDocument(operations, {
    title: "hooklane control plane",
    version: VERSION,
    description:
      "Manage webhooks, read their delivery log, retry and recover deliveries. Bearer JWTs; every object is scoped to the token's account, and another account's object answers 404.",
  });
  const page = renderApiReference(document);
  return new Hono<HooklaneEnv>().get("/openapi.json", (c) => c.json(document)).get("/docs", (c) => c.html(page));
}
