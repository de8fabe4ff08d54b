import { setTimeout as sleep } from "node:timers/promises";
import { ms } from "../../bench/format.ts";
import { median } from "../../bench/stats.ts";
import type { DrillSizes } from "../drill-options.ts";
import type { DrillPlan } from "../run-drill.ts";

/**
 * SIGKILL the API under load, again and again, starting a new one on the
 * same port each time and letting it serve for a while before the next
 * kill: a request in flight may have committed or not, and its caller may or
 * may not have read the 2xx. Whatever was answered 2xx must be delivered;
 * whatever committed must have its event; nothing else may have one.
 */
export function apiKill(sizes: DrillSizes): DrillPlan {
  const { kills, every } = sizes.apiKill;
  return {
    name: "api-kill",
    title: `SIGKILL the API ${kills} times under load`,
    seconds: kills * every,
    tail: every,
    async inject({ fault, stack, figures, checks }) {
      const downMs: number[] = [];
      for (let i = 0; i < kills; i++) {
        await sleep(every * 1_000);
        const started = performance.now();
        await fault("SIGKILL the API, start a new one", () => stack.killApi());
        downMs.push(performance.now() - started);
      }
      figures["API listening again after (median)"] = ms(median(downMs));
      checks.push({ name: `the API killed ${kills} times`, value: String(downMs.length), ok: downMs.length === kills });
    },
    async judge({ ledger, figures }) {
      figures["committed, caller saw no 2xx"] = String(ledger.committedNotAcknowledged);
    },
  };
}
