import { Agent } from "undici";
import { classifyNetworkError, type DeliveryOutcome } from "./webhook-delivery-outcome.ts";
import { parseRetryAfter } from "./webhook-retry-policy.ts";

export interface HttpSenderOptions {
  /** Deadline for the whole exchange: connect, headers and body. */
  timeoutMs: number;
  /** Keep-alive sockets per subscriber origin; one slow endpoint cannot take them all. */
  connectionsPerOrigin: number;
  /** Response bytes read at most; the rest is discarded with the connection. */
  maxResponseBytes?: number;
  /** Response bytes kept for the attempt log. */
  excerptBytes?: number;
}

export interface HttpSender {
  /** POSTs once, never following redirects. Never throws: every failure is a DeliveryOutcome. */
  post(url: string, headers: Record<string, string>, body: string): Promise<DeliveryOutcome>;
  close(): Promise<void>;
}

/** A keep-alive sender over one undici Agent: a connection pool per origin. */
export function createHttpSender(options: HttpSenderOptions): HttpSender {
  const maxResponseBytes = options.maxResponseBytes ?? 64 * 1024;
  const excerptBytes = options.excerptBytes ?? 1024;
  const agent = new Agent({
    connections: options.connectionsPerOrigin,
    keepAliveTimeout: 30_000,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connectTimeout: options.timeoutMs,
    maxHeaderSize: 16 * 1024,
  });

  return {
    async post(url, headers, body) {
      const signal = AbortSignal.timeout(options.timeoutMs);
      try {
        const target = new URL(url);
        const response = await agent.request({
          origin: target.origin,
          path: target.pathname + target.search,
          method: "POST",
          headers,
          body,
          signal,
        });
        const excerpt = await readExcerpt(response.body, maxResponseBytes, excerptBytes);
        const statusCode = response.statusCode;
        if (statusCode >= 200 && statusCode < 300) return { kind: "success", statusCode, responseExcerpt: excerpt };
        const retryAfter = response.headers["retry-after"];
        const retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, Date.now());
        const redirect = statusCode >= 300 && statusCode < 400;
        return {
          kind: "failure",
          errorClass: redirect ? "redirect" : "http_status",
          message: redirect ? `redirect ${statusCode} not followed` : `HTTP ${statusCode}`,
          statusCode,
          responseExcerpt: excerpt,
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
          gone: statusCode === 410,
        };
      } catch (error) {
        const { errorClass, message } = classifyNetworkError(signal.aborted ? signal.reason : error);
        return { kind: "failure", errorClass, message, statusCode: null, responseExcerpt: null, gone: false };
      }
    },
    close: () => agent.close(),
  };
}

/** Reads up to `max` bytes of a body (dropping the rest) and returns the first `keep` as text. */
async function readExcerpt(
  body: AsyncIterable<Buffer> & { destroy(): void },
  max: number,
  keep: number,
): Promise<string | null> {
  const chunks: Buffer[] = [];
  let read = 0;
  for await (const chunk of body) {
    if (read < keep) chunks.push(chunk);
    read += chunk.length;
    if (read >= max) {
      body.destroy();
      break;
    }
  }
  if (read === 0) return null;
  return Buffer.concat(chunks).subarray(0, keep).toString("utf8");
}
