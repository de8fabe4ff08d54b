import { ConfigError } from "../lib/config/env.ts";

/**
 * Runs a process's `main`, and on SIGINT or SIGTERM its `drain` once, then
 * exits. A configuration error is printed as its message alone (it names the
 * variable); anything else with its stack.
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
    .catch((error) => {
      console.error(error instanceof ConfigError ? error.message : error);
      process.exit(1);
    });
}
