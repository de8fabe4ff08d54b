import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedPost {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
  /** When the answer was sent in full; undefined until then. */
  answeredAt?: number;
  /** The sender gave up (closed the connection) before the answer was sent. */
  aborted?: boolean;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Wait this long before answering (timeouts). */
  delayMs?: number;
}

export interface TestReceiver {
  url: string;
  posts: ReceivedPost[];
  /** Resolves once at least `count` posts matching `filter` arrived; rejects after `timeoutMs`. */
  waitFor(
    count: number,
    options?: { filter?: (post: ReceivedPost) => boolean; timeoutMs?: number },
  ): Promise<ReceivedPost[]>;
  close(): Promise<void>;
}

/** A real HTTP subscriber on loopback (`port` 0: any free one) that records every POST and answers as `reply` says. */
export async function startReceiver(
  reply: (post: ReceivedPost) => Reply = () => ({}),
  port = 0,
): Promise<TestReceiver> {
  const posts: ReceivedPost[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const post: ReceivedPost = {
        path: req.url ?? "/",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        receivedAt: Date.now(),
      };
      posts.push(post);
      for (const wake of waiters) wake();
      const answer = reply(post);
      res.on("close", () => {
        if (res.writableFinished) post.answeredAt = Date.now();
        else post.aborted = true;
      });
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status ?? 200, answer.headers ?? {});
        res.end(answer.body ?? "ok");
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const bound = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${bound}`,
    posts,
    waitFor(count, options = {}) {
      const matching = () => (options.filter ? posts.filter(options.filter) : posts);
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = matching();
          if (found.length < count) return false;
          cleanup();
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`expected ${count} posts, got ${matching().length}`));
        }, options.timeoutMs ?? 20_000);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        if (!check()) waiters.add(check);
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The most POSTs a receiver was answering at once, from when each arrived and was answered. */
export function peakConcurrency(posts: readonly ReceivedPost[]): number {
  const edges = posts.flatMap((p) => [
    { at: p.receivedAt, step: 1 },
    { at: p.answeredAt ?? Infinity, step: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.step - b.step);
  let open = 0;
  let peak = 0;
  for (const edge of edges) peak = Math.max(peak, (open += edge.step));
  return peak;
}
