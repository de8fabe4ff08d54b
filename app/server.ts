import type { Server } from "node:http";
import { createAdaptorServer } from "@hono/node-server";
import { ConfigError, config } from "../lib/config/env.ts";
import { capConnections, httpServerOptions } from "./http-server-limits.ts";
import { runProcess } from "./process-lifecycle.ts";

/**
 * `npm start`: the API, and (unless HOOKLANE_LANE=off) the webhook-out lane in the same process. The port is taken
 * before anything else — a port in use is one line at once, with nothing migrated — and answers 503 until the
 * database, the catalogue and the lane are ready. The application's modules load only once the port is ours, so
 * the refusal does not wait for them.
 */
async function main(): Promise<(signal: string) => Promise<void>> {
  const settings = config();
  let handle: (request: Request, env: unknown) => Response | Promise<Response> = () =>
    Response.json({ status: 503, title: "Service Unavailable", detail: "starting" }, { status: 503 });
  const server = createAdaptorServer({
    fetch: (request, env) => handle(request, env),
    serverOptions: httpServerOptions(settings.http),
  }) as Server;
  await listen(server, settings.port, settings.host);
  capConnections(server, settings.http);

  const [{ createHooklane, startLane }, { exposeLedgerMetrics }, { createApp }] = await Promise.all([
    import("../lib/create-hooklane.ts"),
    import("../lib/metrics/ledger-metrics.ts"),
    import("./app.ts"),
  ]);
  const hooklane = await createHooklane(settings);
  exposeLedgerMetrics(hooklane);
  const lane = settings.laneInProcess ? await startLane(hooklane) : undefined;
  const app = createApp(hooklane);
  handle = (request, env) => app.fetch(request, env as never);
  const { logger } = hooklane;
  const info = server.address();
  if (info && typeof info === "object") {
    const where = hooklane.database.kind === "pglite" ? `embedded PGlite in ${settings.pgliteDataDir}` : "PostgreSQL";
    const host = info.family === "IPv6" ? `[${info.address}]` : info.address;
    logger.info(`hooklane API on http://${host}:${info.port} (${where})`);
  }
  logger.info(
    lane ? `webhook-out lane running in-process as ${lane.workerId}` : "webhook-out lane: off (run npm run worker)",
  );
  if (!settings.publishEnabled) logger.info("ENABLE_API_EVENT_QUEUE=false: the API publishes no events");

  return async (signal) => {
    logger.info(`${signal}: draining`);
    server.close();
    await hooklane.publisher.settled();
    await lane?.stop();
    await hooklane.database.close();
    // What was traced up to the end goes out before the process does.
    await hooklane.tracing?.shutdown();
  };
}

/** Listens on `port` (and `host`), or throws a ConfigError naming the variable to change when it is taken. */
function listen(server: Server, port: number, host: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      const where = `${host ?? "every address"}, port ${port}`;
      if (error.code === "EADDRINUSE") {
        reject(
          new ConfigError(`PORT: ${port} is in use (${where}): another process listens there; set PORT to a free one`),
        );
      } else if (error.code === "EACCES") {
        reject(new ConfigError(`PORT: ${port} needs privileges this process lacks (${where}); set PORT above 1023`));
      } else if (error.code === "EADDRNOTAVAIL") {
        reject(new ConfigError(`HOST: ${host} is not an address of this machine`));
      } else reject(error);
    });
    server.listen(port, host, () => resolve());
  });
}

runProcess(main);
