import { Hono } from "hono";
import { methodNotAllowed } from "hono/method-not-allowed";
import { limitBodySize, limitJsonDepth } from "../lib/api/body-limits.ts";
import { loopbackHostOnly } from "../lib/api/loopback-host.ts";
import { rateLimit } from "../lib/api/rate-limit.ts";
import type { HooklaneEnv } from "../lib/api/hono-env.ts";
import { ApiError, problem } from "../lib/api/problem.ts";
import { requestIdentity, requestLog } from "../lib/api/request-log.ts";
import { requireAuth } from "../lib/auth/auth-middleware.ts";
import { consolePrincipalBindings } from "../lib/auth/console-principal.ts";
import type { Hooklane } from "../lib/hooklane.ts";
import { consoleRoutes } from "./console/console-routes.ts";
import { apiReferenceRoutes } from "./routes/api-reference.ts";
import { opsRoutes } from "./routes/ops/ops-routes.ts";
import { keySetRoutes } from "./routes/keys/jwks.ts";
import { v3Routes } from "./routes/v3/index.ts";
import { securityHeaders } from "./security-headers.ts";

/**
 * The HTTP app: the v3 resource API and the webhooks control plane, their
 * reference (`/openapi.json`, `/docs`), the console (`/console`), health
 * (`/health`, `/ready`) and metrics (`/metrics`).
 * Every answer carries the security headers; every body is bounded
 * (`HTTP_BODY_LIMIT`, and JSON nesting for the API) before anything reads it;
 * a known path asked with another method answers 405 with `Allow`; every
 * authenticated request is held to the request rates (`API_RATE_LIMIT_*`).
 */
export function createApp(hooklane: Hooklane): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();
  app.use(async (c, next) => {
    c.set("hooklane", hooklane);
    await next();
  });
  app.use(requestIdentity, securityHeaders, loopbackHostOnly);
  // Probes and scrapes come every few seconds, and /ready answers 503 during an
  // outage on purpose: they are answered (with their request id) before the request log.
  app.route("/", opsRoutes());
  app.use(requestLog, limitBodySize);
  app.use(
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) => {
        c.header("allow", methods.join(", "));
        const detail = `${c.req.path} answers ${methods.join(", ")}, not ${c.req.method}.`;
        return problem(c, new ApiError(405, "Method Not Allowed", detail));
      },
    }),
  );
  // Public keys for receivers: no token, nothing read from the request but its path.
  app.route("/", keySetRoutes());
  // Only authenticated callers get their body read; every JSON parser comes after the depth check.
  // The console calls the API in-process, so its pages count against the same rates.
  app.use("/v3/*", requireAuth, rateLimit(), limitJsonDepth);
  const v3 = v3Routes();
  app.route("/", v3.app);
  app.route("/", apiReferenceRoutes(v3.operations));
  app.route(
    "/",
    consoleRoutes(async (path, init, principal) =>
      app.request(path, init, principal ? consolePrincipalBindings(principal) : undefined),
    ),
  );
  app.notFound((c) => problem(c, new ApiError(404, "Not Found", `No route for ${c.req.method} ${c.req.path}.`)));
  app.onError((error, c) => problem(c, error));
  return app;
}
