import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { ERROR_TYPES } from "../../lib/api/error-types.ts";
import type { Hooklane } from "../../lib/hooklane.ts";
import { expectSecurityHeaders } from "../../test/support/security-headers.ts";
import { createApp } from "../app.ts";
import { v3Routes } from "./v3/index.ts";

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

  it("names its servers, describes every tag it uses, and documents the test event beside the catalogue", async () => {
    const document = await openApi();
    expect(document.servers.map((server: { url: string }) => server.url)).toEqual(["/", "http://localhost:3000"]);
    const used = new Set<string>();
    for (const operations of [...Object.values<any>(document.paths), ...Object.values<any>(document.webhooks)]) {
      for (const operation of Object.values<any>(operations)) for (const tag of operation.tags) used.add(tag);
    }
    expect(document.tags.map((tag: { name: string }) => tag.name).sort()).toEqual([...used].sort());
    for (const tag of document.tags) expect(tag.description, tag.name).toMatch(/\w{3,}/);
    const test = document.webhooks["webhook.test"].post;
    expect(test.requestBody.content["application/json"].example).toMatchObject({
      type: "webhook.test",
      data: { object: "webhook" },
    });
    // One dedupe rule everywhere: the body's id.
    expect(JSON.stringify(document)).not.toMatch(/dedupe on it/i);
  });

  it("describes every property and parameter: of every schema, body, answer and event", async () => {
    const document = await openApi();
    const undescribed: string[] = [];
    let properties = 0;
    const walk = (schema: any, where: string): void => {
      if (!schema || typeof schema !== "object") return;
      for (const [name, property] of Object.entries<any>(schema.properties ?? {})) {
        properties++;
        if (!property.description && !property.$ref) undescribed.push(`${where}.${name}`);
        walk(property, `${where}.${name}`);
      }
      if (schema.items) walk(schema.items, `${where}[]`);
      if (schema.additionalProperties) walk(schema.additionalProperties, `${where}{}`);
      for (const key of ["anyOf", "oneOf", "allOf"]) {
        (schema[key] ?? []).forEach((branch: any, i: number) => walk(branch, `${where}|${i}`));
      }
    };
    for (const [name, schema] of Object.entries<any>(document.components.schemas)) walk(schema, name);
    for (const [path, operations] of Object.entries<any>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        const where = `${method.toUpperCase()} ${path}`;
        for (const parameter of operation.parameters ?? []) {
          properties++;
          if (!parameter.description) undescribed.push(`${where} parameter ${parameter.name}`);
        }
        walk(operation.requestBody?.content?.["application/json"]?.schema, `${where} body`);
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          walk(response.content?.["application/json"]?.schema, `${where} ${status}`);
        }
      }
    }
    for (const [type, entry] of Object.entries<any>(document.webhooks)) {
      walk(entry.post.requestBody.content["application/json"].schema, `event ${type}`);
    }
    console.log(`[openapi] ${properties} properties and parameters, ${undescribed.length} without a description`);
    expect(properties).toBeGreaterThan(500);
    expect(undescribed).toEqual([]);
  });

  it("documents every route of the app's route table, and nothing the app lacks", async () => {
    const document = await openApi();
    const routes = [
      ...new Set(
        app.routes
          .filter((route) => route.method !== "ALL" && route.path.startsWith("/v3/"))
          .map((route) => `${route.method.toLowerCase()} ${toOpenApiPath(route.path)}`),
      ),
    ];
    const documented = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`),
    );
    expect(routes.length).toBeGreaterThanOrEqual(30);
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
    // Answers list exactly their fields, and every mutation takes an Idempotency-Key.
    expect(document.components.schemas.PaymentDebt.additionalProperties).toBe(false);
    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        const body = operation.requestBody?.content["application/json"];
        if (body) expect(body.example ?? body.schema.examples?.[0], `${method} ${path} body`).toBeDefined();
        for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
          const schema = response.content?.["application/json"]?.schema;
          if (!schema) continue;
          const resolved = schema.$ref ? document.components.schemas[schema.$ref.split("/").at(-1)] : schema;
          expect(resolved.examples?.[0], `${method} ${path} ${status}`).toBeDefined();
        }
        const names = operation.parameters.map((parameter: { name: string }) => parameter.name);
        expect(names.includes("Idempotency-Key"), `${method} ${path}`).toBe(method !== "get");
        if (method !== "get") expect(operation.responses, `${method} ${path}`).toHaveProperty("409");
      }
    }
  });

  it("gives every request body and every answer an example its own schema accepts", () => {
    const examplesOf = (schema: z.ZodType) => (schema.meta()?.examples as unknown[] | undefined) ?? [];
    const { operations } = v3Routes();
    for (const spec of operations) {
      const where = `${spec.method} ${spec.path}`;
      const schemas = [
        ...(spec.body ? [spec.body] : []),
        ...Object.values(spec.responses).flatMap((response) => (response.schema ? [response.schema] : [])),
      ];
      const streams = Object.values(spec.responses).filter((response) => response.mediaType);
      for (const stream of streams) expect(stream.example, `${where}: the stream's example`).toBeTruthy();
      expect(schemas.length + streams.length, where).toBeGreaterThan(0);
      for (const schema of schemas) {
        expect(examplesOf(schema).length, where).toBeGreaterThan(0);
        for (const example of examplesOf(schema)) expect(schema.safeParse(example).error, where).toBeUndefined();
      }
    }
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
