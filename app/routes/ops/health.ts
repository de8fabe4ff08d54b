import { Hono } from "hono";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { checkReadiness } from "../../../lib/ops/readiness.ts";
import { VERSION } from "../../../lib/version.ts";

/**
 * `GET /health`: liveness, answered from memory (no I/O), 200 while the
 * process serves. `GET /ready`: 200 when the process can do its job now,
 * 503 naming the failing checks (database, migrations, lag, listener).
 * Both are public and carry no tenant data.
 */
export function healthRoutes(): Hono<HooklaneEnv> {
  return new Hono<HooklaneEnv>()
    .get("/health", (c) => c.json({ status: "ok", version: VERSION, database: c.get("hooklane").database.kind }))
    .get("/ready", async (c) => {
      const { database, config } = c.get("hooklane");
      const readiness = await checkReadiness(database, { maxLagMs: config.readyMaxLagMs });
      const body = {
        status: readiness.ready ? "ready" : "unready",
        failing: readiness.failing,
        checks: readiness.checks,
      };
      return c.json(body, readiness.ready ? 200 : 503, { "cache-control": "no-store" });
    });
}
