import { createMiddleware } from "hono/factory";
import type { HooklaneEnv } from "../api/hono-env.ts";
import { ApiError, problem } from "../api/problem.ts";
import { consolePrincipal } from "./console-principal.ts";
import { TokenRejected } from "./jwt.ts";

const REALM = 'Bearer realm="hooklane"';

/**
 * Requires `Authorization: Bearer <jwt>` and puts the verified principal on
 * the context. A 401 carries `WWW-Authenticate` (RFC 6750): no error code
 * when no token was sent, `invalid_token` with the reason otherwise. When the
 * identity provider's keys cannot be fetched the answer is a 503: the token
 * may well be good.
 */
export const requireAuth = createMiddleware<HooklaneEnv>(async (c, next) => {
  // The console's in-process call for a portal session it verified itself.
  const handed = consolePrincipal(c.env);
  if (handed) {
    c.set("principal", handed);
    return next();
  }
  const header = c.req.header("authorization") ?? "";
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match) {
    c.header("www-authenticate", REALM);
    return problem(c, new ApiError(401, "Unauthorized", "A bearer token is required."));
  }
  try {
    c.set("principal", await c.get("hooklane").verifyToken(match[1]!));
  } catch (error) {
    if (error instanceof TokenRejected) {
      c.header("www-authenticate", `${REALM}, error="invalid_token", error_description="${error.description}"`);
      return problem(c, new ApiError(401, "Unauthorized", error.description, {}, { cause: error }));
    }
    c.get("log").warn({ err: error }, "bearer token could not be verified");
    c.header("retry-after", "5");
    return problem(
      c,
      new ApiError(
        503,
        "Service Unavailable",
        "The token could not be verified now; try again shortly.",
        {},
        { cause: error },
      ),
    );
  }
  await next();
});
