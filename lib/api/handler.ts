import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { waitUntil } from "@vercel/functions";
import type { HooklaneEnv } from "./hono-env.ts";
import { ApiError, problem } from "./problem.ts";

export type ApiContext = Context<HooklaneEnv>;

/**
 * Wraps a route so that every failure answers with one problem+json shape.
 * Routes that mutate answer through `ok()`, which is where events are born.
 */
export function handler(fn: (c: ApiContext) => Promise<Response> | Response) {
  return async (c: ApiContext): Promise<Response> => {
    try {
      return await fn(c);
    } catch (error) {
      return problem(c, error);
    }
  };
}

/**
 * Answers with JSON and, for a 2xx, publishes the API transaction event off the
 * response path. Publishing never fails the response: its errors are logged.
 */
export function ok(c: ApiContext, body: unknown, status: ContentfulStatusCode = 200): Response {
  const response = c.json(body, status);
  if (status >= 200 && status < 300 && c.req.method !== "GET" && c.req.method !== "HEAD") {
    const { publisher } = c.var.hooklane;
    if (publisher.enabled) {
      waitUntil(publisher.publish({ method: c.req.method, route: c.req.routePath, params: c.req.param(), body }));
    }
  }
  return response;
}

/** Reads and validates a JSON body; a body that is not JSON is a 400. */
export async function jsonBody(c: ApiContext): Promise<unknown> {
  try {
    return await c.req.json();
  } catch (error) {
    throw new ApiError(400, "Bad Request", "The body must be a JSON document.", {}, { cause: error });
  }
}
