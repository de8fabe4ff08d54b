// The ceiling, in its own process: the same signed-looking POSTs to the same
// subscriber over one keep-alive undici Pool, at the lane's concurrency, with
// no database. What this machine can do at most for a delivery pipeline.
import { Pool } from "undici";
import { serveRpc } from "./rpc.ts";
import { benchEventBody } from "./bench-event-body.ts";

export interface CeilingRun {
  url: string;
  deliveries: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** Keep-alive sockets to the subscriber. */
  connections: number;
}

async function run(options: CeilingRun): Promise<{ elapsedMs: number; failed: number }> {
  const target = new URL(options.url);
  const pool = new Pool(target.origin, { connections: options.connections, keepAliveTimeout: 30_000 });
  const headers = {
    "content-type": "application/json",
    "user-agent": "Hooklane-Bench/ceiling",
    "hooklane-attempt": "1",
    "hooklane-signature": `t=${Math.floor(Date.now() / 1_000)},v1=${"0".repeat(64)}`,
  };
  let next = 0;
  let failed = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < options.deliveries) {
      const i = next++;
      const response = await pool.request({
        path: target.pathname,
        method: "POST",
        headers: { ...headers, "hooklane-event-id": `evt_ceiling_${i}` },
        body: benchEventBody(`evt_ceiling_${i}`, `ceiling_${i}`),
      });
      await response.body.dump();
      if (response.statusCode !== 200) failed++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, options.deliveries) }, worker));
  const elapsedMs = performance.now() - started;
  await pool.close();
  return { elapsedMs, failed };
}

serveRpc({ run });
