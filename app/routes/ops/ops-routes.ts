import { Hono } from "hono";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { healthRoutes } from "./health.ts";
import { metricsRoutes } from "./metrics.ts";

/** What operators' tools ask every process: `/health`, `/ready` and `/metrics`. */
export function opsRoutes(): Hono<HooklaneEnv> {
  return new Hono<HooklaneEnv>().route("/", healthRoutes()).route("/", metricsRoutes());
}
