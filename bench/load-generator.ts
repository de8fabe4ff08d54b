// The load generator, in its own process: autocannon against the API's
// `POST /v3/payment-debts`, recording for every 201 the created id and when
// its answer was complete (the clock the subscriber also uses).
import autocannon from "autocannon";
import { serveRpc } from "./rpc.ts";

export interface LoadRun {
  url: string;
  token: string;
  connections: number;
  /** Stop after this many requests... */
  amount?: number;
  /** ...or after this many seconds. */
  durationSeconds?: number;
  /** Requests per second across all connections (light load). */
  overallRate?: number;
  /** Keep the id and 2xx time of every created resource. */
  recordIds: boolean;
}

export interface LoadResult {
  ok: number;
  failed: number;
  elapsedMs: number;
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  ids: string[];
  /** `performance.timeOrigin + performance.now()` when each 201 was read. */
  times: number[];
}

const BODY = JSON.stringify({ amount: "42.00", currency: "EUR" });

async function run(options: LoadRun): Promise<LoadResult> {
  const ids: string[] = [];
  const times: number[] = [];
  const onResponse = (status: number, body: string) => {
    if (status !== 201) return;
    times.push(performance.timeOrigin + performance.now());
    ids.push(String(JSON.parse(body).id));
  };
  const started = performance.now();
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    pipelining: 1,
    timeout: 30,
    ...(options.amount ? { amount: options.amount } : { duration: options.durationSeconds ?? 5 }),
    ...(options.overallRate ? { overallRate: options.overallRate } : {}),
    requests: [
      {
        method: "POST",
        path: "/v3/payment-debts",
        headers: { authorization: `Bearer ${options.token}`, "content-type": "application/json" },
        body: BODY,
        ...(options.recordIds ? { onResponse } : {}),
      },
    ],
  });
  // autocannon notices it has sent `amount` requests on its once-a-second tick: with the answers' times at hand,
  // the run ends at the last answer, not at that tick.
  const lastAnswer = times.at(-1);
  const elapsedMs = (lastAnswer === undefined ? performance.now() : lastAnswer - performance.timeOrigin) - started;
  const ok = result["2xx"];
  return {
    ok,
    failed: result.non2xx + result.errors + result.timeouts,
    elapsedMs,
    requestsPerSecond: (ok * 1_000) / elapsedMs,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    ids,
    times,
  };
}

serveRpc({ run });
