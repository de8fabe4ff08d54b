/** Why an attempt failed, as data: retry decisions never match on messages. */
export const DELIVERY_ERROR_CLASSES = [
  "http_status",
  "redirect",
  "timeout",
  "connection_refused",
  "connection_reset",
  "dns",
  "tls",
  "response_too_large",
  "network",
  "blocked",
  "internal",
] as const;
export type DeliveryErrorClass = (typeof DELIVERY_ERROR_CLASSES)[number];

export type DeliveryOutcome =
  | { kind: "success"; statusCode: number; responseExcerpt: string | null }
  | {
      kind: "failure";
      errorClass: DeliveryErrorClass;
      message: string;
      statusCode: number | null;
      responseExcerpt: string | null;
      /** The subscriber's `Retry-After`, in ms from when the response arrived. */
      retryAfterMs?: number;
      /** `410 Gone`: the subscriber asked us to stop; the webhook is disabled. */
      gone: boolean;
    };

/**
 * Classifies a transport error (undici, DNS, TLS, abort, a refused address)
 * into a DeliveryErrorClass, reading the codes along the `cause` chain.
 */
export function classifyNetworkError(error: unknown): { errorClass: DeliveryErrorClass; message: string } {
  const err = error as { name?: string; message?: string } | undefined;
  const message = String(err?.message ?? error);
  const codes: string[] = [];
  let link = error as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; link && depth < 5; depth++, link = link.cause as typeof link) {
    if (typeof link.code === "string") codes.push(link.code);
  }
  const code = codes.join(" ");
  if (err?.name === "TimeoutError" || err?.name === "AbortError" || /TIMEOUT/.test(code)) {
    return { errorClass: "timeout", message: "no response within the deadline" };
  }
  if (codes.includes("ERR_HOOKLANE_BLOCKED_ADDRESS")) return { errorClass: "blocked", message };
  if (codes.includes("UND_ERR_HEADERS_OVERFLOW")) {
    return { errorClass: "response_too_large", message: "response headers exceed the size cap" };
  }
  if (codes.includes("ECONNREFUSED")) return { errorClass: "connection_refused", message };
  if (codes.some((c) => c === "ECONNRESET" || c === "UND_ERR_SOCKET" || c === "EPIPE")) {
    return { errorClass: "connection_reset", message };
  }
  if (codes.some((c) => c === "ENOTFOUND" || c === "EAI_AGAIN" || c === "ENODATA"))
    return { errorClass: "dns", message };
  if (/CERT|TLS|SSL|EPROTO|ALTNAME|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return { errorClass: "tls", message };
  return { errorClass: "network", message: code ? `${code}: ${message}` : message };
}
