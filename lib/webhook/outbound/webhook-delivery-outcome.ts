/** Why an attempt failed, as data: retry decisions never match on messages. */
export type DeliveryErrorClass =
  | "http_status"
  | "redirect"
  | "timeout"
  | "connection_refused"
  | "connection_reset"
  | "dns"
  | "tls"
  | "network"
  | "blocked"
  | "internal";

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

/** Classifies a transport error (undici, DNS, TLS, abort) into a DeliveryErrorClass. */
export function classifyNetworkError(error: unknown): { errorClass: DeliveryErrorClass; message: string } {
  const err = error as { name?: string; code?: string; message?: string; cause?: unknown };
  const code = err?.code ?? (err?.cause as { code?: string } | undefined)?.code ?? "";
  const message = String(err?.message ?? error);
  if (err?.name === "TimeoutError" || err?.name === "AbortError" || /TIMEOUT/.test(code)) {
    return { errorClass: "timeout", message: "no response within the deadline" };
  }
  if (code === "ECONNREFUSED") return { errorClass: "connection_refused", message };
  if (code === "ECONNRESET" || code === "UND_ERR_SOCKET" || code === "EPIPE") {
    return { errorClass: "connection_reset", message };
  }
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "ENODATA") return { errorClass: "dns", message };
  if (/CERT|TLS|SSL|EPROTO|ALTNAME|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return { errorClass: "tls", message };
  return { errorClass: "network", message: code ? `${code}: ${message}` : message };
}
