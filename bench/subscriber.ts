// The benchmark's subscriber, in its own process: a minimal keep-alive
// node:http receiver that answers 200 and records, per POST, its arrival time
// (on the clock the load generator also uses) and the body's `data.id`.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { serveRpc } from "./rpc.ts";

export interface SubscriberReady {
  url: string;
}

/** What arrived since the last reset, in arrival order. */
export interface Arrivals {
  ids: string[];
  /** `performance.timeOrigin + performance.now()`, milliseconds. */
  times: number[];
}

let arrivals: Arrivals = { ids: [], times: [] };
let waiting: { count: number; resolve(): void } | undefined;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const at = performance.timeOrigin + performance.now();
    res.writeHead(200, { "content-type": "text/plain", "content-length": "2" });
    res.end("ok");
    arrivals.ids.push(dataId(Buffer.concat(chunks).toString("utf8")));
    arrivals.times.push(at);
    if (waiting && arrivals.times.length >= waiting.count) {
      waiting.resolve();
      waiting = undefined;
    }
  });
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 65_000;

function dataId(body: string): string {
  try {
    return String(JSON.parse(body)?.data?.id ?? "");
  } catch {
    return "";
  }
}

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  serveRpc(
    {
      reset() {
        arrivals = { ids: [], times: [] };
      },
      /** Resolves with the arrival count once `count` POSTs arrived, or when `timeoutMs` runs out. */
      waitFor({ count, timeoutMs }: { count: number; timeoutMs: number }) {
        return new Promise<number>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            resolve(arrivals.times.length);
          };
          const timer = setTimeout(() => {
            waiting = undefined;
            done();
          }, timeoutMs);
          if (arrivals.times.length >= count) done();
          else waiting = { count, resolve: done };
        });
      },
      count: () => arrivals.times.length,
      arrivals: () => arrivals,
    },
    { url: `http://127.0.0.1:${port}` } satisfies SubscriberReady,
  );
});
