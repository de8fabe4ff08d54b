import type { Database } from "../../../db/client.ts";
import { clearDispatchesQueued, takeStrandedDispatches } from "../../../db/sql/queued-dispatches.ts";
import { claimRouteJobs, markRouteJobsForwarded, retryRouteJob } from "../../../db/sql/route-jobs.ts";
import type { SweepPhase } from "../../sweeper/webhook-sweeper.ts";
import { LANE_QUEUE, VERCEL_QUEUES } from "./vercel-queue-limits.ts";
import { DELIVER_MESSAGE_GRACE_MS, ROUTE_MESSAGE_CHECK_MS, type VercelTransport } from "./vercel-transport.ts";

/** Rows one step takes: as many as the transport sends at once. */
const STEP = VERCEL_QUEUES.batchSize * LANE_QUEUE.sendConcurrency;
/** How long a forward holds the outbox rows it took; a sweep that dies leaves them to the next after this. */
const OUTBOX_LEASE_MS = 60_000;

/**
 * What the Vercel transport needs from the sweeper (the cron), as two sweep
 * phases: `outbox` forwards route messages a forward after commit never
 * carried (a queue outage, a function that died) and those forwarded but
 * not routed in time (lost, or failing until they expired), and `stranded` sends
 * deliver messages for due dispatches no message carries (never sent, lost,
 * expired, or a lease that ran out). Each step handles at most STEP rows and
 * stops its phase when the queue refuses, leaving the rest for the next run.
 */
export function vercelSweepPhases(deps: {
  database: Database;
  transport: VercelTransport;
  workerId: string;
  /** The sweep's clock, which names its grace window. */
  clock: () => number;
}): SweepPhase[] {
  const { database, transport } = deps;
  return [
    {
      name: "outbox",
      async step() {
        const jobs = await claimRouteJobs(database, { workerId: deps.workerId, limit: STEP, leaseMs: OUTBOX_LEASE_MS });
        const taken = await transport.forwardRoutes(jobs);
        // Kept until the route stage has written their dispatches.
        await markRouteJobsForwarded(
          database,
          jobs.filter((_, i) => taken[i]).map((job) => job.id),
          { checkMs: ROUTE_MESSAGE_CHECK_MS, counted: true },
        );
        const refused = jobs.filter((_, i) => !taken[i]);
        for (const job of refused) await retryRouteJob(database, job.id, 0, "the queue refused the forward");
        return { items: jobs.length - refused.length, more: jobs.length === STEP && refused.length === 0 };
      },
    },
    {
      name: "stranded",
      async step() {
        const stranded = await takeStrandedDispatches(database, { limit: STEP, withinMs: DELIVER_MESSAGE_GRACE_MS });
        // Keyed by the grace window: the message that went missing may still sit in the queue's deduplication
        // window, and sweeps that overlap, or follow each other within the window, send one between them.
        const window = `sweep-${Math.floor(deps.clock() / DELIVER_MESSAGE_GRACE_MS)}`;
        const unsent = await transport.sendDeliverMessages(stranded, { window });
        // Refused: due again at the next sweep rather than after the grace.
        await clearDispatchesQueued(
          database,
          unsent.map((d) => d.id),
        );
        return { items: stranded.length - unsent.length, more: stranded.length === STEP && unsent.length === 0 };
      },
    },
  ];
}
