import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { ERROR_TYPES } from "../../lib/api/error-types.ts";
import type { Hooklane } from "../../lib/hooklane.ts";
import { expectSecurityHeaders } from "../../test/support/security-headers.ts";
import { createApp } from "../app.ts";
import { isControlPlanePath } from "./v3/webhooks.ts";

// Routes and the document are built up front; no service is touched.
const app = createApp({} as Hooklane);
const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
// The document is checked with expect(); typing it would only repeat the assertions.
const openApi = async (): Promise<any> => (await app.request("/openapi.json")).json();

describe("/openapi.json and /docs", () => {
  it("serves a valid OpenAPI 3.1 document", async () => {
    expect((await app.request("/openapi.json")).status).toBe(200);
    const document = await openApi();
    expect(document.openapi).toBe("3.1.0");
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("documents every control-plane route of the app, and nothing the app lacks", async () => {
    const document = await openApi();
    const routes = [
      ...new Set(
        app.routes
          .filter((route) => route.method !== "ALL" && isControlPlanePath(route.path))
          .map((route) => `${route.method.toLowerCase()} ${toOpenApiPath(route.path)}`),
      ),
    ];
    const documented = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`),
    );
    expect(routes.length).toBeGreaterThanOrEqual(12);
    expect(routes.filter((route) => !documented.includes(route))).toEqual([]);
    expect(documented.filter((operation) => !routes.includes(operation))).toEqual([]);
    // Input and answers come from the routes' own zod schemas.
    const patch = document.paths["/v3/webhooks/{id}"].patch;
    expect(patch.requestBody.content["application/json"].schema.properties.status.enum).toEqual(["active", "paused"]);
    expect(patch.responses["200"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/Webhook",
    });
    expect(patch.responses["404"].content["application/problem+json"].schema).toEqual({
      $ref: "#/components/schemas/Problem",
    });
    for (const [name, schema] of Object.entries(document.components.schemas)) {
      expect(schema, name).toHaveProperty("type", "object");
    }
    expect(document.components.schemas.Webhook.properties).not.toHaveProperty("secret");
    expect(document.components.schemas.WebhookWithSecret.required).toContain("secret");
  });

  it("renders a self-contained reference page of every operation", async () => {
    const response = await app.request("/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    const page = await response.text();
    const document = await openApi();
    for (const operations of Object.values(document.paths as Record<string, Record<string, { operationId: string }>>)) {
      for (const operation of Object.values(operations)) expect(page).toContain(`id="${operation.operationId}"`);
    }
    // Nothing is fetched from elsewhere: no scripts, no stylesheets, no link or form to another origin.
    // (Error `type` URIs appear as text: they are identifiers, not links.)
    expect(page).not.toMatch(/<script|<link|<img|<iframe|(?:src|href|action)="(?:https?:)?\/\//);
    expectSecurityHeaders(response, page);
    expectSecurityHeaders(await app.request("/openapi.json"));
  });

  it("documents every error type: its URI, code and when it happens", async () => {
    const problem = (await openApi()).components.schemas.Problem;
    expect(problem.required).toEqual(expect.arrayContaining(["type", "code", "title", "status"]));
    expect(problem.properties.type.anyOf).toEqual(
      ERROR_TYPES.map((kind) => ({
        type: "string",
        const: kind.type,
        description: expect.stringContaining(kind.description),
      })),
    );
    expect(problem.properties.code.enum).toEqual(ERROR_TYPES.map((kind) => kind.code));
    expect(new Set(ERROR_TYPES.map((kind) => kind.type)).size).toBe(ERROR_TYPES.length);
    const body = await (await app.request("/v3/webhooks")).json();
    expect(body).toMatchObject({ type: "https://hooklane.dev/errors/unauthorized", code: "unauthorized", status: 401 });
  });
});
