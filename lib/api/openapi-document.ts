import { z } from "zod";
import { ERROR_TYPES } from "./error-types.ts";
import { exampleOf } from "./openapi-examples.ts";
import type { OperationSpec } from "./operation.ts";

/** The one error shape (RFC 9457), as documented: `type` and `code` name the kind, one per status. */
export const problemSchema = z
  .object({
    type: z
      .union(
        ERROR_TYPES.map((kind) => z.literal(kind.type).describe(`${kind.status} ${kind.title}: ${kind.description}`)),
      )
      .describe("The kind of error, a stable identifier (compare it as a string; it need not resolve)."),
    code: z
      .enum(ERROR_TYPES.map((kind) => kind.code))
      .describe("The same kind, short: `validation_failed`, `not_found`, …"),
    title: z
      .string()
      .describe("The status's reason phrase, e.g. `Not Found`: for people; branch on `type` or `code`, not on this."),
    status: z.number().int().describe("The HTTP status code, the same as the answer's."),
    detail: z
      .string()
      .optional()
      .describe("What went wrong this time, in a sentence for people; branch on `type` or `code`, not on this."),
    errors: z
      .array(
        z.object({
          field: z
            .string()
            .describe(
              "The field at fault: a path into the input (`url`, `events[1]`), a header's name (`Idempotency-Key`), or `(body)` for the body as a whole.",
            ),
          message: z.string().describe("What is wrong with it, for people, e.g. `is required`."),
        }),
      )
      .optional()
      .describe("Only on a 422: each problem with the input, one entry per field."),
    requestId: z.string().optional().describe("The request's `X-Request-Id`, also on every log line about it."),
  })
  .meta({ id: "Problem", description: "An error, as application/problem+json (RFC 9457)." });

type JsonSchema = Record<string, unknown>;

/** Every mutation takes it; see `idempotency.ts`. */
const idempotencyKeyParameter = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Makes a retry safe: the same key with the same request from the same caller within 24 h answers the first answer again (status and body, with `Idempotent-Replayed: true`) without running it twice; with a different request, or from another caller (another token subject, or the same subject with another role), 422, showing nothing of the first answer; while the first is still running, 409. Keys are per account, 1-255 visible ASCII characters (a UUID). Only successful answers are kept: a request that failed changed nothing and may be sent again with the same key.",
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7E]+$" },
  example: "6f1c8a52-3f0e-4b8e-9d1a-2c4b7e9f0a31",
};

/** Every operation reads it when tracing is on; see docs/operations.md (Traces). */
const traceparentParameter = {
  name: "traceparent",
  in: "header",
  required: false,
  description:
    "W3C Trace Context. Where the operator exports OpenTelemetry traces, the request's span starts under it (a valid one; anything else starts a new trace), and so does everything an event it publishes goes through: its route, claims and attempts, whose POSTs send a `traceparent` of their own in the same trace. Ignored when tracing is off.",
  schema: { type: "string", pattern: "^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$" },
  example: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
};

/**
 * A request body with its schema and example; zod writes no `examples` into
 * an input schema that transforms, so the example goes beside it.
 */
function requestBody(body: z.ZodType, schema: JsonSchema, required: boolean) {
  const example = (body.meta()?.examples as unknown[] | undefined)?.[0];
  return { required, content: { "application/json": { schema, ...(example === undefined ? {} : { example }) } } };
}

/** The standard answers every operation may give, by the shape of its input. */
function implicitResponses(spec: OperationSpec): Record<number, string> {
  const answers: Record<number, string> = {
    401: "No valid bearer token.",
    429: "Too many requests from this token's subject or account (`RateLimit`, `RateLimit-Policy`; `Retry-After` says when to try again), or an account quota is used up.",
  };
  if (spec.path.includes("/:")) answers[404] = "No such object in the caller's scope.";
  answers[422] = "The input failed validation (unknown fields included); `errors` names each field.";
  if (spec.body) {
    answers[400] = "The body is not a JSON document, or nests too deeply.";
    answers[413] = "The body is larger than the server's limit.";
  }
  if (spec.method !== "get") answers[409] = "A request with the same `Idempotency-Key` is still in progress.";
  return answers;
}

