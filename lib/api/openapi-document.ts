import { z } from "zod";
import type { OperationSpec } from "./operation.ts";

/** The one error shape (RFC 9457), as documented. */
export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    errors: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
  })
  .meta({ id: "Problem", description: "An error, as application/problem+json (RFC 9457)." });

type JsonSchema = Record<string, unknown>;

/** The standard answers every operation may give, by the shape of its input. */
function implicitResponses(spec: OperationSpec): Record<number, string> {
  const answers: Record<number, string> = { 401: "No valid bearer token." };
  if (spec.path.includes("/:")) answers[404] = "No such object in the caller's scope.";
  if (spec.params || spec.query || spec.body) answers[422] = "The input failed validation; `errors` names each field.";
  return answers;
}

/**
 * Builds an OpenAPI 3.1 document from described operations. Schemas that
 * carry a zod `meta({ id })` become shared components; the rest are inlined.
 */
export function openApiDocument(
  operations: readonly OperationSpec[],
  info: { title: string; version: string; description: string },
): Record<string, unknown> {
  const components: Record<string, JsonSchema> = {};

  const convert = (schema: z.ZodType, io: "input" | "output"): JsonSchema => {
    const json = z.toJSONSchema(schema, {
      io,
      unrepresentable: "any",
      // The format says it; zod's regex spelling of an ISO timestamp only clutters the reference.
      override: ({ jsonSchema }) => {
        if (jsonSchema.format === "date-time") delete jsonSchema.pattern;
      },
    }) as JsonSchema;
    const {
      $schema: _dialect,
      $defs,
      ...rest
    } = JSON.parse(JSON.stringify(json).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema & {
      $defs?: Record<string, JsonSchema>;
    };
    // A schema with an id comes back as a $ref to its own entry in $defs.
    Object.assign(components, $defs);
    return rest;
  };

  const parameters = (schema: z.ZodType | undefined, where: "path" | "query") => {
    if (!schema) return [];
    const json = convert(schema, "input") as { properties?: Record<string, JsonSchema>; required?: string[] };
    return Object.entries(json.properties ?? {}).map(([name, property]) => {
      const { description, ...rest } = property;
      return {
        name,
        in: where,
        required: where === "path" || (json.required ?? []).includes(name),
        ...(description ? { description } : {}),
        schema: rest,
      };
    });
  };

  const problem = convert(problemSchema, "output");
  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of operations) {
    const path = spec.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
    const responses: Record<string, unknown> = {};
    for (const [status, description] of Object.entries(implicitResponses(spec))) {
      responses[status] = { description, content: { "application/problem+json": { schema: problem } } };
    }
    for (const [status, response] of Object.entries(spec.responses)) {
      const content = response.schema
        ? { "application/json": { schema: convert(response.schema, "output") } }
        : response.mediaType
          ? { [response.mediaType]: { schema: { type: "string" } } }
          : Number(status) >= 400
            ? { "application/problem+json": { schema: problem } }
            : undefined;
      responses[status] = { description: response.description, ...(content ? { content } : {}) };
    }
    paths[path] ??= {};
    paths[path][spec.method] = {
      operationId: spec.operationId,
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      tags: [spec.tag],
      parameters: [...parameters(spec.params, "path"), ...parameters(spec.query, "query")],
      ...(spec.body
        ? {
            requestBody: {
              required: !spec.bodyOptional,
              content: { "application/json": { schema: convert(spec.body, "input") } },
            },
          }
        : {}),
      responses,
    };
  }

  return {
    openapi: "3.1.0",
    info,
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "Claims `sub`, `account` and optionally `role: admin`; HS256 or keys from a JWKS URL.",
        },
      },
    },
  };
}
