import { ConfigError, config } from "../lib/config/env.ts";
import { createHooklane, startLane } from "../lib/create-hooklane.ts";
import { runProcess } from "./process-lifecycle.ts";

/**
 * `npm run worker`: one webhook-out lane worker. Run as many as you like
 * against one PostgreSQL. With `METRICS_PORT` it serves its own `/metrics`,
 * `/health` and `/ready` there.
 */
async function main(): Promise<(signal: string) => Promise<void>> {
  const settings = config();
  if (!settings.databaseUrl) {
    throw new ConfigError(
      "DATABASE_URL: a worker process needs a shared PostgreSQL (the embedded database is single-process; npm start runs the lane in-process)",
    );
  }
  const hooklane = await createHooklane(settings);
  const lane = await startLane(hooklane);
  // The ops server (hono) is loaded only when asked for.
  const ops = settings.metricsPort
    ? await (await import("./ops-server.ts")).startOpsServer(hooklane, settings.metricsPort)
    : undefined;
  hooklane.logger.info(`webhook-out lane worker ${lane.workerId} started`);
  if (ops) hooklane.logger.info(`worker metrics, health and readiness on http://localhost:${ops.port}`);

  return async (signal) => {
    hooklane.logger.info(`${signal}: worker ${lane.workerId} draining`);
    await ops?.close();
    await lane.stop();
    await hooklane.database.close();
    // What was traced up to the end goes out before the process does.
    await hooklane.tracing?.shutdown();
  };
}

runProcess(main);
