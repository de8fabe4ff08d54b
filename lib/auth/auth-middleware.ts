import { createMiddleware } from "hono/factory";
import type { HooklaneEnv } from "../api/hono-env.ts";
import { ApiError, problem } from "../api/problem.ts";

/** Requires `Authorization: Bearer <jwt>` and puts the verified principal on the context. */
export const requireAuth = createMiddleware<HooklaneEnv>(async (c, next) => {
  const header = c.req.header("authorization") ?? "";
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match) return problem(c, new ApiError(401, "Unauthorized", "A bearer token is required."));
  try {
    c.set("principal", await c.var.hooklane.verifyToken(match[1]!));
  } catch (error) {
    return problem(
      c,
      new ApiError(401, "Unauthorized", "The bearer token is invalid or expired.", {}, { cause: error }),
    );
  }
  await next();
});
