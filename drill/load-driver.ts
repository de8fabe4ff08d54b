import { now } from "../bench/bench-context.ts";

export interface LoadOptions {
  /** The API's base URL (it keeps its port across restarts). */
  url: string;
  token: string;
  /** Requests started per second (open loop: a slow or dead API does not slow the schedule). */
  rate: number;
  /** Requests in flight at most; a request due while all are busy is skipped and counted. */
  concurrency: number;
  timeoutMs: number;
}

export interface LoadRecord {
  /** Requests started. */
  sent: number;
  /** Requests due while `concurrency` were in flight, never sent. */
  skipped: number;
  /** Every 2xx: the created resource's id, when its answer was read (`now()`'s clock) and how long it took. */
  acknowledged: Array<{ id: string; at: number; ms: number }>;
  /** Everything else, by status code or error code. */
  failed: Record<string, number>;
  startedAt: number;
  stoppedAt: number;
}

export interface RunningLoad {
  /** Acknowledged so far. */
  readonly acknowledged: number;
  /** Stops starting requests, waits for those in flight, and returns the record. */
  stop(): Promise<LoadRecord>;
}

const BODY = JSON.stringify({ amount: "42.00", currency: "EUR" });

/**
 * `POST /v3/payment-debts` at a fixed rate over real HTTP with a bearer
 * token, recording the id and time of every 2xx and the reason of every
 * other outcome. Requests that die with the API (refused, reset, timed out)
 * are failures, never retried: a caller who saw no 2xx was promised nothing.
 */
export function startLoad(options: LoadOptions): RunningLoad {
  const record: LoadRecord = { sent: 0, skipped: 0, acknowledged: [], failed: {}, startedAt: now(), stoppedAt: NaN };
  const inFlight = new Set<Promise<void>>();
  const fail = (reason: string) => void (record.failed[reason] = (record.failed[reason] ?? 0) + 1);

  async function one(): Promise<void> {
    const started = now();
    try {
      const response = await fetch(`${options.url}/v3/payment-debts`, {
        method: "POST",
        headers: { authorization: `Bearer ${options.token}`, "content-type": "application/json" },
        body: BODY,
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      const text = await response.text();
      if (response.status >= 200 && response.status < 300) {
        const at = now();
        record.acknowledged.push({ id: String(JSON.parse(text).id), at, ms: at - started });
      } else {
        fail(String(response.status));
      }
    } catch (error) {
      fail(errorCode(error));
    }
  }

  let due = 0;
  const timer = setInterval(() => {
    // Catch up on the schedule whatever the timer's own lateness.
    const target = Math.floor(((now() - record.startedAt) * options.rate) / 1_000);
    for (; due < target; due++) {
      if (inFlight.size >= options.concurrency) {
        record.skipped++;
        continue;
      }
      record.sent++;
      const request = one().finally(() => inFlight.delete(request));
      inFlight.add(request);
    }
  }, 5);

  return {
    get acknowledged() {
      return record.acknowledged.length;
    },
    async stop() {
      clearInterval(timer);
      await Promise.all(inFlight);
      record.stoppedAt = now();
      return record;
    },
  };
}

function errorCode(error: unknown): string {
  const { name, cause } = error as { name?: string; cause?: { code?: string } };
  if (name === "TimeoutError") return "timeout";
  return cause?.code ?? name ?? "error";
}
