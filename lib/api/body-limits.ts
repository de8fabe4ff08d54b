import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { HooklaneEnv } from "./hono-env.ts";
import { JSON_DEPTH_LIMIT, nestsDeeperThan } from "./json-depth.ts";
import { ApiError, problem } from "./problem.ts";

/**
 * Refuses a body larger than `HTTP_BODY_LIMIT` with a 413 problem: at once
 * when its `Content-Length` says so (nothing is read), or as soon as a
 * streamed body passes the limit (at most the limit is held). The rest of the
 * upload is not kept: the Node server discards it for at most 500 ms or
 * 64 MiB, long enough for the client to read the 413, then hangs up.
 */
export const limitBodySize = createMiddleware<HooklaneEnv>(async (c, next) => {
  if (!c.req.raw.body) return next();
  const maxSize = c.var.hooklane.config.bodyLimitBytes;
  return bodyLimit({
    maxSize,
    onError: (c) => problem(c, new ApiError(413, "Content Too Large", `The body is larger than ${maxSize} bytes.`)),
  })(c, next);
});

/**
 * Refuses, with a 400 problem, a body nested deeper than JSON_DEPTH_LIMIT,
 * before any parser sees it: parsing and validating such a document is what
 * would exhaust the stack or hold the event loop. The body, already bounded
 * by `limitBodySize`, is read once here; later readers get the same text.
 */
export const limitJsonDepth = createMiddleware<HooklaneEnv>(async (c, next) => {
  if (c.req.raw.body && nestsDeeperThan(await c.req.text(), JSON_DEPTH_LIMIT)) {
    return problem(c, new ApiError(400, "Bad Request", `The body nests deeper than ${JSON_DEPTH_LIMIT} levels.`));
  }
  await next();
});
