import { ms } from "../../bench/format.ts";
import type { DrillSizes } from "../drill-options.ts";
import type { DrillPlan } from "../run-drill.ts";

/**
 * SIGTERM a lane worker under load: it stops claiming, finishes and records
 * what it holds, releases its leases and exits 0; the other worker carries on.
 */
export function workerTerm(sizes: DrillSizes): DrillPlan {
  const { at: termAt, seconds } = sizes.workerTerm;
  return {
    name: "worker-term",
    title: "SIGTERM a lane worker under load",
    seconds,
    tail: 5,
    async inject({ at, fault, stack, figures, checks }) {
      await at(termAt);
      const workerId = stack.workerIdOf(stack.workers[0]!);
      await fault("SIGTERM worker 0", async () => {
        const { ms: took, code } = await stack.terminateWorker(0);
        figures["SIGTERM → exit"] = ms(took);
        checks.push({ name: "the worker exits 0", value: String(code), ok: code === 0 });
      });
      // Right away: a lease left behind would only show until it ran out.
      const [row] = await stack.cluster.query<{ n: number }>(
        `select (select count(*)::int from webhook_dispatch_open where locked_by = $1 and locked_until is not null)
           + (select count(*)::int from webhook_route_job where locked_by = $1 and locked_until is not null) as n`,
        [workerId ?? ""],
      );
      checks.push({
        name: "no lease left by the stopped worker",
        value: `${row!.n} (${workerId ?? "worker id unknown"})`,
        ok: workerId !== undefined && row!.n === 0,
      });
    },
  };
}
