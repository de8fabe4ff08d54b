import { backoffMs } from "../../../backoff.ts";
import type { Database } from "../../../db/client.ts";
import type { Logger } from "../../../log/logger.ts";
import { LANE_BACKOFF } from "../../outbound/webhook-retry-policy.ts";

/**
 * Runs `step` until `running()` turns false. A failing step (the database
 * down) backs off per LANE_BACKOFF.loop instead of spinning or dying, and
 * during an outage steps again as soon as the database answers; an outage is
 * logged once by the database's tracker, anything else here.
 */
export async function runLoop(
  name: string,
  step: () => Promise<void>,
  context: { running: () => boolean; database: Database; logger: Logger },
): Promise<void> {
  let failures = 0;
  while (context.running()) {
    try {
      await step();
      failures = 0;
    } catch (error) {
      const { outage } = context.database;
      if (!outage.report(error)) {
        context.logger.error({ err: error, loop: name, failures: failures + 1 }, "lane loop step failed");
      }
      await backOff(context.database, failures++);
    }
  }
}

/**
 * Waits after `failures` failures in a row (0 for the first), per
 * LANE_BACKOFF.loop; during a database outage no longer than until the
 * database answers again.
 */
export function backOff(database: Database, failures: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, backoffMs(LANE_BACKOFF.loop, failures));
    if (database.outage.down) {
      void database.outage.recovered().then(() => {
        clearTimeout(timer);
        resolve();
      });
    }
  });
}
