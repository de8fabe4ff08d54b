import type { ServerOptions } from "node:http";
import type { Server } from "node:net";
import type { Config } from "../lib/config/env.ts";

/**
 * Node's own limits on a client, sized for an API rather than left at
 * Node's defaults (headers 60 s, whole request 300 s, no connection cap):
 * a client that sends its headers or body a byte at a time is answered 408
 * and cut off at `headersTimeoutMs` / `requestTimeoutMs`, an idle keep-alive
 * connection closes after `keepAliveTimeoutMs`. Node checks the two request
 * timeouts every `connectionsCheckingInterval` (30 s by default, which would
 * let a 10 s limit run to 40 s): here every second at most.
 */
export function httpServerOptions(limits: Config["http"]): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs / 2),
  };
}

/**
 * At most `maxConnections` sockets at once: Node closes any further one as
 * it is accepted, so a flood of idle connections cannot use up the memory and
 * file descriptors the database pool and the outbound lane need.
 */
export function capConnections(server: Server, limits: Config["http"]): void {
  server.maxConnections = limits.maxConnections;
}
