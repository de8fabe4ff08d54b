import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ZodError } from "zod";

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

export const notFound = (what: string) => new ApiError(404, "Not Found", `No such ${what}.`);

/** Renders any thrown value as one problem document; unknown errors never leak their message. */
export function problem(c: Context, error: unknown): Response {
  if (error instanceof ZodError) {
    const errors = error.issues.map((issue) => ({ field: issue.path.join(".") || "(body)", message: issue.message }));
    const detail = errors.map((e) => `${e.field}: ${e.message}`).join("; ");
    return send(c, 422, { title: "Unprocessable Content", detail, errors });
  }
  if (error instanceof ApiError) {
    return send(c, error.status, { title: error.message, detail: error.detail, ...error.extra });
  }
  console.error("[api] unhandled error", error);
  return send(c, 500, { title: "Internal Server Error", detail: "The request could not be completed." });
}

function send(c: Context, status: ContentfulStatusCode, body: Record<string, unknown>): Response {
  return c.body(JSON.stringify({ type: "about:blank", status, ...body }), status, {
    "content-type": "application/problem+json",
  });
}
