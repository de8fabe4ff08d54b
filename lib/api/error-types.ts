/** One kind of error the API answers with: a stable `type` URI and `code`, one per HTTP status. */
export interface ErrorType {
  /** The problem document's `type`: an identifier, compared as a string (it need not resolve). */
  type: string;
  /** The problem document's `code`: the same kind, short, for branching in client code. */
  code: string;
  status: number;
  title: string;
  /** When it happens, for the OpenAPI document and docs/errors.md. */
  description: string;
}

const BASE = "https://hooklane.dev/errors/";

const kind = (code: string, status: number, title: string, description: string): ErrorType => ({
  type: `${BASE}${code.replaceAll("_", "-")}`,
  code,
  status,
  title,
  description,
});

/**
 * Every kind of error the API answers with. A client branches on `type` (or
 * `code`), never on `title` or `detail`, which are for people.
 */
export const ERROR_TYPES: readonly ErrorType[] = [
  kind(
    "bad_request",
    400,
    "Bad Request",
    "The body could not be read: it is not a JSON document, or nests deeper than 64 levels.",
  ),
  kind(
    "unauthorized",
    401,
    "Unauthorized",
    "No bearer token, or one that is not accepted; `WWW-Authenticate` says why (expired, wrong issuer or audience, …).",
  ),
  kind(
    "forbidden",
    403,
    "Forbidden",
    "The caller may not do this: an admin-only operation, or a request addressed to another host than the loopback the server listens on.",
  ),
  kind(
    "not_found",
    404,
    "Not Found",
    "No such route, or no such object in the caller's scope (another account's object is absent, never forbidden).",
  ),
  kind(
    "method_not_allowed",
    405,
    "Method Not Allowed",
    "The path exists but not with this method; `Allow` lists the methods it has.",
  ),
  kind(
    "conflict",
    409,
    "Conflict",
    "The object's state does not allow this now (it already exists, or a delivery is in flight).",
  ),
  kind(
    "payload_too_large",
    413,
    "Content Too Large",
    "The body is larger than `HTTP_BODY_LIMIT` (1 MiB by default); refused before it is read.",
  ),
  kind(
    "validation_failed",
    422,
    "Unprocessable Content",
    "The input failed validation; `errors` names each field and what is wrong with it.",
  ),
  kind(
    "rate_limited",
    429,
    "Too Many Requests",
    "A quota of the caller's account, or the request rate of its token or account, is used up (`quota` names it, `limit` is its size); `Retry-After` says when to try again.",
  ),
  kind(
    "internal",
    500,
    "Internal Server Error",
    "An unexpected failure; it is logged with the request id. Retrying may help.",
  ),
  kind(
    "unavailable",
    503,
    "Service Unavailable",
    "A dependency (the database, the identity provider's keys) is unreachable; retry after `Retry-After` seconds.",
  ),
];

const byStatus = new Map(ERROR_TYPES.map((type) => [type.status, type]));

/** The error kind of an HTTP status, or undefined for a status the API never answers with. */
export function errorTypeForStatus(status: number): ErrorType | undefined {
  return byStatus.get(status);
}
