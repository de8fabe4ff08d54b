import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { neonConfig } from "@neondatabase/serverless";
import { WebSocketServer } from "ws";
import { openDatabase } from "../../lib/db/client.ts";
import type { DatabaseFactory } from "./harness.ts";
import { createTestDatabase } from "./postgres.ts";

/**
 * A WebSocket-to-TCP proxy like the one in front of Neon, for tests only: it
 * lets Neon's serverless driver speak to the local PostgreSQL. It forwards to
 * loopback addresses and nothing else.
 */
export interface NeonWebSocketProxy {
  port: number;
  /** WebSocket connections opened through the proxy so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startNeonWebSocketProxy(): Promise<NeonWebSocketProxy> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  let connections = 0;
  server.on("connection", (socket, request) => {
    connections++;
    const address = new URL(request.url ?? "/", "ws://proxy").searchParams.get("address") ?? "";
    const [host, port] = address.split(":");
    if (host !== "127.0.0.1" && host !== "localhost") return socket.close(1008, "loopback only");
    const tcp = connect(Number(port), "127.0.0.1");
    socket.on("message", (data: Buffer) => tcp.write(data));
    tcp.on("data", (data) => socket.send(data));
    socket.on("close", () => tcp.destroy());
    tcp.on("close", () => socket.close());
    tcp.on("error", () => socket.close());
  });
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}

/** A fresh database on the test server, opened through Neon's driver and the proxy. */
export function neonFactory(proxy: { port: number }): DatabaseFactory {
  neonConfig.wsProxy = (host, port) => `127.0.0.1:${proxy.port}/v1?address=${host}:${port}`;
  neonConfig.useSecureWebSocket = false;
  neonConfig.pipelineTLS = false;
  neonConfig.pipelineConnect = false;
  return async () => {
    const created = await createTestDatabase();
    const database = await openDatabase({ databaseUrl: created.url, driver: "neon" });
    return { database, databaseUrl: created.url, drop: created.drop };
  };
}
