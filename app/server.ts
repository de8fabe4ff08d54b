import { serve } from "@hono/node-server";
import { config } from "../lib/config/env.ts";
import { createHooklane, startLane } from "../lib/create-hooklane.ts";
import { exposeLedgerMetrics } from "../lib/metrics/ledger-metrics.ts";
import { createApp } from "./app.ts";
import { capConnections, httpServerOptions } from "./http-server-limits.ts";
import { runProcess } from "./process-lifecycle.ts";

/** `npm start`: the API, and (unless HOOKLANE_LANE=off) the webhook-out lane in the same process. */
async function main(): Promise<(signal: string) => Promise<void>> {
  const settings = config();
  const hooklane = await createHooklane(settings);
  exposeLedgerMetrics(hooklane);
  const lane = settings.laneInProcess ? await startLane(hooklane) : undefined;
  const { logger } = hooklane;
  const listen = {
    fetch: createApp(hooklane).fetch,
    port: settings.port,
    ...(settings.host ? { hostname: settings.host } : {}),
    serverOptions: httpServerOptions(settings.http),
  };
  const server = serve(listen, (info) => {
    const where = hooklane.database.kind === "pglite" ? `embedded PGlite in ${settings.pgliteDataDir}` : "PostgreSQL";
    const host = info.family === "IPv6" ? `[${info.address}]` : info.address;
    logger.info(`hooklane API on http://${host}:${info.port} (${where})`);
    logger.info(
      lane ? `webhook-out lane running in-process as ${lane.workerId}` : "webhook-out lane: off (run npm run worker)",
    );
    if (!settings.publishEnabled) logger.info("ENABLE_API_EVENT_QUEUE=false: the API publishes no events");
  });
  capConnections(server, settings.http);

  return async (signal) => {
    logger.info(`${signal}: draining`);
    server.close();
    await hooklane.publisher.settled();
    await lane?.stop();
    await hooklane.database.close();
  };
}

runProcess(main);
