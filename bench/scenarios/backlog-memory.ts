import { deliveryDeadline, now, waitForDeliveries, type BenchContext } from "../bench-context.ts";
import { mb, ms } from "../format.ts";
import { startWorker } from "../product-processes.ts";
import { median } from "../stats.ts";

/** Worker starts, as `npm run worker` runs it (the bundle) and from source (`node app/worker.ts`). */
export interface StartupResult {
  /** Spawn to the "lane worker … started" line, one per round, in milliseconds. */
  bundleMs: number[];
  sourceMs: number[];
  /** Resident memory a second after that line, idle, one per round. */
  bundleIdleRssBytes: number[];
  sourceIdleRssBytes: number[];
}

export interface BacklogResult {
  dispatches: number;
  startup: StartupResult;
  /** The worker's resident memory, idle before the backlog appeared. */
  idleRssBytes: number;
  /** The largest resident memory sampled (every 100 ms) while it drained the backlog. */
  peakRssBytes: number;
  /** The kernel's own high-water mark (VmHWM) at the end. */
  highWaterBytes: number;
  deliveriesPerSecond: number;
  /** The worker's CPU time (user + system) per delivery while it drained, in microseconds. */
  cpuUsPerDelivery: number;
  complete: boolean;
}

const SAMPLE_MS = 100;
const IDLE_MS = 1_000;

const idle = () => new Promise((resolve) => setTimeout(resolve, IDLE_MS));

/**
 * Scenario 6: start-up, then memory. `starts` rounds each start a lane worker
 * as `npm run worker` does and one from source, alternating which goes first,
 * and time spawn → ready line (its lane loop has sent its first step).
 * Then one worker (`npm run worker`) is started idle, a backlog of
 * `dispatches` rows appears at once (one transaction) and it drains them
 * while its RSS is sampled from /proc.
 */
export async function backlogMemory(context: BenchContext): Promise<BacklogResult> {
  const { starts, dispatches } = context.options.sizes.backlog;
  await context.db.reset();
  const startup = await measureStartup(context, starts);
  const [webhookId] = await context.db.seedWebhooks(1, `${context.subscriber.ready.url}/hooks`, "account");
  const worker = await startWorker(context.product, { name: "backlog-worker" });
  let peakRssBytes = 0;
  const sampler = setInterval(() => {
    peakRssBytes = Math.max(peakRssBytes, worker.memory()?.rss ?? 0);
  }, SAMPLE_MS);
  try {
    await idle();
    const idleRssBytes = worker.memory()?.rss ?? NaN;
    await context.subscriber.call("reset");
    context.progress(`backlog: inserting ${dispatches.toLocaleString("en")} dispatches (idle RSS ${mb(idleRssBytes)})`);
    const cpuBeforeMs = worker.cpuMs();
    await context.db.insertDispatches(webhookId!, dispatches, "backlog");
    const started = now();
    const delivered = await waitForDeliveries(context, {
      label: "backlog",
      count: dispatches,
      recordedTarget: dispatches,
      recorded: () => context.db.delivered(),
      deadline: deliveryDeadline(dispatches),
    });
    const cpuMs = worker.cpuMs() - cpuBeforeMs;
    const memory = worker.memory();
    peakRssBytes = Math.max(peakRssBytes, memory?.rss ?? 0);
    return {
      dispatches,
      startup,
      idleRssBytes,
      peakRssBytes,
      highWaterBytes: memory?.peak ?? NaN,
      deliveriesPerSecond: delivered.complete ? (dispatches * 1_000) / (delivered.doneAt - started) : NaN,
      cpuUsPerDelivery: delivered.complete ? (cpuMs * 1_000) / dispatches : NaN,
      complete: delivered.complete,
    };
  } finally {
    clearInterval(sampler);
    await worker.stop();
  }
}

async function measureStartup(context: BenchContext, rounds: number): Promise<StartupResult> {
  const result: StartupResult = { bundleMs: [], sourceMs: [], bundleIdleRssBytes: [], sourceIdleRssBytes: [] };
  const startOne = async (fromSource: boolean, round: number) => {
    const name = `startup-${fromSource ? "source" : "bundle"}-${round}`;
    const worker = await startWorker(context.product, { name, fromSource });
    try {
      await idle();
      (fromSource ? result.sourceMs : result.bundleMs).push(worker.startMs);
      (fromSource ? result.sourceIdleRssBytes : result.bundleIdleRssBytes).push(worker.memory()?.rss ?? NaN);
    } finally {
      await worker.stop();
    }
  };
  for (let round = 0; round < rounds; round++) {
    const sourceFirst = round % 2 === 1;
    await startOne(sourceFirst, round);
    await startOne(!sourceFirst, round);
  }
  context.progress(
    `backlog: worker start-up ${ms(median(result.bundleMs))} (from source ${ms(median(result.sourceMs))}), ` +
      `median of ${rounds}`,
  );
  return result;
}
