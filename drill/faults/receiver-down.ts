import type { DrillSizes } from "../drill-options.ts";
import type { DrillPlan } from "../run-drill.ts";

/**
 * The receiver refuses connections for seconds under load: attempts fail,
 * the circuit breaker opens and probes, and once it is back everything
 * arrives — none exhausted.
 */
export function receiverDown(sizes: DrillSizes): DrillPlan {
  const { at: downAt, down, seconds } = sizes.receiverDown;
  return {
    name: "receiver-down",
    title: `the receiver down for ${down} s under load`,
    seconds,
    tail: 5,
    async inject({ at, fault, stack }) {
      await at(downAt);
      await fault(`receiver down ${down} s`, async () => {
        await stack.receiver.call("down");
        await new Promise((resolve) => setTimeout(resolve, down * 1_000));
        await stack.receiver.call("up");
      });
    },
    async judge({ ledger, checks }) {
      checks.push({ name: "no dispatch exhausted", value: String(ledger.exhausted), ok: ledger.exhausted === 0 });
    },
  };
}
