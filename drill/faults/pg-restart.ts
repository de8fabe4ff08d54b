import { ms } from "../../bench/format.ts";
import type { DrillSizes } from "../drill-options.ts";
import type { DrillPlan } from "../run-drill.ts";
import { latencyBetween } from "../ledger-check.ts";
import type { DrillStack } from "../drill-stack.ts";

/** Sessions of the workers' shared LISTEN connection (`application_name` hooklane-listen). */
async function listenSessions(stack: DrillStack): Promise<number> {
  const [row] = await stack.cluster.query<{ n: number }>(
    "select count(*)::int as n from pg_stat_activity where application_name = 'hooklane-listen'",
  );
  return row!.n;
}

/**
 * `pg_ctl restart -m fast` under load: every connection of every process is
 * cut. Nobody restarts anything: the processes must reconnect, LISTEN again,
 * and be as fast in the 20 s after the restart as before it.
 */
export function pgRestart(sizes: DrillSizes): DrillPlan {
  const { at: restartAt, seconds, afterWindow } = sizes.pgRestart;
  return {
    name: "pg-restart",
    title: "pg_ctl restart under load",
    seconds,
    tail: afterWindow,
    afterWindow,
    async inject({ at, fault, stack, figures }) {
      await at(restartAt);
      figures["LISTEN sessions before"] = String(await listenSessions(stack));
      await fault("pg_ctl restart -m fast", () => stack.cluster.restart());
    },
    async judge({ stack, samples, faults, loadStartedAt, figures, checks }) {
      const restart = faults[0]!;
      const before = latencyBetween(samples, loadStartedAt, loadStartedAt + restart.from * 1_000);
      const from = loadStartedAt + restart.to * 1_000;
      const after = latencyBetween(samples, from, from + afterWindow * 1_000);
      figures["restart took"] = ms((restart.to - restart.from) * 1_000);
      checks.push({
        name: `p50 in the ${afterWindow} s after the restart ≤ 2× the p50 before`,
        value: `${ms(after.p50)} vs ${ms(before.p50)}`,
        ok: after.p50 <= 2 * before.p50,
        timing: true,
      });
      const sessions = await listenSessions(stack);
      const workers = stack.workers.length;
      figures["LISTEN sessions after"] = String(sessions);
      checks.push({
        name: "LISTEN sessions back in pg_stat_activity",
        value: `${sessions} of ${workers}`,
        ok: sessions === workers,
      });
      const restarted = stack.processes.filter((p) => !p.alive()).map((p) => p.name);
      checks.push({
        name: "no process restarted by hand (all still the first ones)",
        value: restarted.length === 0 ? `${stack.processes.length} alive` : `exited: ${restarted.join(", ")}`,
        ok: restarted.length === 0 && stack.processes.length === workers + 1,
      });
    },
  };
}
