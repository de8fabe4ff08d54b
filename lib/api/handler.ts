import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { RouteReceipt } from "../webhook/transport/webhook-transport.ts";
import type { HooklaneEnv } from "./hono-env.ts";
import { ApiError, problem } from "./problem.ts";

export type ApiContext = Context<HooklaneEnv>;

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** Ends a request transaction without committing, answering `response`. */
class RollbackWith {
  readonly response: Response;
  constructor(response: Response) {
    this.response = response;
  }
}

/**
 * Wraps a route: every failure answers with one problem+json shape, and a
 * mutation whose 2xx publishes an event runs in one transaction with it.
 *
 * Before the handler runs, the route's catalogue event is looked up; when
 * anyone listens to it the handler gets a transaction (`c.var.database`),
 * `ok()` records its answer, and the route message is written into the same
 * transaction before it commits: the event exists if and only if the
 * mutation committed, and the 2xx goes out after the commit. A failure to
 * write the message fails the request (5xx) rather than lose the event. A
 * non-2xx answer rolls everything back. Mutations nobody listens to (or any
 * request with `ENABLE_API_EVENT_QUEUE=false`) run as they would without
 * this product: no transaction, no lookup beyond a Map and a Set.
 */
export function handler(fn: (c: ApiContext) => Promise<Response> | Response) {
  return async (c: ApiContext): Promise<Response> => {
    const { database, publisher } = c.var.hooklane;
    try {
      const entry =
        publisher.enabled && MUTATING.has(c.req.method)
          ? await publisher.subscribedEvent(c.req.method, c.req.routePath)
          : undefined;
      if (!entry) {
        c.set("database", database);
        return await fn(c);
      }
      let receipt: RouteReceipt | undefined;
      const response = await database.transaction(async (tx) => {
        c.set("database", tx);
        const answer = await fn(c);
        if (answer.status < 200 || answer.status >= 300) throw new RollbackWith(answer);
        const published = c.get("published");
        if (published) {
          receipt = await publisher.publish(tx, entry, {
            method: c.req.method,
            route: c.req.routePath,
            params: c.req.param(),
            body: published,
          });
        }
        return answer;
      });
      if (receipt) publisher.committed(receipt);
      return response;
    } catch (error) {
      if (error instanceof RollbackWith) return error.response;
      return problem(c, error);
    }
  };
}

/**
 * Answers with JSON. On a 2xx of a mutating route this is where events are
 * born: `handler()` publishes the answered body in the mutation's transaction.
 */
export function ok(c: ApiContext, body: unknown, status: ContentfulStatusCode = 200): Response {
  if (status >= 200 && status < 300) c.set("published", body);
  return c.json(body, status);
}

/** Reads and validates a JSON body; a body that is not JSON is a 400. */
export async function jsonBody(c: ApiContext): Promise<unknown> {
  try {
    return await c.req.json();
  } catch (error) {
    throw new ApiError(400, "Bad Request", "The body must be a JSON document.", {}, { cause: error });
  }
}
