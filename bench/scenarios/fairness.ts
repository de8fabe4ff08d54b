import { now, generateLoad, type BenchContext } from "../bench-context.ts";
import type { LoadResult } from "../load-generator.ts";
import { startPipeline } from "../product-processes.ts";
import { forkRpc, type RpcChild } from "../rpc.ts";
import { distribution, latenciesMs, type Distribution } from "../stats.ts";
import type { Arrivals, SubscriberReady } from "../subscriber.ts";

/** The two healthy webhooks, told apart by their path. */
const SAME_ORIGIN = "/fair/same";
const OTHER_ORIGIN = "/fair/other";
const SLOW_PREFIX = "/fair/slow/";

/**
 * The product's own default for sockets per origin (the per-origin cap, 32), not the 16 the other
 * scenarios share with the peers: with no more sockets than one webhook's cap (16), a slow
 * webhook holds every socket of its origin and its neighbours queue behind it.
 */
const PRODUCT_SOCKETS = { WEBHOOK_CONNECTIONS_PER_ORIGIN: "32" };

export interface HealthyWebhook {
  /** Milliseconds from the API's 2xx to the subscriber's arrival, without the slow origin. */
  alone: Distribution;
  /** The same, with the slow origin's webhooks present. */
  besideSlow: Distribution;
  /** `besideSlow.p95 / alone.p95`: 1 is no effect. */
  p95Ratio: number;
}

export interface FairnessResult {
  events: number;
  slowWebhooks: number;
  slowMs: number;
  /** Dispatches queued for the slow webhooks before the measured load (besides the events' own fan-out). */
  slowBacklog: number;
  /** A healthy webhook on the slow webhooks' origin. */
  sameOrigin: HealthyWebhook;
  /** A healthy webhook on another origin. */
  otherOrigin: HealthyWebhook;
  /** POSTs the slow webhooks received while the healthy ones were measured. */
  slowArrivals: number;
  /** Both healthy webhooks got every event in both runs before their deadline. */
  complete: boolean;
}

/**
 * Scenario 7: fairness. Two healthy webhooks of the benchmark account, one on
 * the subscriber's origin and one on another origin (a second subscriber
 * process, another port), receive a light, steady load through the API (one
 * connection at a fixed rate), twice, side by side: alone, then beside
 * `slowWebhooks` webhooks on the first origin whose endpoint answers after
 * `slowMs`, each with a backlog of dispatches and each hearing every event too.
 * Reports each healthy webhook's p95 (2xx → receipt) beside the slow ones over
 * its p95 alone. A fresh API and lane worker per run, with the product's default sockets per origin.
 */
export async function fairness(context: BenchContext): Promise<FairnessResult> {
  const size = context.options.sizes.fairness;
  const main = context.subscriber;
  const other = await forkRpc<SubscriberReady>("./subscriber.ts");
  try {
    await context.db.reset();
    await context.db.seedWebhooks(1, `${main.ready.url}${SAME_ORIGIN}`, "account");
    await context.db.seedWebhooks(1, `${other.ready.url}${OTHER_ORIGIN}`, "account");

    const alone = await measure(context, other, "fairness alone", async () => {});
    const slowIds: string[] = [];
    await main.call("answerPathAfter", { prefix: SLOW_PREFIX, ms: size.slowMs });
    const besideSlow = await measure(context, other, "fairness beside the slow origin", async () => {
      for (let i = 0; i < size.slowWebhooks; i++) {
        const [id] = await context.db.seedWebhooks(1, `${main.ready.url}${SLOW_PREFIX}${i}`, "account");
        slowIds.push(id!);
      }
      for (const id of slowIds) await context.db.insertDispatches(id, size.backlogPerSlowWebhook, `slow_${id}`);
    });
    const healthy = (path: string, otherProcess: boolean): HealthyWebhook => {
      const pick = (run: Run) => distribution(latenciesMs(run.sent, onPath(otherProcess ? run.other : run.main, path)));
      const a = pick(alone);
      const b = pick(besideSlow);
      return { alone: a, besideSlow: b, p95Ratio: b.p95 / a.p95 };
    };
    return {
      events: size.events,
      slowWebhooks: size.slowWebhooks,
      slowMs: size.slowMs,
      slowBacklog: size.slowWebhooks * size.backlogPerSlowWebhook,
      sameOrigin: healthy(SAME_ORIGIN, false),
      otherOrigin: healthy(OTHER_ORIGIN, true),
      slowArrivals: besideSlow.main.paths.filter((path) => path.startsWith(SLOW_PREFIX)).length,
      complete: alone.complete && besideSlow.complete,
    };
  } finally {
    await main.call("answerPathAfter", { prefix: SLOW_PREFIX, ms: 0 });
    await other.stop();
  }
}

interface Run {
  sent: LoadResult;
  main: Arrivals;
  other: Arrivals;
  complete: boolean;
}

/**
 * Runs `setUp`, starts the API and a lane worker, runs a
 * short unmeasured warm-up, then the measured light load; waits until both
 * healthy webhooks got every event or the deadline passes, then stops both
 * processes (the worker drains what it holds, slow POSTs included).
 */
async function measure(
  context: BenchContext,
  other: RpcChild<SubscriberReady>,
  label: string,
  setUp: () => Promise<void>,
): Promise<Run> {
  const size = context.options.sizes.fairness;
  await setUp();
  const { api, worker } = await startPipeline(
    { ...context.product, env: { ...context.product.env, ...PRODUCT_SOCKETS } },
    label.replaceAll(" ", "-"),
  );
  try {
    const load = async (amount: number, recordIds: boolean) => {
      await Promise.all([context.subscriber.call("reset"), other.call("reset")]);
      const sent = await generateLoad(context, api.url, {
        connections: 1,
        amount,
        overallRate: size.rate,
        recordIds,
      });
      // Bounded: a healthy pipeline delivers these within a second or two of the last 2xx.
      const deadline = now() + 15_000 + sent.ok * 10;
      let main: Arrivals;
      let elsewhere: Arrivals;
      for (;;) {
        [main, elsewhere] = await Promise.all([
          context.subscriber.call<Arrivals>("arrivals"),
          other.call<Arrivals>("arrivals"),
        ]);
        const done =
          onPath(main, SAME_ORIGIN).ids.length >= sent.ok && onPath(elsewhere, OTHER_ORIGIN).ids.length >= sent.ok;
        if (done || now() >= deadline) return { sent, main, other: elsewhere, complete: done && sent.failed === 0 };
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await load(size.warmup, false);
    const run = await load(size.events, true);
    context.progress(
      `${label}: p95 same origin ${distribution(latenciesMs(run.sent, onPath(run.main, SAME_ORIGIN))).p95.toFixed(1)} ms, ` +
        `other origin ${distribution(latenciesMs(run.sent, onPath(run.other, OTHER_ORIGIN))).p95.toFixed(1)} ms`,
    );
    return run;
  } finally {
    await api.stop();
    await worker.stop();
  }
}

/** The arrivals whose path is `path`. */
function onPath(arrivals: Arrivals, path: string): { ids: string[]; times: number[] } {
  const ids: string[] = [];
  const times: number[] = [];
  arrivals.paths.forEach((p, i) => {
    if (p !== path) return;
    ids.push(arrivals.ids[i]!);
    times.push(arrivals.times[i]!);
  });
  return { ids, times };
}
