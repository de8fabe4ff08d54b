import { Hono } from "hono";
import type { HooklaneEnv } from "../lib/api/hono-env.ts";
import { ApiError, problem } from "../lib/api/problem.ts";
import { requestIdentity, requestLog } from "../lib/api/request-log.ts";
import { requireAuth } from "../lib/auth/auth-middleware.ts";
import type { Hooklane } from "../lib/hooklane.ts";
import { consoleRoutes } from "./console/console-routes.ts";
import { apiReferenceRoutes } from "./routes/api-reference.ts";
import { opsRoutes } from "./routes/ops/ops-routes.ts";
import { resourceRoutes } from "./routes/v3/index.ts";
import { webhookRoutes } from "./routes/v3/webhooks.ts";

/**
 * The HTTP app: the v3 resource API, the webhooks control plane, its
 * reference (`/openapi.json`, `/docs`) and console (`/console`), health
 * (`/health`, `/ready`) and metrics (`/metrics`).
 */
export function createApp(hooklane: Hooklane): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();
  app.use(async (c, next) => {
    c.set("hooklane", hooklane);
    await next();
  });
  // Probes and scrapes come every few seconds, and /ready answers 503 during an
  // outage on purpose: they are answered before the request log.
  app.route("/", opsRoutes());
  app.use(requestIdentity, requestLog);
  app.use("/v3/*", requireAuth);
  app.route("/", resourceRoutes());
  const controlPlane = webhookRoutes();
  app.route("/", controlPlane.app);
  app.route("/", apiReferenceRoutes(controlPlane.operations));
  app.route(
    "/",
    consoleRoutes(async (path, init) => app.request(path, init)),
  );
  app.notFound((c) => problem(c, new ApiError(404, "Not Found", `No route for ${c.req.method} ${c.req.path}.`)));
  app.onError((error, c) => problem(c, error));
  return app;
}
