import { Hono } from "hono";
import { z } from "zod";
import { handler, jsonBody, type ApiContext } from "./handler.ts";
import type { HooklaneEnv } from "./hono-env.ts";
import { textIssues } from "./input-text.ts";
import { humanMessage } from "./validation-errors.ts";

export type HttpMethod = "get" | "post" | "patch" | "delete";

/**
 * One documented answer. Without a schema, a 4xx answers with the problem
 * document, a 2xx with no body, or with a stream of `mediaType` when given.
 */
export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  mediaType?: "text/event-stream";
  /** A stream's example: what a client reads from it. */
  example?: string;
}

type Schema = z.ZodType | undefined;
type Parsed<S extends Schema> = S extends z.ZodType ? z.output<S> : undefined;

/**
 * An HTTP operation described once: the route, the zod schemas its input is
 * validated with, and the answers. The same object registers the route and
 * feeds the OpenAPI document, so the two cannot drift apart.
 */
export interface OperationSpec<P extends Schema = Schema, Q extends Schema = Schema, B extends Schema = Schema> {
  method: HttpMethod;
  /** A Hono template with the full path, e.g. `/v3/webhooks/:id`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  params?: P;
  query?: Q;
  body?: B;
  /** The body may be left out: an empty one is read as `{}`. */
  bodyOptional?: boolean;
  /**
   * Answers besides the ones every operation has (401; 404 with a path
   * parameter; 422 with any input; 409 for a mutation, whose
   * `Idempotency-Key` may be in use).
   */
  responses: Record<number, ResponseSpec>;
  /** The 2xx shows a secret (stored sealed for `Idempotency-Key` replays). */
  answerHoldsSecret?: boolean;
}

export interface OperationInput<P extends Schema, Q extends Schema, B extends Schema> {
  params: Parsed<P>;
  query: Parsed<Q>;
  body: Parsed<B>;
}

export interface OperationRouter {
  readonly app: Hono<HooklaneEnv>;
  /** Every operation added, in order: what the OpenAPI document describes. */
  readonly operations: readonly OperationSpec[];
  /**
   * Registers `spec` and answers it with `fn`, called with the input parsed by
   * the spec's schemas. A schema failure answers 422 naming every field at
   * fault (path, query and body together; text with control characters or
   * lone surrogates is refused anywhere), a body that is not JSON 400, and
   * any thrown ApiError its own problem document. Without a query schema no
   * query parameter is accepted; a mutation without a body schema refuses
   * any body but `{}`.
   */
  add<P extends Schema, Q extends Schema, B extends Schema>(
    spec: OperationSpec<P, Q, B>,
    fn: (c: ApiContext, input: OperationInput<P, Q, B>) => Promise<Response> | Response,
  ): void;
}

// An operation without a query schema takes no query parameters, and a mutation without a body schema no body
// (nothing, or `{}`): an unknown field is refused wherever it is sent.
const NONE = z.strictObject({});

/**
 * Parses one part of the input: its text first (no control characters or
 * lone surrogates anywhere, keys included), then its schema, with messages
 * written for people. Returns the issues instead of throwing, so every part's
 * problems are answered together.
 */
function parsePart(schema: z.ZodType | undefined, input: unknown, multiline: boolean) {
  if (!schema) return { issues: [] as z.core.$ZodIssue[], data: undefined };
  const dirty = textIssues(input, multiline);
  if (dirty.length > 0) return { issues: dirty, data: undefined };
  const parsed = schema.safeParse(input, { error: humanMessage });
  return parsed.success ? { issues: [], data: parsed.data } : { issues: parsed.error.issues, data: undefined };
}

/** The body to validate: parsed JSON, or `{}` for an empty body where none is expected. */
async function bodyOf(c: ApiContext, spec: OperationSpec): Promise<unknown> {
  if ((!spec.body || spec.bodyOptional) && (await c.req.text()).trim() === "") return {};
  return jsonBody(c);
}

/** A Hono app whose routes are all described operations. */
export function operationRouter(): OperationRouter {
  const app = new Hono<HooklaneEnv>();
  const operations: OperationSpec[] = [];
  return {
    app,
    operations,
    add(spec, fn) {
      operations.push(spec as OperationSpec);
      app.on(
        spec.method.toUpperCase(),
        spec.path,
        handler(
          async (c) => {
            const bodySchema = spec.body ?? (spec.method === "get" ? undefined : NONE);
            const params = parsePart(spec.params, c.req.param(), false);
            const query = parsePart(spec.query ?? NONE, c.req.query(), false);
            const body = parsePart(bodySchema, bodySchema ? await bodyOf(c, spec) : undefined, true);
            const issues = [...params.issues, ...query.issues, ...body.issues];
            if (issues.length > 0) throw new z.ZodError(issues);
            return fn(c, {
              params: params.data,
              query: spec.query ? query.data : undefined,
              body: spec.body ? body.data : undefined,
            } as OperationInput<typeof spec.params, typeof spec.query, typeof spec.body>);
          },
          { answerHoldsSecret: spec.answerHoldsSecret },
        ),
      );
    },
  };
}
