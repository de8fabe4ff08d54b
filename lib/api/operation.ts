import { Hono } from "hono";
import type { z } from "zod";
import { handler, jsonBody, type ApiContext } from "./handler.ts";
import type { HooklaneEnv } from "./hono-env.ts";

export type HttpMethod = "get" | "post" | "patch" | "delete";

/**
 * One documented answer. Without a schema, a 4xx answers with the problem
 * document, a 2xx with no body, or with a stream of `mediaType` when given.
 */
export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  mediaType?: "text/event-stream";
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
   * parameter; 422 with any input).
   */
  responses: Record<number, ResponseSpec>;
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
   * the spec's schemas. A schema failure answers 422 naming the field, a body
   * that is not JSON 400, and any thrown ApiError its own problem document.
   */
  add<P extends Schema, Q extends Schema, B extends Schema>(
    spec: OperationSpec<P, Q, B>,
    fn: (c: ApiContext, input: OperationInput<P, Q, B>) => Promise<Response> | Response,
  ): void;
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
        handler(async (c) => {
          const params = spec.params?.parse(c.req.param());
          const query = spec.query?.parse(c.req.query());
          const empty = spec.bodyOptional && (await c.req.text()).trim() === "";
          const body = spec.body?.parse(empty ? {} : await jsonBody(c));
          return fn(c, { params, query, body } as OperationInput<
            typeof spec.params,
            typeof spec.query,
            typeof spec.body
          >);
        }),
      );
    },
  };
}
