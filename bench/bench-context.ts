import type { BenchDatabase } from "./bench-database.ts";
import type { BenchOptions } from "./bench-options.ts";
import type { LoadResult, LoadRun } from "./load-generator.ts";
import type { ProductSettings } from "./product-processes.ts";
import type { RpcChild } from "./rpc.ts";
import type { Arrivals, SubscriberReady } from "./subscriber.ts";

/** What every scenario of one run shares. */
export interface BenchContext {
  options: BenchOptions;
  db: BenchDatabase;
  product: ProductSettings;
  subscriber: RpcChild<SubscriberReady>;
  loadGenerator: RpcChild<unknown>;
  /** A bearer token for the benchmark account. */
  token: string;
  /** Distinguishes this run's queues and event ids. */
  runId: string;
  /** Prints one progress line. */
  progress(message: string): void;
}

/** The clock both the load generator and the subscriber record on. */
export const now = (): number => performance.timeOrigin + performance.now();

/**
 * Runs the load generator against `apiUrl` (bounded by the run's own size),
 * printing every 2 s how many POSTs the subscriber got meanwhile (when any did).
 */
export async function generateLoad(
  context: BenchContext,
  apiUrl: string,
  run: Omit<LoadRun, "url" | "token">,
): Promise<LoadResult> {
  const ticker = setInterval(() => {
    context.subscriber.call<number>("count").then(
      (arrived) =>
        arrived > 0 && context.progress(`load running: ${arrived.toLocaleString("en")} POSTs arrived so far`),
      () => {},
    );
  }, 2_000);
  try {
    return await context.loadGenerator.call<LoadResult>("run", { url: apiUrl, token: context.token, ...run }, 600_000);
  } finally {
    clearInterval(ticker);
  }
}

export interface Delivered {
  /** POSTs that reached the subscriber. */
  arrived: number;
  /** Whether the ledger recorded them all before the deadline. */
  complete: boolean;
  /** When the ledger had them all (or the deadline passed), on `now()`'s clock. */
  doneAt: number;
  arrivals: Arrivals;
}

/**
 * Waits until the subscriber got `count` POSTs since its last reset and
 * `recorded()` reaches `recordedTarget`, printing progress; gives up at
 * `deadline` (on `now()`'s clock), so no scenario can hang.
 */
export async function waitForDeliveries(
  context: BenchContext,
  options: { label: string; count: number; recordedTarget: number; recorded(): Promise<number>; deadline: number },
): Promise<Delivered> {
  let arrived = 0;
  let lastReport = now();
  while (arrived < options.count && now() < options.deadline) {
    const slice = Math.max(1, Math.min(1_000, options.deadline - now()));
    arrived = await context.subscriber.call<number>("waitFor", { count: options.count, timeoutMs: slice });
    if (now() - lastReport >= 2_000) {
      context.progress(
        `${options.label}: ${arrived.toLocaleString("en")}/${options.count.toLocaleString("en")} arrived`,
      );
      lastReport = now();
    }
  }
  let recorded = await options.recorded();
  while (recorded < options.recordedTarget && now() < options.deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    recorded = await options.recorded();
  }
  const doneAt = now();
  const arrivals = await context.subscriber.call<Arrivals>("arrivals");
  return { arrived, complete: recorded >= options.recordedTarget, doneAt, arrivals };
}

/** A deadline for `count` deliveries: generous (at least 200/s), so only a broken pipeline reaches it. */
export function deliveryDeadline(count: number): number {
  return now() + 15_000 + count * 5;
}
