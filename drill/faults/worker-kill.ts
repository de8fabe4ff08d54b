import { setTimeout as sleep } from "node:timers/promises";
import { ms } from "../../bench/format.ts";
import type { DrillSizes } from "../drill-options.ts";
import type { DrillPlan } from "../run-drill.ts";

/** A dead worker's work resumes within this long: its leases run out and another worker claims them. */
const RESUMED_WITHIN_MS = 15_000;
/** The receiver answers this late, so a killed worker always has deliveries in flight. */
const RECEIVER_ANSWERS_AFTER_MS = 50;

/**
 * SIGKILL a lane worker under load, alternating between workers and starting
 * a new one each time: what the dead one held (claimed dispatches, leased
 * route jobs, attempts made and not yet recorded) must still arrive, within
 * 15 s of the 2xx.
 */
export function workerKill(sizes: DrillSizes): DrillPlan {
  const { kills, every } = sizes.workerKill;
  return {
    name: "worker-kill",
    title: `SIGKILL a lane worker ${kills} times under load`,
    seconds: kills * every,
    tail: every,
    async inject({ fault, stack, figures }) {
      await stack.receiver.call("answerAfter", RECEIVER_ANSWERS_AFTER_MS);
      for (let i = 0; i < kills; i++) {
        await sleep(every * 1_000);
        const slot = i % stack.workers.length;
        await fault(`SIGKILL worker ${slot}, start a new one`, async () => {
          await stack.killWorker(slot);
          await stack.startWorker(slot);
        });
      }
      figures["worker kills"] = String(kills);
      figures["receiver answers after"] = ms(RECEIVER_ANSWERS_AFTER_MS);
    },
    async judge({ samples, checks }) {
      const max = Math.max(...samples.map((s) => s.ms));
      checks.push({
        name: `max latency 2xx → receipt ≤ ${RESUMED_WITHIN_MS / 1_000} s`,
        value: ms(max),
        ok: max <= RESUMED_WITHIN_MS,
        timing: true,
      });
    },
  };
}
