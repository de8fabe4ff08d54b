import { Agent } from "undici";
import { classifyAddress, type AddressClassifier } from "./webhook-address-classifier.ts";
import { classifyNetworkError, type DeliveryOutcome } from "./webhook-delivery-outcome.ts";
import { OriginSlots } from "./origin-slots.ts";
import { createPinnedConnector, systemResolve, type ResolveHost } from "./webhook-pinned-connector.ts";
import { parseRetryAfter } from "./webhook-retry-policy.ts";

export interface HttpSenderOptions {
  /** Deadline for the whole exchange: connect, headers and the last byte of the body. */
  timeoutMs: number;
  /** Keep-alive sockets per subscriber origin, and requests in flight per origin at most. */
  connectionsPerOrigin: number;
  /** Hosts whose addresses are not checked (`WEBHOOK_ALLOWED_HOSTS`). */
  allowedHosts: readonly string[];
  /** Response body bytes read at most; a longer body fails the attempt. */
  maxResponseBytes?: number;
  /** Response header bytes accepted at most; more fails the attempt. */
  maxHeaderBytes?: number;
  /** Response bytes kept for the attempt log. */
  excerptBytes?: number;
  /** Host name → addresses; the system resolver unless a test injects one. */
  resolve?: ResolveHost;
  /** Which addresses count as public; the IANA registries unless a test injects one. */
  classify?: AddressClassifier;
  /** Certificate authorities to trust instead of the system's. */
  ca?: string | Buffer | Array<string | Buffer>;
}

export interface HttpSender {
  /** POSTs once, never following redirects. Never throws: every failure is a DeliveryOutcome. */
  post(url: string, headers: Record<string, string>, body: string): Promise<DeliveryOutcome>;
  close(): Promise<void>;
}

/**
 * A keep-alive sender over one undici Agent (a connection pool per origin)
 * whose sockets only reach checked public addresses (see
 * createPinnedConnector). A subscriber cannot hold an attempt past the
 * deadline (a body dripped byte by byte included), nor make the worker
 * buffer more than the header and body caps.
 */
export function createHttpSender(options: HttpSenderOptions): HttpSender {
  const maxResponseBytes = options.maxResponseBytes ?? 256 * 1024;
  const maxHeaderBytes = options.maxHeaderBytes ?? 16 * 1024;
  const excerptBytes = options.excerptBytes ?? 1024;
  const agent = new Agent({
    connections: options.connectionsPerOrigin,
    keepAliveTimeout: 30_000,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    maxHeaderSize: maxHeaderBytes,
    connect: createPinnedConnector({
      resolve: options.resolve ?? systemResolve,
      classify: options.classify ?? classifyAddress,
      allowedHosts: options.allowedHosts,
      timeoutMs: options.timeoutMs,
      ...(options.ca ? { ca: options.ca } : {}),
    }),
  });

  const slots = new OriginSlots(options.connectionsPerOrigin);

  return {
    async post(url, headers, body) {
      const target = URL.parse(url);
      if (!target)
        return {
          kind: "failure",
          errorClass: "blocked",
          message: "not a URL",
          statusCode: null,
          responseExcerpt: null,
          gone: false,
        };
      // Waiting for a free socket of this origin is not the subscriber's time: the deadline starts after.
      const release = await slots.acquire(target.origin);
      // One signal for the whole exchange: undici's own timeouts restart with every chunk.
      const signal = AbortSignal.timeout(options.timeoutMs);
      try {
        const response = await agent.request({
          origin: target.origin,
          path: target.pathname + target.search,
          method: "POST",
          headers,
          body,
          signal,
        });
        const statusCode = response.statusCode;
        const retryAfter = response.headers["retry-after"];
        const retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, Date.now());
        const failure = {
          kind: "failure" as const,
          statusCode,
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
          gone: statusCode === 410,
        };
        const declared = Number(response.headers["content-length"]);
        if (declared > maxResponseBytes) {
          response.body.destroy();
          return {
            ...failure,
            errorClass: "response_too_large",
            message: `response body of ${declared} bytes exceeds the ${maxResponseBytes}-byte cap`,
            responseExcerpt: null,
          };
        }
        const read = await readCapped(response.body, maxResponseBytes, excerptBytes);
        if (read.overflow) {
          return {
            ...failure,
            errorClass: "response_too_large",
            message: `response body exceeds the ${maxResponseBytes}-byte cap`,
            responseExcerpt: read.excerpt,
          };
        }
        if (statusCode >= 200 && statusCode < 300) {
          return { kind: "success", statusCode, responseExcerpt: read.excerpt };
        }
        const redirect = statusCode >= 300 && statusCode < 400;
        return {
          ...failure,
          errorClass: redirect ? "redirect" : "http_status",
          message: redirect ? `redirect ${statusCode} not followed` : `HTTP ${statusCode}`,
          responseExcerpt: read.excerpt,
        };
      } catch (error) {
        const { errorClass, message } = classifyNetworkError(signal.aborted ? signal.reason : error);
        return { kind: "failure", errorClass, message, statusCode: null, responseExcerpt: null, gone: false };
      } finally {
        release();
      }
    },
    close: () => agent.close(),
  };
}

/**
 * Reads a body up to `max` bytes, keeping only the first `keep` for the log
 * (marked with "…" when cut). Past `max` it stops, destroys the stream and
 * reports an overflow: the rest is never buffered.
 */
async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(): void },
  max: number,
  keep: number,
): Promise<{ excerpt: string | null; overflow: boolean }> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let read = 0;
  for await (const chunk of body) {
    read += chunk.length;
    if (keptBytes < keep) {
      const slice = chunk.subarray(0, keep - keptBytes);
      kept.push(Buffer.from(slice));
      keptBytes += slice.length;
    }
    if (read > max) {
      body.destroy();
      break;
    }
  }
  if (read === 0) return { excerpt: null, overflow: false };
  const excerpt = Buffer.concat(kept).toString("utf8") + (read > keptBytes ? "…" : "");
  return { excerpt, overflow: read > max };
}
