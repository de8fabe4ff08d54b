import { ConfigError, config } from "../lib/config/env.ts";
import { createHooklane, startLane } from "../lib/create-hooklane.ts";
import { runProcess } from "./process-lifecycle.ts";

/** `npm run worker`: one webhook-out lane worker. Run as many as you like against one PostgreSQL. */
async function main(): Promise<(signal: string) => Promise<void>> {
  const settings = config();
  if (!settings.databaseUrl) {
    throw new ConfigError(
      "DATABASE_URL: a worker process needs a shared PostgreSQL (the embedded database is single-process; npm start runs the lane in-process)",
    );
  }
  const hooklane = await createHooklane(settings);
  const lane = await startLane(hooklane);
  hooklane.logger.info(`webhook-out lane worker ${lane.workerId} started`);

  return async (signal) => {
    hooklane.logger.info(`${signal}: worker ${lane.workerId} draining`);
    await lane.stop();
    await hooklane.database.close();
  };
}

runProcess(main);
