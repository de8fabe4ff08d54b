// The benchmark's subscriber, in its own process: a minimal keep-alive
// node:http receiver that answers 200 and records, per POST, its arrival time
// (on the clock the load generator also uses), its path, and the body's `id`
// and `data.id`. For the fault drills it can also answer late, and be taken
// down and brought back on the same port. With BENCH_SUBSCRIBER_PORTS=n it
// listens on n ports at once, each a distinct origin to the lane's caps,
// recording every port's POSTs in the one list. It consents to every
// endpoint-consent request (an OPTIONS), as a receiver of a production
// account's webhooks must.
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serveRpc } from "./rpc.ts";

export interface SubscriberReady {
  /** The first port's URL. */
  url: string;
  /** Every port's URL, the first one first. */
  urls: string[];
}

/** What arrived since the last reset, in arrival order. */
export interface Arrivals {
  /** The body's `data.id`: the resource the event is about. */
  ids: string[];
  /** The body's `id`: the event. */
  eventIds: string[];
  /** The request path, which tells webhooks sharing this receiver apart. */
  paths: string[];
  /** `performance.timeOrigin + performance.now()`, milliseconds. */
  times: number[];
}

const empty = (): Arrivals => ({ ids: [], eventIds: [], paths: [], times: [] });
let arrivals = empty();
let waiting: { count: number; resolve(): void } | undefined;
let answerAfterMs = 0;
/** Paths starting with `prefix` are answered `ms` after they arrive (a slow webhook beside healthy ones). */
let slowPaths: { prefix: string; ms: number } | undefined;

const handle: RequestListener = (req, res) => {
  if (req.method === "OPTIONS") {
    // The endpoint-consent request: consent to whichever sender asks; it is no arrival.
    const origin = req.headers["webhook-request-origin"];
    res.writeHead(200, {
      allow: "POST",
      "content-length": "0",
      ...(origin ? { "webhook-allowed-origin": origin } : {}),
    });
    res.end();
    req.resume();
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const at = performance.timeOrigin + performance.now();
    const answer = () => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": "2" });
      res.end("ok");
    };
    const delayMs = slowPaths && req.url?.startsWith(slowPaths.prefix) ? slowPaths.ms : answerAfterMs;
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
    const body = parse(Buffer.concat(chunks).toString("utf8"));
    arrivals.ids.push(String(body?.data?.id ?? ""));
    arrivals.eventIds.push(String(body?.id ?? ""));
    arrivals.paths.push(req.url ?? "");
    arrivals.times.push(at);
    if (waiting && arrivals.times.length >= waiting.count) {
      waiting.resolve();
      waiting = undefined;
    }
  });
};

function newServer(): Server {
  const server = createServer(handle);
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;
  return server;
}

function parse(body: string): { id?: unknown; data?: { id?: unknown } } | undefined {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

const portCount = Number(process.env.BENCH_SUBSCRIBER_PORTS ?? "1");
if (!Number.isInteger(portCount) || portCount < 1 || portCount > 64) {
  throw new Error(`BENCH_SUBSCRIBER_PORTS must be an integer from 1 to 64, not ${process.env.BENCH_SUBSCRIBER_PORTS}`);
}
const servers = Array.from({ length: portCount }, newServer);
const ports: number[] = [];
for (const server of servers) ports.push(await listen(server, 0));
const urls = ports.map((port) => `http://127.0.0.1:${port}`);
serveRpc(
  {
    reset() {
      arrivals = empty();
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
    /** Answers every POST `ms` after it arrived (0: at once), so senders have deliveries in flight. */
    answerAfter(ms: number) {
      answerAfterMs = ms;
    },
    /** Answers POSTs whose path starts with `prefix` `ms` after they arrived; `ms` 0 ends it. */
    answerPathAfter({ prefix, ms }: { prefix: string; ms: number }) {
      slowPaths = ms > 0 ? { prefix, ms } : undefined;
    },
    /** Stops listening and drops every open connection: senders get refused connections. */
    async down() {
      await Promise.all(
        servers.map((server) => {
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          server.closeAllConnections();
          return closed;
        }),
      );
    },
    /** Listens again on the same ports. */
    up: () => Promise.all(servers.map((server, i) => listen(server, ports[i]!))).then(() => undefined),
  },
  { url: urls[0]!, urls } satisfies SubscriberReady,
);
