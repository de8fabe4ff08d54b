/**
 * Four hostile subscribers, each on its own loopback origin, run as a child
 * process so that what they allocate never counts against the lane worker
 * whose memory a test measures. Started by `fork()`: it sends
 * `{ urls: { drip, huge, headers, redirect } }` once listening, and answers
 * `"state"` with how many drips are open, the body bytes it managed to send
 * and how often the redirect's target was reached.
 */
import { createServer, type RequestListener, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const MB = 1024 * 1024;
const state = { drippingNow: 0, bytesSent: 0, canaryHits: 0 };

// Writes `total` bytes in 64 KiB chunks, only as fast as the client reads.
function stream(res: ServerResponse, total: number): void {
  const chunk = Buffer.alloc(64 * 1024, "x");
  let sent = 0;
  const pump = () => {
    while (sent < total && !res.destroyed) {
      sent += chunk.length;
      state.bytesSent += chunk.length;
      if (!res.write(chunk)) return void res.once("drain", pump);
    }
    res.end();
  };
  pump();
}

async function listen(handler: RequestListener): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => handler(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const canary = await listen((_, res) => {
  state.canaryHits++;
  res.end("never reached");
});

const urls = {
  // 60 s of one byte every 100 ms.
  drip: await listen((_, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    state.drippingNow++;
    res.on("close", () => state.drippingNow--);
    let left = 600;
    const timer = setInterval(() => {
      if (left-- > 0 && !res.destroyed) return void res.write(".");
      clearInterval(timer);
      res.end();
    }, 100);
  }),
  huge: await listen((_, res) => {
    res.writeHead(200, { "content-type": "application/octet-stream" });
    stream(res, 50 * MB);
  }),
  headers: await listen((_, res) => {
    const headers: Record<string, string> = {};
    for (let i = 0; i < 128; i++) headers[`x-pad-${i}`] = "h".repeat(8 * 1024);
    res.writeHead(200, headers);
    res.end("ok");
  }),
  redirect: await listen((_, res) => {
    res.writeHead(302, { location: `${canary}/stolen` });
    res.end();
  }),
};

process.on("message", () => process.send!({ state }));
process.on("disconnect", () => process.exit(0));
process.send!({ urls });
