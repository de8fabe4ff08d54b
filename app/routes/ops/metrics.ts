import { createHash, timingSafeEqual } from "node:crypto";
import { Hono } from "hono";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { ApiError, problem } from "../../../lib/api/problem.ts";

/**
 * `GET /metrics`: this process's metrics in Prometheus text format. With
 * `METRICS_TOKEN` set, only `Authorization: Bearer <token>` gets them; with
 * `METRICS_ENABLED=false` the route answers 404.
 */
export function metricsRoutes(): Hono<HooklaneEnv> {
  return new Hono<HooklaneEnv>().get("/metrics", async (c) => {
    const { metrics, config } = c.get("hooklane");
    if (!metrics) return problem(c, new ApiError(404, "Not Found", "Metrics are off (METRICS_ENABLED=false)."));
    if (config.metricsToken && !sameSecret(c.req.header("authorization") ?? "", `Bearer ${config.metricsToken}`)) {
      c.header("www-authenticate", 'Bearer realm="metrics"');
      return problem(c, new ApiError(401, "Unauthorized", "The metrics token is missing or wrong."));
    }
    const { contentType, body } = await metrics.render();
    return c.body(body, 200, { "content-type": contentType, "cache-control": "no-store" });
  });
}

/** Compares in constant time whatever the lengths (both sides are hashed first). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
