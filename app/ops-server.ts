import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import type { HooklaneEnv } from "../lib/api/hono-env.ts";
import type { Hooklane } from "../lib/hooklane.ts";
import { capConnections, httpServerOptions } from "./http-server-limits.ts";
import { opsRoutes } from "./routes/ops/ops-routes.ts";

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * A lane worker's own HTTP port (`METRICS_PORT`): `/metrics` (this worker's
 * metrics, behind `METRICS_TOKEN` when set), `/health` and `/ready`, and
 * nothing else. Resolves once it listens.
 */
export function startOpsServer(hooklane: Hooklane, port: number): Promise<OpsServer> {
  const app = new Hono<HooklaneEnv>();
  app.use(async (c, next) => {
    c.set("hooklane", hooklane);
    await next();
  });
  app.route("/", opsRoutes());
  return new Promise((resolve, reject) => {
    const limits = hooklane.config.http;
    const server = serve({ fetch: app.fetch, port, serverOptions: httpServerOptions(limits) }, (info: AddressInfo) =>
      resolve({
        port: info.port,
        close: () => new Promise<void>((done) => server.close(() => done())),
      }),
    );
    capConnections(server, limits);
    server.once("error", reject);
  });
}
