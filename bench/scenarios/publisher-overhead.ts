import { generateLoad, type BenchContext } from "../bench-context.ts";
import { BENCH_EVENT_TYPE } from "../bench-event-body.ts";
import { startApi, startApiPeer, type ProductProcess } from "../product-processes.ts";
import { median } from "../stats.ts";

export const PUBLISHER_VARIANTS = [
  { key: "off", label: "flag off" },
  { key: "none", label: "flag on, nobody subscribed" },
  { key: "subscribed", label: "flag on, one subscriber" },
  { key: "peer", label: "hand-written peer (Hono + jose + zod + pg)" },
] as const;
type VariantKey = (typeof PUBLISHER_VARIANTS)[number]["key"];

export interface PublisherVariant {
  key: VariantKey;
  label: string;
  /** Requests per second, every round, and their median. */
  rounds: number[];
  median: number;
  p99Ms: number;
  /** The API process's CPU time per request (user + system), median of the rounds. */
  cpuUsPerRequest: number;
}

export interface PublisherResult {
  variants: PublisherVariant[];
  /** Flag on with nobody subscribed over flag off: the median of each round's ratio (rounds pair the two). */
  ratioNone: number;
  /** Flag on with a subscriber over flag off, the same way. */
  ratioSubscribed: number;
  /** Flag off's CPU per request over flag on's with nobody subscribed: the throughput ratio a CPU-bound API would have. */
  cpuRatioNone: number;
  /** hooklane flag off over the hand-written peer, req/s: the median of each round's ratio. */
  ratioPeer: number;
  /** hooklane flag off's CPU per request over the peer's (1 = as cheap as hand-written code). */
  cpuRatioPeer: number;
}

/**
 * Scenario 1: the API's `POST /v3/payment-debts` throughput with the flag
 * off, on with nobody subscribed, and on with a subscriber (created through
 * the API, which refreshes its subscribed set), beside the same endpoint
 * written by hand (`bench/peers/api-peer.ts`). No lane runs, so only the
 * publisher's own cost is measured. Each round starts a fresh API per flag
 * value (and a fresh peer) and measures every variant after a warm-up.
 */
export async function publisherOverhead(context: BenchContext): Promise<PublisherResult> {
  const { publisher: size } = context.options.sizes;
  const measured = new Map<VariantKey, { rps: number[]; p99: number[]; cpuUs: number[] }>(
    PUBLISHER_VARIANTS.map((v) => [v.key, { rps: [], p99: [], cpuUs: [] }]),
  );
  const measure = async (round: number, api: ProductProcess & { url: string }, key: VariantKey) => {
    if (!api.alive()) throw new Error(`${key}: the process exited; see ${api.logFile}`);
    const load = { connections: size.connections, recordIds: false };
    await generateLoad(context, api.url, { ...load, durationSeconds: size.warmupSeconds });
    const cpuBefore = api.cpuMs();
    const result = await generateLoad(context, api.url, { ...load, durationSeconds: size.seconds });
    const cpuUs = ((api.cpuMs() - cpuBefore) * 1_000) / result.ok;
    const label = PUBLISHER_VARIANTS.find((v) => v.key === key)!.label;
    if (result.failed > 0) throw new Error(`${label}: ${result.failed} requests failed`);
    const into = measured.get(key)!;
    into.rps.push(result.requestsPerSecond);
    into.p99.push(result.latencyP99Ms);
    into.cpuUs.push(cpuUs);
    context.progress(
      `publisher round ${round}/${size.rounds}, ${label}: ${result.requestsPerSecond.toFixed(0)} req/s, ` +
        `${cpuUs.toFixed(0)} µs CPU per request`,
    );
  };

  const flagOff = async (round: number) => {
    await context.db.reset();
    const api = await startApi(context.product, { publish: false, name: `publisher-off-${round}` });
    try {
      await measure(round, api, "off");
    } finally {
      await api.stop();
    }
  };
  const flagOn = async (round: number) => {
    await context.db.reset();
    const api = await startApi(context.product, { publish: true, name: `publisher-on-${round}` });
    try {
      await measure(round, api, "none");
      await subscribe(context, api.url);
      await measure(round, api, "subscribed");
    } finally {
      await api.stop();
    }
  };
  const peer = async (round: number) => {
    await context.db.reset();
    const api = await startApiPeer(context.product, { name: `publisher-peer-${round}` });
    try {
      await measure(round, api, "peer");
    } finally {
      await api.stop();
    }
  };
  // Peer, off, on in odd rounds and the reverse in even ones, so a drift in
  // the machine's load does not favour one side.
  for (let round = 1; round <= size.rounds; round++) {
    for (const step of round % 2 ? [peer, flagOff, flagOn] : [flagOn, flagOff, peer]) await step(round);
  }

  const variants = PUBLISHER_VARIANTS.map((v) => {
    const { rps, p99, cpuUs } = measured.get(v.key)!;
    return { ...v, rounds: rps, median: median(rps), p99Ms: median(p99), cpuUsPerRequest: median(cpuUs) };
  });
  const perRound = (key: VariantKey, over: VariantKey = "off") => {
    const base = measured.get(over)!.rps;
    return median(measured.get(key)!.rps.map((rps, i) => rps / base[i]!));
  };
  const cpu = (key: VariantKey) => variants.find((v) => v.key === key)!.cpuUsPerRequest;
  return {
    variants,
    ratioNone: perRound("none"),
    ratioSubscribed: perRound("subscribed"),
    cpuRatioNone: cpu("off") / cpu("none"),
    ratioPeer: perRound("off", "peer"),
    cpuRatioPeer: cpu("off") / cpu("peer"),
  };
}

/** Subscribes to the benchmark event through the control plane, as a customer would. */
async function subscribe(context: BenchContext, apiUrl: string): Promise<void> {
  const response = await fetch(`${apiUrl}/v3/webhooks`, {
    method: "POST",
    headers: { authorization: `Bearer ${context.token}`, "content-type": "application/json" },
    body: JSON.stringify({ url: `${context.subscriber.ready.url}/hooks`, events: [BENCH_EVENT_TYPE] }),
  });
  if (response.status !== 201)
    throw new Error(`creating the webhook answered ${response.status}: ${await response.text()}`);
}
