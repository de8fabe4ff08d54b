import type { ListenDelivery } from "../../lib/webhook/listen/listen-messages.ts";
import { EventSourceParserStream } from "eventsource-parser/stream";

export interface ListenStreamReader {
  /** The data of the next event named `event` (others are skipped); rejects when the stream ends first or after `timeoutMs`. */
  next(event: string, timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

/** Reads a listen session's server-sent events, as the CLI does. */
export function readListenStream(response: Response): ListenStreamReader {
  const reader = response
    .body!.pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    .getReader();
  return {
    async next(event, timeoutMs = 20_000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no ${event} event within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        for (;;) {
          const { value, done } = await Promise.race([reader.read(), timeout]);
          if (done) throw new Error(`the stream ended before a ${event} event`);
          if (value.event === event) return value.data;
        }
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => reader.cancel(),
  };
}

/** What the CLI reports for `delivery`: the local receiver answered `status`. */
export function listenReport(delivery: ListenDelivery, status: number, overrides: Record<string, unknown> = {}) {
  const outcome =
    status < 300
      ? { kind: "success", statusCode: status, responseExcerpt: "ok" }
      : {
          kind: "failure",
          errorClass: "http_status",
          message: `HTTP ${status}`,
          statusCode: status,
          responseExcerpt: "boom",
          gone: status === 410,
        };
  return {
    dispatch: delivery.dispatch,
    lease: delivery.lease,
    attempt: delivery.attempt,
    signature: delivery.signature,
    started: new Date().toISOString(),
    durationMs: 3,
    outcome,
    ...overrides,
  };
}
