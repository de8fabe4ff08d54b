import { Hono } from "hono";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { ApiError, problem } from "../../../lib/api/problem.ts";
import { sameSecret } from "../../../lib/auth/same-secret.ts";

/**
 * `GET /metrics`: this process's metrics in Prometheus text format. With
 * `METRICS_TOKEN` set, only `Authorization: Bearer <token>` gets them; without
 * one they are public in development only, or in production with
 * `METRICS_PUBLIC=true` (production refuses to start otherwise, and the route
 * answers 401 whatever it is sent). With `METRICS_ENABLED=false` the route answers 404.
 */
export function metricsRoutes(): Hono<HooklaneEnv> {
  return new Hono<HooklaneEnv>().get("/metrics", async (c) => {
    const { metrics, config } = c.get("hooklane");
    if (!metrics) return problem(c, new ApiError(404, "Not Found", "Metrics are off (METRICS_ENABLED=false)."));
    const allowed =
      config.metricsPublic ||
      (config.metricsToken !== undefined &&
        sameSecret(c.req.header("authorization") ?? "", `Bearer ${config.metricsToken}`));
    if (!allowed) {
      c.header("www-authenticate", 'Bearer realm="metrics"');
      return problem(c, new ApiError(401, "Unauthorized", "The metrics token is missing or wrong."));
    }
    const { contentType, body } = await metrics.render();
    return c.body(body, 200, { "content-type": contentType, "cache-control": "no-store" });
  });
}
