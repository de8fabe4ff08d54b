import { Hono } from "hono";
import type { HooklaneEnv } from "../lib/api/hono-env.ts";
import { ApiError, problem } from "../lib/api/problem.ts";
import { requestIdentity, requestLog } from "../lib/api/request-log.ts";
import { requireAuth } from "../lib/auth/auth-middleware.ts";
import type { Hooklane } from "../lib/hooklane.ts";
import { VERSION } from "../lib/version.ts";
import { consoleRoutes } from "./console/console-routes.ts";
import { apiReferenceRoutes } from "./routes/api-reference.ts";
import { v3Routes } from "./routes/v3/index.ts";

/**
 * The HTTP app: the v3 resource API and the webhooks control plane, their
 * reference (`/openapi.json`, `/docs`), the console (`/console`), health.
 */
export function createApp(hooklane: Hooklane): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();
  app.use(async (c, next) => {
    c.set("hooklane", hooklane);
    await next();
  });
  app.use(requestIdentity, requestLog);
  app.get("/health", (c) => c.json({ status: "ok", version: VERSION, database: hooklane.database.kind }));
  app.use("/v3/*", requireAuth);
  const v3 = v3Routes();
  app.route("/", v3.app);
  app.route("/", apiReferenceRoutes(v3.operations));
  app.route(
    "/",
    consoleRoutes(async (path, init) => app.request(path, init)),
  );
  app.notFound((c) => problem(c, new ApiError(404, "Not Found", `No route for ${c.req.method} ${c.req.path}.`)));
  app.onError((error, c) => problem(c, error));
  return app;
}
