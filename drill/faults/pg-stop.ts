import type { DrillSizes } from "../drill-options.ts";
import type { DrillPlan } from "../run-drill.ts";

/** What an outage of a few seconds may write to stderr, plus warnings, across every process. */
const LOG_BUDGET = 50;

/**
 * PostgreSQL crashes (`pg_ctl stop -m immediate`) under load and stays down
 * for seconds: what committed before must survive its recovery, the API
 * answers 503 meanwhile (nothing acknowledged), the lane waits, and the whole
 * outage costs a few log lines per process — never a client object, a query
 * or its parameters.
 */
export function pgStop(sizes: DrillSizes): DrillPlan {
  const { at: stopAt, down, seconds } = sizes.pgStop;
  return {
    name: "pg-stop",
    title: `PostgreSQL down for ${down} s under load`,
    seconds,
    tail: 5,
    async inject({ at, fault, stack }) {
      await at(stopAt);
      await fault(`pg_ctl stop -m immediate, ${down} s, pg_ctl start`, async () => {
        await stack.cluster.stop("immediate");
        await new Promise((resolve) => setTimeout(resolve, down * 1_000));
        await stack.cluster.start();
      });
    },
    async judge({ logs, checks }) {
      const noise = logs.stderr + logs.warnings;
      checks.push({
        name: `≤ ${LOG_BUDGET} stderr and warning lines across all processes`,
        value: `${logs.stderr} stderr + ${logs.warnings} warnings`,
        ok: noise <= LOG_BUDGET,
      });
    },
  };
}
