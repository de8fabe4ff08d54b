import { createMiddleware } from "hono/factory";
import { requestId } from "hono/request-id";
import { silentLogger } from "../log/logger.ts";
import { endSpan, SpanKind, traceIdOf } from "../observability/tracing.ts";
import { randomBase64url } from "../random-id.ts";
import type { HooklaneEnv } from "./hono-env.ts";

/**
 * `X-Request-Id` on every response (the caller's own when it sent a sane
 * one, else `req_…`), and one log line per request with its id, route,
 * status and duration: a warning for a 5xx, except the 503s of a database
 * outage (told once, by the database's outage tracker), debug otherwise. Handlers log through `c.get("log")`, which carries the id.
 * With tracing on, each request is a server span, under the caller's `traceparent` when it sent a valid one, and its
 * log lines carry the trace's id (`trace_id`).
 */
export const requestIdentity = requestId({
  limitLength: 128,
  generator: () => `req_${randomBase64url(12)}`,
});

export const requestLog = createMiddleware<HooklaneEnv>(async (c, next) => {
  const started = performance.now();
  const { logger, tracing } = c.get("hooklane");
  const span = tracing?.start(`${c.req.method}`, c.req.header("traceparent"), {
    kind: SpanKind.SERVER,
    // The route's template only (set at the end), never the path: a portal session's path holds its token.
    attributes: { "http.request.method": c.req.method },
  });
  const log = (logger ?? silentLogger).child({
    requestId: c.get("requestId"),
    ...(span ? { trace_id: traceIdOf(span) } : {}),
  });
  c.set("log", log);
  if (span) c.set("traceparent", tracing!.traceparentOf(span));
  try {
    await next();
  } finally {
    if (span) {
      span.updateName(`${c.req.method} ${c.req.routePath}`);
      span.setAttributes({ "http.route": c.req.routePath, "http.response.status_code": c.res.status });
      endSpan(span, c.res.status >= 500 ? String(c.res.status) : undefined);
    }
  }
  const status = c.res.status;
  const line = {
    method: c.req.method,
    route: c.req.routePath,
    status,
    durationMs: Math.round((performance.now() - started) * 10) / 10,
  };
  // A 503 during a database outage is the outage's, which the database's tracker logs once.
  const outage = status === 503 && c.get("hooklane").database?.outage.down;
  if (status >= 500 && !outage) log.warn(line, "request failed");
  else log.debug(line, "request");
});
