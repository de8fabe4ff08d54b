import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ApiTransaction } from "../webhook/outbound/webhook-out-route.publisher.ts";
import type { RouteReceipt } from "../webhook/transport/webhook-transport.ts";
import type { HooklaneEnv } from "./hono-env.ts";
import { earlierAnswer, idempotentRequest, rememberAnswer } from "./idempotency.ts";
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

/** Options of one route's wrapper. */
export interface HandlerOptions {
  /** The 2xx shows a secret: an `Idempotency-Key` answer is stored sealed, never in clear. */
  answerHoldsSecret?: boolean;
}

/**
 * Wraps a route: every failure answers with one problem+json shape, and a
 * mutation whose 2xx publishes an event, or that carries an
 * `Idempotency-Key`, runs in one transaction with what it must commit.
 *
 * Before the handler runs, the route's catalogue event is looked up; when
 * anyone listens to it the handler gets a transaction (`c.get("database")`),
 * `ok()` records its answer, and the route message is written into the same
 * transaction before it commits: the event exists if and only if the
 * mutation committed, and the 2xx goes out after the commit. A failure to
 * write the message fails the request (5xx) rather than lose the event. A
 * non-2xx answer rolls everything back. Mutations nobody listens to (or any
 * request with `ENABLE_API_EVENT_QUEUE=false`) run as they would without
 * this product: no transaction, no lookup beyond a Map and a Set.
 *
 * With an `Idempotency-Key` (see `idempotency.ts`) the transaction first
 * takes the key's lock (409 while another request holds it) and replays the
 * key's stored answer when there is one (422 if it answered another caller
 * or another request), running nothing and publishing nothing; otherwise the
 * 2xx is stored in the same transaction, so it survives a crash after the
 * commit.
 *
 * A route that knows its last statements and the id of the resource they
 * create (`lastStatements()`) has the message written ahead of them, and
 * COMMIT goes in their write: the whole request is one round trip.
 *
 * Work registered with `afterCommit()` runs once the 2xx is committed.
 */
export function handler(fn: (c: ApiContext) => Promise<Response> | Response, options: HandlerOptions = {}) {
  return async (c: ApiContext): Promise<Response> => {
    const { database, publisher, secrets } = c.get("hooklane");
    const committed: AfterCommit[] = [];
    c.set("afterCommit", committed);
    try {
      const mutating = MUTATING.has(c.req.method);
      const idempotent = mutating ? await idempotentRequest(c) : undefined;
      const entry =
        publisher.enabled && mutating ? await publisher.subscribedEvent(c.req.method, c.req.routePath) : undefined;
      if (!entry && !idempotent) {
        c.set("database", database);
        const answer = await fn(c);
        if (answer.ok) await runAfterCommit(c, committed);
        return answer;
      }
      let receipt: RouteReceipt | undefined;
      let publishedAhead: string | undefined;
      /** What the publisher reads of this request's 2xx: its route, and the parameters and body naming the resource. */
      const answered = (params: Record<string, string>, body: unknown): ApiTransaction => ({
        method: c.req.method,
        route: c.req.routePath,
        params,
        body,
        traceparent: c.get("traceparent"),
      });
      const response = await database.transaction(async (tx) => {
        c.set("database", tx);
        const earlier = idempotent && (await earlierAnswer(c, tx, idempotent, secrets));
        if (earlier) throw new RollbackWith(earlier);
        // Only where the message waits for COMMIT: written at once, its owner would be read before the row exists.
        // An idempotent request stores its answer after the handler's statements, so its COMMIT cannot go with them.
        if (entry && !idempotent && entry.idFrom.source === "body" && publisher.publishesAhead(tx)) {
          c.set("publishAhead", async (resourceId, statements) => {
            receipt = await publisher.publish(tx, entry, answered({}, { [entry.idFrom.name]: resourceId }));
            publishedAhead = resourceId;
            tx.commitAfter(statements);
          });
        }
        const answer = await fn(c);
        const published = c.get("published");
        if (entry && publishedAhead !== undefined) {
          // COMMIT went with the route's last statements: an answer other than their 2xx is a route's bug, and
          // what it answers no longer undoes anything.
          const answeredId = (published as Record<string, unknown> | undefined)?.[entry.idFrom.name];
          if (answer.status < 200 || answer.status >= 300 || answeredId !== publishedAhead) {
            const problem = `answered ${answer.status} for ${String(answeredId)} after publishing ahead for ${publishedAhead}`;
            c.get("log")?.error({ event: entry.internal }, `${problem}; its statements may have committed`);
            throw new Error(`${entry.internal}: ${problem}`);
          }
        } else if (answer.status < 200 || answer.status >= 300) {
          throw new RollbackWith(answer);
        } else if (entry && published) {
          receipt = await publisher.publish(tx, entry, answered(c.req.param(), published));
        }
        if (idempotent) await rememberAnswer(tx, idempotent, answer, options.answerHoldsSecret ? secrets : undefined);
        return answer;
      });
      if (receipt) publisher.committed(receipt);
      await runAfterCommit(c, committed);
      return response;
    } catch (error) {
      if (error instanceof RollbackWith) return error.response;
      return problem(c, error);
    }
  };
}

type AfterCommit = () => Promise<void> | void;

/**
 * Runs `task` once the request's 2xx is committed (at once when it runs
 * outside a transaction): wake-ups and cache invalidations that must not be
 * seen before the rows they announce. A failing task is logged, never
 * answered: the mutation has committed and the lane catches up on its own.
 */
export function afterCommit(c: ApiContext, task: AfterCommit): void {
  c.get("afterCommit").push(task);
}

async function runAfterCommit(c: ApiContext, tasks: readonly AfterCommit[]): Promise<void> {
  for (const task of tasks) {
    try {
      await task();
    } catch (error) {
      (c.get("log") ?? c.get("hooklane").logger)?.warn({ err: error }, "a task after the commit failed");
    }
  }
}

/**
 * Issues a route's last statements (`send`, which must issue `statements`
 * statements at once, e.g. with `Promise.all`, and nothing after them), which
 * create the resource `resourceId`, the one the route's 2xx will answer with.
 * When the answer publishes an event, its message is written ahead of them
 * and COMMIT leaves with them: one write and one round trip for the whole
 * request. Once they succeed the route must answer that 2xx, and nothing
 * that runs after them may fail: the transaction has committed. Not inside a
 * savepoint (`tx.transaction`), whose release would follow COMMIT. Otherwise
 * (nobody listens, an `Idempotency-Key`, a driver that cannot) the statements
 * simply run.
 */
export async function lastStatements<T>(
  c: ApiContext,
  resourceId: string,
  statements: number,
  send: () => Promise<T>,
): Promise<T> {
  const ahead = c.get("publishAhead");
  if (ahead) {
    c.set("publishAhead", undefined);
    await ahead(resourceId, statements);
  }
  return send();
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