/** Gives every JSON request body and answer of `paths` an example, where its operation wrote none. */
function addExamples(paths: Record<string, Record<string, any>>, components: Record<string, JsonSchema>): void {
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      const media = [
        operation.requestBody?.content?.["application/json"],
        ...Object.values(operation.responses as Record<string, any>).map((r) => r.content?.["application/json"]),
      ];
      for (const content of media) {
        if (content && content.example === undefined) content.example = exampleOf(content.schema, components);
      }
    }
  }
}

/**
 * What the API's conventions make a field mean wherever it appears (every
 * object has `id` and `object`; timestamps are named for what happened), for
 * the fields whose schema does not say more itself. A constant says what it
 * always is.
 */
const CONVENTIONAL_FIELDS: Record<string, string> = {
  id: "The object's id, prefixed by its kind.",
  created: "When it was created (ISO-8601 UTC, milliseconds).",
  updated: "When it last changed (ISO-8601 UTC, milliseconds).",
  deleted: "Always `true`: the object is gone.",
};

/** Fills in the description of every property the conventions explain, throughout `roots`. */
function describeConventionalFields(roots: unknown[]): void {
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== "object") return;
    const schema = node as Record<string, unknown>;
    const properties = schema.properties as Record<string, Record<string, unknown>> | undefined;
    for (const [name, property] of Object.entries(properties ?? {})) {
      if (property.description || property.$ref) continue;
      if ("const" in property) property.description = `Always \`${String(property.const)}\`.`;
      else if (CONVENTIONAL_FIELDS[name]) property.description = CONVENTIONAL_FIELDS[name];
    }
    for (const [key, value] of Object.entries(schema)) if (key !== "example" && key !== "examples") visit(value);
  };
  visit(roots);
}

/**
 * Builds an OpenAPI 3.1 document from described operations, with an example
 * for every JSON body and answer. Schemas that carry a zod `meta({ id })`
 * become shared components; the rest are inlined. `webhooks` are the requests
 * the API makes (the event catalogue).
 */
export function openApiDocument(
  operations: readonly OperationSpec[],
  info: { title: string; version: string; description: string },
  webhooks: Record<string, unknown> = {},
  extra: {
    /** Every tag the operations and webhooks use, with what it groups (a tag without one throws). */
    tags?: Record<string, string>;
    servers?: Array<{ url: string; description: string }>;
  } = {},
): Record<string, unknown> {
  const components: Record<string, JsonSchema> = {};

  const convert = (schema: z.ZodType, io: "input" | "output"): JsonSchema => {
    const json = z.toJSONSchema(schema, {
      io,
      unrepresentable: "any",
      // The format says it; zod's regex spelling of an ISO timestamp only clutters the reference.
      override: ({ jsonSchema }) => {
        if (jsonSchema.format === "date-time") delete jsonSchema.pattern;
        // zod bounds every integer to the safe range; said on every field it is noise, not a rule.
        if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
        if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
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
          ? {
              [response.mediaType]: {
                schema: { type: "string" },
                ...(response.example ? { example: response.example } : {}),
              },
            }
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
      parameters: [
        ...parameters(spec.params, "path"),
        ...parameters(spec.query, "query"),
        ...(spec.method === "get" ? [] : [idempotencyKeyParameter]),
        traceparentParameter,
      ],
      ...(spec.body ? { requestBody: requestBody(spec.body, convert(spec.body, "input"), !spec.bodyOptional) } : {}),
      responses,
    };
  }

  addExamples(paths, components);
  describeConventionalFields([...Object.values(components), ...Object.values(paths)]);
  const used = new Set(
    [...Object.values(paths), ...Object.values(webhooks as Record<string, Record<string, unknown>>)].flatMap(
      (operations) => Object.values(operations).flatMap((operation) => (operation as { tags?: string[] }).tags ?? []),
    ),
  );
  const undescribed = [...used].filter((tag) => extra.tags && !extra.tags[tag]);
  if (undescribed.length > 0) throw new Error(`OpenAPI tags without a description: ${undescribed.join(", ")}`);
  return {
    openapi: "3.1.0",
    info,
    ...(extra.servers ? { servers: extra.servers } : {}),
    ...(extra.tags
      ? {
          tags: Object.entries(extra.tags)
            .filter(([name]) => used.has(name))
            .map(([name, description]) => ({ name, description })),
        }
      : {}),
    security: [{ bearer: [] }],
    paths,
    webhooks,
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
