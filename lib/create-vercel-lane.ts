import { getDeadline } from "@vercel/functions";
import { ConfigError } from "./config/env.ts";
import { createSender, deliverDeps } from "./create-hooklane.ts";
import type { Hooklane } from "./hooklane.ts";
import type { HttpSender } from "./webhook/outbound/webhook-http-sender.ts";
import { sweepWithin, type SweepReport } from "./webhook/sweeper/webhook-sweeper.ts";
import { createVercelLaneHandler } from "./webhook/transport/vercel/vercel-lane-handler.ts";
import { sweepBudgetMs, vercelLaneTimings } from "./webhook/transport/vercel/vercel-queue-limits.ts";
import { vercelSweepPhases } from "./webhook/transport/vercel/vercel-sweep.ts";

/**
 * The `webhook-out` lane on Vercel Queues: the push handler of the lane's
 * function, and the sweep its cron runs — the transport's phases and every
 * sweeper task, interleaved within the cron's time budget (`budgetMs` and
 * `clock` override it; `now` is the clock a message's expiry is judged by).
 */
export function createVercelLane(
  hooklane: Hooklane,
  options: { sender?: HttpSender; now?: () => number } = {},
): {
  handler: (request: Request) => Promise<Response>;
  sweep(options?: { budgetMs?: number; clock?: () => number }): Promise<SweepReport>;
} {
  const { config, transport, database } = hooklane;
  if (transport.name !== "vercel") throw new ConfigError("createVercelLane needs WEBHOOK_QUEUE_DRIVER=vercel");
  return {
    handler: createVercelLaneHandler({
      database,
      transport,
      deliver: deliverDeps(hooklane, options.sender ?? createSender(config)),
      logger: hooklane.logger,
      caps: config.caps,
      breaker: config.breaker,
      timings: vercelLaneTimings(config),
      mailer: hooklane.mailer,
      ...(options.now ? { now: options.now } : {}),
    }),
    async sweep(run = {}) {
      const workerId = `sweeper/${process.pid}`;
      const clock = run.clock ?? Date.now;
      return sweepWithin(hooklane, {
        workerId,
        budgetMs: run.budgetMs ?? sweepBudgetMs(getDeadline(), clock()),
        clock,
        phases: vercelSweepPhases({ database, transport, workerId, clock }),
      });
    },
  };
}
