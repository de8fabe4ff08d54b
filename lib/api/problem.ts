import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ZodError } from "zod";
import { errorTypeForStatus } from "./error-types.ts";
import type { HooklaneEnv } from "./hono-env.ts";
import { fieldErrors } from "./validation-errors.ts";

/** An error the API answers with as `application/problem+json` (RFC 9457). */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: ContentfulStatusCode;
  readonly detail: string | undefined;
  readonly extra: Record<string, unknown>;

  constructor(
    status: ContentfulStatusCode,
    title: string,
    detail?: string,
    extra: Record<string, unknown> = {},
    options?: ErrorOptions,
  ) {
    super(title, options);
    this.status = status;
    this.detail = detail;
    this.extra = extra;
  }
}

/** 429: one of the account's quotas is used up; the answer carries `Retry-After`. */
export class QuotaExceededError extends ApiError {
  override name = "QuotaExceededError";
  readonly retryAfterSeconds: number;

  constructor(quota: string, limit: number, detail: string, retryAfterSeconds: number) {
    super(429, "Too Many Requests", detail, { quota, limit });
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds));
  }
}

export const notFound = (what: string) => new ApiError(404, "Not Found", `No such ${what}.`);

/** Renders any thrown value as one problem document; unknown errors never leak their message. */
export function problem(c: Context, error: unknown): Response {
  if (error instanceof ZodError) {
    const errors = fieldErrors(error);
    const detail = errors.map((e) => `${e.field}: ${e.message}`).join("; ");
    return send(c, 422, { title: "Unprocessable Content", detail, errors });
  }
  if (error instanceof ApiError) {
    if (error instanceof QuotaExceededError) c.header("retry-after", String(error.retryAfterSeconds));
    return send(c, error.status, { title: error.message, detail: error.detail, ...error.extra });
  }
  const hooklane = (c as Context<HooklaneEnv>).get("hooklane");
  const log = (c as Context<HooklaneEnv>).get("log");
  if (hooklane?.database?.outage.report(error)) {
    // Logged once per outage by the tracker; the caller may simply try again.
    c.header("retry-after", "5");
    return send(c, 503, { title: "Service Unavailable", detail: "The database is unreachable; try again shortly." });
  }
  (log ?? hooklane?.logger)?.error({ err: error }, "unhandled error");
  return send(c, 500, { title: "Internal Server Error", detail: "The request could not be completed." });
}

function send(c: Context, status: ContentfulStatusCode, body: Record<string, unknown>): Response {
  const requestId = (c as Context<HooklaneEnv>).get("requestId");
  // A status outside the registry (none is answered today) keeps RFC 9457's "about:blank".
  const kind = errorTypeForStatus(status);
  const identity = kind ? { type: kind.type, code: kind.code } : { type: "about:blank" };
  return c.body(JSON.stringify({ ...identity, status, ...body, ...(requestId ? { requestId } : {}) }), status, {
    "content-type": "application/problem+json",
  });
}
