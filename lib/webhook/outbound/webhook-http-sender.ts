import { Agent, type Dispatcher } from "undici";
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
  /**
   * Sends one `OPTIONS` (the endpoint-consent request), as `post` does, and resolves its outcome with the answer's
   * headers named in `keep` (lower case; a repeated header's values joined with ", ").
   */
  options(
    url: string,
    headers: Record<string, string>,
    keep: readonly string[],
  ): Promise<{ outcome: DeliveryOutcome; headers: Record<string, string> }>;
  close(): Promise<void>;
}

/** The lane's outbound HTTP sender, as configured. */
export function createSender(config: {
  timeoutMs: number;
  connectionsPerOrigin: number;
  allowedHosts: readonly string[];
}): HttpSender {
  return createHttpSender({
    timeoutMs: config.timeoutMs,
    connectionsPerOrigin: config.connectionsPerOrigin,
    allowedHosts: config.allowedHosts,
  });
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
  const limits = { maxResponseBytes, excerptBytes, timeoutMs: options.timeoutMs };

  async function send(method: "POST" | "OPTIONS", url: string, request: Request, keep: readonly string[]) {
    const target = URL.parse(url);
    if (!target) return { outcome: NOT_A_URL, headers: {} };
    // Waiting for a free socket of this origin is not the subscriber's time: the deadline starts after.
    const release = await slots.acquire(target.origin);
    try {
      return await exchange(agent, target, method, request, limits, keep);
    } finally {
      release();
    }
  }

  return {
    post: async (url, headers, body) => (await send("POST", url, { headers, body }, [])).outcome,
    options: (url, headers, keep) => send("OPTIONS", url, { headers, body: null }, keep),
    close: () => agent.close(),
  };
}

const NOT_A_URL: DeliveryOutcome = {
  kind: "failure",
  errorClass: "blocked",
  message: "not a URL",
  statusCode: null,
  responseExcerpt: null,
  gone: false,
};

interface Request {
  headers: Record<string, string>;
  body: string | null;
}

interface ExchangeLimits {
  maxResponseBytes: number;
  excerptBytes: number;
  timeoutMs: number;
}

/**
 * One POST through undici's dispatch API: the response is read by the
 * handler as it arrives, with no body stream in between (a third of the
 * sender's CPU per request on loopback). One deadline covers the whole
 * exchange: undici's own timeouts restart with every chunk. Never rejects.
 */
function exchange(
  agent: Agent,
  target: URL,
  method: "POST" | "OPTIONS",
  request: Request,
  limits: ExchangeLimits,
  keep: readonly string[],
): Promise<{ outcome: DeliveryOutcome; headers: Record<string, string> }> {
  const answerHeaders: Record<string, string> = {};
  return new Promise((resolve) => {
    let controller: Dispatcher.DispatchController | undefined;
    let statusCode = 0;
    let retryAfterMs: number | undefined;
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let read = 0;
    /** Set when this side ended the exchange (deadline, size cap): the error undici reports next is ours. */
    let cause: Error | undefined;
    let settled = false;
    const settle = (outcome: DeliveryOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve({ outcome, headers: answerHeaders });
    };
    const stop = (reason: Error) => {
      cause ??= reason;
      // Before the request reaches a socket there is nothing to abort yet: onRequestStart does it.
      controller?.abort(reason);
    };
    const failed = (error: Error) => {
      const { errorClass, message } = classifyNetworkError(cause ?? error);
      settle({ kind: "failure", errorClass, message, statusCode: null, responseExcerpt: null, gone: false });
    };
    const deadline = setTimeout(
      () => stop(new DOMException("The operation was aborted due to timeout", "TimeoutError")),
      limits.timeoutMs,
    );
    const excerpt = () => (read === 0 ? null : Buffer.concat(kept).toString("utf8") + (read > keptBytes ? "…" : ""));
    const failure = () => ({
      kind: "failure" as const,
      statusCode,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      gone: statusCode === 410,
    });
    const tooLarge = (message: string, responseExcerpt: string | null): DeliveryOutcome => ({
      ...failure(),
      errorClass: "response_too_large",
      message,
      responseExcerpt,
    });

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (cause) stop(cause);
      },
      onResponseStart(c, code, responseHeaders) {
        // Informational answers (100, 103) come before the one that counts.
        if (code < 200) return;
        statusCode = code;
        const retryAfter = responseHeaders["retry-after"];
        retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, Date.now());
        for (const name of keep) {
          const value = responseHeaders[name];
          if (value !== undefined) answerHeaders[name] = Array.isArray(value) ? value.join(", ") : String(value);
        }
        const declared = Number(responseHeaders["content-length"]);
        if (declared > limits.maxResponseBytes) {
          // Settled before the abort: undici reports the abort as an error at once.
          settle(tooLarge(`response body of ${declared} bytes exceeds the ${limits.maxResponseBytes}-byte cap`, null));
          stop(new Error("response too large"));
        }
      },
      onResponseData(c, chunk) {
        if (statusCode === 0 || settled) return;
        read += chunk.length;
        if (keptBytes < limits.excerptBytes) {
          // A copy: the chunk may be a view of the socket's buffer.
          const slice = Buffer.from(chunk.subarray(0, limits.excerptBytes - keptBytes));
          kept.push(slice);
          keptBytes += slice.length;
        }
        if (read > limits.maxResponseBytes) {
          settle(tooLarge(`response body exceeds the ${limits.maxResponseBytes}-byte cap`, excerpt()));
          stop(new Error("response too large"));
        }
      },
      onResponseEnd() {
        if (statusCode >= 200 && statusCode < 300) {
          settle({ kind: "success", statusCode, responseExcerpt: excerpt() });
          return;
        }
        const redirect = statusCode >= 300 && statusCode < 400;
        settle({
          ...failure(),
          errorClass: redirect ? "redirect" : "http_status",
          message: redirect ? `redirect ${statusCode} not followed` : `HTTP ${statusCode}`,
          responseExcerpt: excerpt(),
        });
      },
      onResponseError(c, error) {
        failed(error);
      },
    };
    try {
      agent.dispatch({ origin: target.origin, path: target.pathname + target.search, method, ...request }, handler);
    } catch (error) {
      failed(error as Error);
    }
  });
}
