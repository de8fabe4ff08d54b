import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { Socket } from "node:net";
import type { HooklaneEnv } from "./hono-env.ts";
import { JSON_DEPTH_LIMIT, nestsDeeperThan } from "./json-depth.ts";
import { ApiError, problem } from "./problem.ts";

/**
 * Refuses a body larger than `HTTP_BODY_LIMIT` with a 413 problem: at once
 * when its `Content-Length` says so (nothing is read), or as soon as a
 * streamed body passes the limit (at most the limit is held). The 413 says
 * `Connection: close`, and the connection ends once it is sent (`closeGently`):
 * the rest of the upload is not kept, only discarded for a moment, long enough
 * for the client to read the 413.
 */
export const limitBodySize = createMiddleware<HooklaneEnv>(async (c, next) => {
  const chunked = c.req.header("transfer-encoding") !== undefined;
  const length = c.req.header("content-length");
  if (!chunked && length === undefined && !unframedBody(c)) return next();
  const maxSize = c.get("hooklane").config.bodyLimitBytes;
  // A declared length is enforced by Node's parser: checking it is enough, nothing is read.
  if (!chunked && length !== undefined) return Number.parseInt(length, 10) > maxSize ? tooLarge(c, maxSize) : next();
  let limit = streamedLimits.get(maxSize);
  if (!limit) streamedLimits.set(maxSize, (limit = bodyLimit({ maxSize, onError: (c) => tooLarge(c, maxSize) })));
  return limit(c, next);
});

/** How long a connection closed under a client still uploading keeps discarding what it sends. */
const LINGER_MS = 1_000;

/**
 * Makes Node close this request's connection the way a server must while the
 * client is still sending: on `Connection: close` Node destroys the socket as
 * soon as the answer is written, and unread upload bytes then make the kernel
 * reset the connection, which throws away the 413 before the client reads it.
 * Instead the socket sends its FIN after the answer and goes on discarding the
 * upload (the Node server's drain) until the client hangs up, the drain gives
 * up (500 ms or 64 MiB), or LINGER_MS pass; then it is destroyed.
 */
function closeGently(c: Context): void {
  const socket = (c.env as { incoming?: { socket?: Socket } } | undefined)?.incoming?.socket;
  if (!socket) return;
  let lingering = false;
  socket.destroySoon = () => {
    if (lingering) return void socket.destroy();
    lingering = true;
    socket.end();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
  };
}

/** Hono's streamed body limit, one per size (there is one size per process). */
const streamedLimits = new Map<number, ReturnType<typeof bodyLimit>>();

function tooLarge(c: Context, maxSize: number): Response {
  // The rest of the body is never read, so the connection cannot carry another request: say so.
  c.header("connection", "close");
  closeGently(c);
  return problem(c, new ApiError(413, "Content Too Large", `The body is larger than ${maxSize} bytes.`));
}

/**
 * Whether the request carries a body. Over HTTP/1 it does exactly when it
 * sends `Content-Length` or `Transfer-Encoding`; deciding from them keeps
 * Node's request unwrapped (`c.req.raw.body` would build a web stream for
 * it). A Request made in-process (`app.request`, the console's own calls)
 * may have a body and neither header: that one is asked.
 */
function hasBody(c: Context): boolean {
  return (
    c.req.header("content-length") !== undefined || c.req.header("transfer-encoding") !== undefined || unframedBody(c)
  );
}

/** A body without framing headers: only a Request that did not come through Node's HTTP/1 parser can have one. */
function unframedBody(c: Context): boolean {
  const incoming = (c.env as { incoming?: { httpVersionMajor?: number } } | undefined)?.incoming;
  return incoming?.httpVersionMajor !== 1 && c.req.raw.body !== null;
}

/**
 * Refuses, with a 400 problem, a body nested deeper than JSON_DEPTH_LIMIT,
 * before any parser sees it: parsing and validating such a document is what
 * would exhaust the stack or hold the event loop. The body, already bounded
 * by `limitBodySize`, is read once here; later readers get the same text.
 */
export const limitJsonDepth = createMiddleware<HooklaneEnv>(async (c, next) => {
  if (hasBody(c) && nestsDeeperThan(await c.req.text(), JSON_DEPTH_LIMIT)) {
    return problem(c, new ApiError(400, "Bad Request", `The body nests deeper than ${JSON_DEPTH_LIMIT} levels.`));
  }
  await next();
});
