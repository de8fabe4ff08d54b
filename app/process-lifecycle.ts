import { ConfigError } from "../lib/config/env.ts";
import { createLogger } from "../lib/log/logger.ts";

/**
 * Runs a process's `main`, and on SIGINT or SIGTERM its `drain` once, then
 * exits. A configuration error is logged as its message alone (it names the
 * variable); anything else by its name, code and message.
 */
export function runProcess(main: () => Promise<(signal: string) => Promise<void>>): void {
  main()
    .then((drain) => {
      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        await drain(signal);
        process.exit(0);
      };
      process.on("SIGINT", () => void stop("SIGINT"));
      process.on("SIGTERM", () => void stop("SIGTERM"));
    })
    .catch((error: unknown) => {
      // No configured logger may exist yet (the configuration is what failed).
      const logger = createLogger({ level: "info", format: process.env.LOG_FORMAT === "json" ? "json" : "pretty" });
      if (error instanceof ConfigError) logger.fatal(error.message);
      else logger.fatal({ err: error }, "start-up failed");
      process.exit(1);
    });
}
