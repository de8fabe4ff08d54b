import { connect, createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface TcpProxy {
  readonly port: number;
  /** `databaseUrl` with its host and port replaced by this proxy's. */
  via(databaseUrl: string): string;
  /** Drops every open connection at once, as a network blip or a server restart does; new ones still get through. */
  cut(): void;
  /** Stops accepting (connections are refused) and drops every open one: the server is gone. */
  down(): Promise<void>;
  /** Accepts again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

/** A loopback TCP proxy in front of `target`, whose connections a test can cut and whose port it can take away. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  const port = await listen(0);
  const cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  const down = () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    cut();
    return closed;
  };
  return {
    port,
    via(databaseUrl) {
      const url = new URL(databaseUrl);
      url.hostname = "127.0.0.1";
      url.port = String(port);
      return url.toString();
    },
    cut,
    down,
    up: () => listen(port).then(() => undefined),
    close: () => (server.listening ? down() : Promise.resolve()),
  };
}
