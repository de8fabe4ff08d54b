import { deliveryDeadline, generateLoad, waitForDeliveries, type BenchContext } from "../bench-context.ts";
import type { LoadResult } from "../load-generator.ts";
import { startPipeline } from "../product-processes.ts";
import { distribution, latenciesMs, sustainedRate, type Distribution } from "../stats.ts";

export interface LatencyRun {
  events: number;
  /** Deliveries that arrived before the deadline. */
  arrived: number;
  /** Milliseconds from the API's 2xx to the subscriber's arrival. */
  latency: Distribution;
  apiRequestsPerSecond: number;
}

export interface EndToEndResult {
  /** One request at a time at a fixed low rate. */
  light: LatencyRun;
  /** Many connections at once: the pipeline's sustained rate. */
  loaded: LatencyRun & {
    /** Arrivals per second between the 10th and the 90th percentile arrival. */
    sustainedDeliveriesPerSecond: number;
    /** Events over the time from the first 2xx to the last ledger record. */
    overallDeliveriesPerSecond: number;
  };
}

/**
 * Scenario 2: `POST /v3/payment-debts` through the API (`npm run api`) with
 * one subscriber and one lane worker (`npm run worker`), fan-out 1. A light
 * run (one connection, a fixed low rate) gives the latency SPEC's p50 target
 * speaks of; a loaded run gives the sustained delivery rate and the latency
 * under load.
 */
export async function endToEnd(context: BenchContext): Promise<EndToEndResult> {
  const { endToEnd: size } = context.options.sizes;
  await context.db.reset();
  await context.db.seedWebhooks(1, `${context.subscriber.ready.url}/hooks`, "account");
  const { api, worker } = await startPipeline(context.product, "end-to-end");
  let expected = 0;
  const run = async (label: string, load: () => Promise<LoadResult>) => {
    await context.subscriber.call("reset");
    const sent = await load();
    expected += sent.ok;
    const delivered = await waitForDeliveries(context, {
      label,
      count: sent.ok,
      recordedTarget: expected,
      recorded: () => context.db.delivered(),
      deadline: deliveryDeadline(sent.ok),
    });
    return { sent, delivered };
  };
  try {
    await run("end-to-end warm-up", () =>
      generateLoad(context, api.url, { connections: 8, amount: size.warmup, recordIds: false }),
    );
    const light = await run("end-to-end light load", () =>
      generateLoad(context, api.url, {
        connections: 1,
        amount: size.light,
        overallRate: size.lightRate,
        recordIds: true,
      }),
    );
    context.progress(`light load: ${light.delivered.arrived}/${light.sent.ok} delivered`);
    const loaded = await run("end-to-end loaded", () =>
      generateLoad(context, api.url, { connections: size.connections, amount: size.events, recordIds: true }),
    );
    // Times are recorded in the order answers came back.
    const firstSent = loaded.sent.times[0] ?? NaN;
    return {
      light: latencyRun(light.sent, light.delivered.arrivals),
      loaded: {
        ...latencyRun(loaded.sent, loaded.delivered.arrivals),
        sustainedDeliveriesPerSecond: sustainedRate(loaded.delivered.arrivals.times),
        overallDeliveriesPerSecond: loaded.delivered.complete
          ? (loaded.sent.ok * 1_000) / (loaded.delivered.doneAt - firstSent)
          : NaN,
      },
    };
  } finally {
    await api.stop();
    await worker.stop();
  }
}

function latencyRun(sent: LoadResult, arrivals: { ids: string[]; times: number[] }): LatencyRun {
  const latencies = latenciesMs(sent, arrivals);
  return {
    events: sent.ok,
    arrived: latencies.length,
    latency: distribution(latencies),
    apiRequestsPerSecond: sent.requestsPerSecond,
  };
}
