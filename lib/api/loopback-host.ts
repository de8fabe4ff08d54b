import { createMiddleware } from "hono/factory";
import type { HooklaneEnv } from "./hono-env.ts";
import { ApiError, problem } from "./problem.ts";

const LOOPBACK_HOST = /^(localhost|[a-z0-9-]+\.localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/;

/**
 * A server bound to loopback answers only requests addressed to loopback.
 * Otherwise a web page could rebind its own name to 127.0.0.1 and, as a
 * same-origin caller, reach a development server whose token secret is
 * published. A server listening elsewhere (`HOST`, production) is not limited.
 */
export const loopbackHostOnly = createMiddleware<HooklaneEnv>(async (c, next) => {
  // Routes can be built without services (the reference's own tests): nothing is bound then.
  const host = c.get("hooklane").config?.host;
  if (
    host !== undefined &&
    LOOPBACK_HOST.test(host) &&
    !LOOPBACK_HOST.test(new URL(c.req.url).hostname.toLowerCase())
  ) {
    return problem(
      c,
      new ApiError(403, "Forbidden", "This server listens on loopback and answers only requests addressed to it."),
    );
  }
  await next();
});
