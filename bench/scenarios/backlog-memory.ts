import { deliveryDeadline, now, waitForDeliveries, type BenchContext } from "../bench-context.ts";
import { mb } from "../format.ts";
import { startWorker } from "../product-processes.ts";

export interface BacklogResult {
  dispatches: number;
  /** The worker's resident memory, idle before the backlog appeared. */
  idleRssBytes: number;
  /** The largest resident memory sampled (every 100 ms) while it drained the backlog. */
  peakRssBytes: number;
  /** The kernel's own high-water mark (VmHWM) at the end. */
  highWaterBytes: number;
  deliveriesPerSecond: number;
  complete: boolean;
}

const SAMPLE_MS = 100;

/**
 * Scenario 6: one lane worker (`npm run worker`) is started idle, then a
 * backlog of `dispatches` rows appears at once (one transaction) and it
 * drains them while its RSS is sampled from /proc.
 */
export async function backlogMemory(context: BenchContext): Promise<BacklogResult> {
  const dispatches = context.options.sizes.backlog.dispatches;
  await context.db.reset();
  const [webhookId] = await context.db.seedWebhooks(1, `${context.subscriber.ready.url}/hooks`, "account");
  const worker = await startWorker(context.product, { name: "backlog-worker" });
  let peakRssBytes = 0;
  const sampler = setInterval(() => {
    peakRssBytes = Math.max(peakRssBytes, worker.memory()?.rss ?? 0);
  }, SAMPLE_MS);
  try {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const idleRssBytes = worker.memory()?.rss ?? NaN;
    await context.subscriber.call("reset");
    context.progress(`backlog: inserting ${dispatches.toLocaleString("en")} dispatches (idle RSS ${mb(idleRssBytes)})`);
    await context.db.insertDispatches(webhookId!, dispatches, "backlog");
    const started = now();
    const delivered = await waitForDeliveries(context, {
      label: "backlog",
      count: dispatches,
      recordedTarget: dispatches,
      recorded: () => context.db.delivered(),
      deadline: deliveryDeadline(dispatches),
    });
    const memory = worker.memory();
    peakRssBytes = Math.max(peakRssBytes, memory?.rss ?? 0);
    return {
      dispatches,
      idleRssBytes,
      peakRssBytes,
      highWaterBytes: memory?.peak ?? NaN,
      deliveriesPerSecond: delivered.complete ? (dispatches * 1_000) / (delivered.doneAt - started) : NaN,
      complete: delivered.complete,
    };
  } finally {
    clearInterval(sampler);
    await worker.stop();
  }
}
