import type { Hooklane } from "../hooklane.ts";
import type { Principal } from "../auth/jwt.ts";
import type { Database } from "../db/client.ts";
import type { Logger } from "../log/logger.ts";

/** What every request carries: the product's services and, once authenticated, the caller. */
export interface HooklaneEnv {
  Variables: {
    hooklane: Hooklane;
    principal: Principal;
    /** `X-Request-Id`: the caller's, when it sent a sane one, or a new one; on every response and log line. */
    requestId: string;
    /** The logger for this request: every line carries its request id (and its trace id, with tracing on). */
    log: Logger;
    /** With tracing on: the W3C `traceparent` of this request's span, which the event it publishes continues. */
    traceparent: string | undefined;
    /**
     * The database for this request: its own transaction when its 2xx
     * publishes an event or it carries an `Idempotency-Key` (see `handler()`).
     */
    database: Database;
    /** What `ok()` answered with, for the publisher. */
    published: unknown;
    /** Set by `handler()` when the request's event can be written ahead of its last statements (`lastStatements()`). */
    publishAhead: ((resourceId: string, statements: number) => Promise<void>) | undefined;
    /** Origins that may frame this answer (a portal session's); `'none'` when unset. */
    frameAncestors: string[] | undefined;
    /** Work to run once the request's 2xx is committed (`afterCommit()`). */
    afterCommit: Array<() => Promise<void> | void>;
  };
}
