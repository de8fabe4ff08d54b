import { randomBytes } from "node:crypto";
import { Socket } from "node:net";
import { deliveryDeadline, now, waitForDeliveries, type BenchContext } from "../bench-context.ts";
import { benchEventBody } from "../bench-event-body.ts";
import type { CeilingRun } from "../ceiling.ts";
import { createBullmqProducer } from "../peers/bullmq-pipeline.ts";
import {
  createPeerLedger,
  peerDelivered,
  resetPeerLedger,
  type PeerProducer,
  type PeerWorkerConfig,
} from "../peers/peer-ledger.ts";
import { createPgBossProducer } from "../peers/pg-boss-pipeline.ts";
import { startWorker } from "../product-processes.ts";
import { forkRpc } from "../rpc.ts";
import { median } from "../stats.ts";

export const CONTESTANTS = ["ceiling", "hooklane", "pg-boss", "bullmq"] as const;
export type Contestant = (typeof CONTESTANTS)[number];

export interface ContestantResult {
  /** Deliveries per second, every round. */
  rounds: number[];
  median: number;
  /** Set when the contestant could not run (e.g. no Redis for BullMQ). */
  skipped?: string;
  /** Set when a round hit its deadline before every delivery was recorded. */
  incomplete?: boolean;
  /**
   * Transactions the database committed per delivery (pg_stat_database, the
   * whole turn: start, warm-up drains, enqueue, drain, stop, over every delivery
   * it made): a figure the machine's noise does not move. None for the ceiling.
   */
  transactionsPerDelivery: number[];
  /** The lane worker's CPU time (user + system) per delivery, in µs, every round: hooklane only. */
  workerCpuUsPerDelivery?: number[];
}

export interface ThroughputResult {
  deliveries: number;
  /** Webhooks hooklane's N dispatches take turns over (the comparison's lane). */
  webhooks: number;
  contestants: Record<Contestant, ContestantResult>;
  /**
   * hooklane draining the same N dispatches of one webhook, every round right after its turn:
   * bounded by the per-webhook in-flight cap (a cap's worth of POSTs per claim → POST → claim cycle).
   */
  oneWebhook: ContestantResult;
  /** With --observability-cost: the same lane with its metrics off (QUIET_LANE), in the same rounds. */
  quiet?: ContestantResult;
}

/**
 * A lane worker without metrics, to weigh what they cost. Its logs stay at
 * info, as in production (the bench waits for its start-up line), where a
 * successful delivery writes nothing.
 */
const QUIET_LANE = { METRICS_ENABLED: "false" };

/**
 * The lane's comparison load: N dispatches over 16 webhooks, as a lane serving many subscribers
 * carries it. Each webhook keeps the product's default in-flight cap (16); the per-origin and
 * per-account caps are raised to the concurrency because every benchmark webhook lives on the one
 * loopback subscriber and in the one benchmark account, which here stand for many origins and
 * accounts. The peers have no caps; the one-webhook round shows the lane where its cap binds.
 */
const LANE_WEBHOOKS = 16;
/**
 * Unmeasured drains of N each contestant's fresh process makes before its measured one. A process's first
 * thousands of deliveries run its code cold: the ceiling's client kept across runs went 12,765, 20,022, 32,610 and
 * 38,409 /s, and a lane worker kept across rounds spent 48–55 µs of CPU a delivery against 100–105 fresh. Every
 * contestant, the ceiling included, gets the same: a fresh process, these drains, then the measured one.
 */
const WARM_UP_DRAINS = 2;
const laneCaps = (concurrency: number) => ({
  WEBHOOK_MAX_IN_FLIGHT_PER_ORIGIN: String(concurrency),
  WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT: String(concurrency),
});

/**
 * Scenarios 4 and 5: N deliveries to the same subscriber at the same
 * concurrency, measured from the start of the enqueue to the last ledger
 * record. The ceiling POSTs without a database; hooklane's lane drains N
 * dispatch rows inserted in one transaction; the peers write N ledger rows and
 * enqueue N jobs. Every round runs each contestant once, starting one later each time.
 */
export async function dispatchThroughput(context: BenchContext): Promise<ThroughputResult> {
  const { deliveries, rounds } = context.options.sizes.throughput;
  const { concurrency, connections } = context.options.sizes;
  await context.db.reset();
  await createPeerLedger(context.db.database);
  await resetPeerLedger(context.db.database);
  const webhookIds = await context.db.seedWebhooks(LANE_WEBHOOKS, `${context.subscriber.ready.url}/hooks`, "account");
  const peerUrl = `${context.subscriber.ready.url}/peer`;
  const redisDown = await redisUnreachable(context.options.redisUrl);
  if (redisDown) {
    console.warn(`\n!!! BullMQ peer SKIPPED: Redis is not reachable at ${context.options.redisUrl} (${redisDown})\n`);
  }
  const results = Object.fromEntries(
    CONTESTANTS.map((name) => [name, { rounds: [], median: NaN, transactionsPerDelivery: [] } as ContestantResult]),
  ) as Record<Contestant, ContestantResult>;
  if (redisDown) results.bullmq.skipped = `Redis not reachable at ${context.options.redisUrl}`;
  results.hooklane.workerCpuUsPerDelivery = [];
  const oneWebhook: ContestantResult = {
    rounds: [],
    median: NaN,
    transactionsPerDelivery: [],
    workerCpuUsPerDelivery: [],
  };
  const quiet: ContestantResult | undefined = context.options.observabilityCost
    ? { rounds: [], median: NaN, transactionsPerDelivery: [], workerCpuUsPerDelivery: [] }
    : undefined;

  const peerConfig = (queue: string): PeerWorkerConfig => ({
    databaseUrl: context.db.url,
    redisUrl: context.options.redisUrl,
    queue,
    secret: `whsec_${randomBytes(32).toString("base64")}`,
    concurrency,
    connections,
  });
  const events = (tag: string) =>
    Array.from({ length: deliveries }, (_, i) => ({
      eventId: `evt_${tag}_${i}`,
      payload: benchEventBody(`evt_${tag}_${i}`, `${tag}_${i}`),
    }));

  /** One batch of `deliveries`: `enqueue` starts the clock, the ledger count (`recorded`) stops it. */
  async function drain(label: string, enqueue: () => Promise<void>, recorded: () => Promise<number>) {
    const before = await recorded();
    await context.subscriber.call("reset");
    const started = now();
    await enqueue();
    const delivered = await waitForDeliveries(context, {
      label,
      count: deliveries,
      recordedTarget: before + deliveries,
      recorded,
      deadline: deliveryDeadline(deliveries),
    });
    return { ...delivered, started };
  }

  /** Times one round. */
  async function measure(
    name: string,
    into: ContestantResult,
    enqueue: () => Promise<void>,
    recorded: () => Promise<number>,
  ): Promise<void> {
    const delivered = await drain(name, enqueue, recorded);
    if (!delivered.complete) into.incomplete = true;
    const rate = delivered.complete ? (deliveries * 1_000) / (delivered.doneAt - delivered.started) : NaN;
    into.rounds.push(rate);
    context.progress(`${name}: ${rate.toFixed(0)} deliveries/s${delivered.complete ? "" : " (deadline reached)"}`);
  }

  /** `WARM_UP_DRAINS` unmeasured drains of `deliveries` through a contestant's fresh process. */
  async function warmUp(
    name: string,
    enqueue: (drain: number) => Promise<void>,
    recorded: () => Promise<number>,
  ): Promise<void> {
    for (let n = 1; n <= WARM_UP_DRAINS; n++) {
      const delivered = await drain(`${name} warm-up`, () => enqueue(n), recorded);
      if (!delivered.complete) throw new Error(`${name}: warm-up drain ${n} did not finish before its deadline`);
    }
  }

  /** Runs one turn and counts the transactions it committed (its processes have exited, so their counts are in). */
  async function countingTransactions(name: Contestant, turn: () => Promise<void>): Promise<void> {
    const before = await context.db.transactions();
    await turn();
    const after = await context.db.transactions();
    // The turn drained its warm-ups too: the same work, in the same process.
    results[name].transactionsPerDelivery.push((after - before) / (deliveries * (1 + WARM_UP_DRAINS)));
  }

  async function peerRound(name: "pg-boss" | "bullmq", round: number): Promise<void> {
    const config = peerConfig(`bench-${context.runId}-${name}-${round}`);
    const worker = await forkRpc(name === "pg-boss" ? "./peers/pg-boss-worker.ts" : "./peers/bullmq-worker.ts", {
      env: { ...process.env, BENCH_PEER: JSON.stringify(config) },
      readyTimeoutMs: 60_000,
    });
    let producer: PeerProducer | undefined;
    try {
      producer =
        name === "pg-boss"
          ? await createPgBossProducer(context.db.database, context.db.url, config.queue)
          : createBullmqProducer(context.db.database, context.options.redisUrl, config.queue);
      await warmUp(
        name,
        (drain) => producer!.enqueue(peerUrl, events(`${name}${round}w${drain}`)),
        () => peerDelivered(context.db.database),
      );
      const batch = events(`${name}${round}`);
      await measure(
        name,
        results[name],
        () => producer!.enqueue(peerUrl, batch),
        () => peerDelivered(context.db.database),
      );
    } finally {
      await worker.stop();
      await producer?.close();
    }
  }

  /** One lane worker drains the round's dispatches; its CPU time is read around the drain. */
  async function laneRound(
    round: number,
    name: string,
    into: ContestantResult,
    env: Record<string, string>,
    webhooks: readonly string[] = webhookIds,
  ) {
    const worker = await startWorker(context.product, {
      name: `throughput-${name}-${round}`,
      env: { ...laneCaps(concurrency), ...env },
    });
    try {
      await warmUp(
        name,
        (drain) => context.db.insertDispatches(webhooks, deliveries, `${name}${round}w${drain}`),
        () => context.db.delivered(),
      );
      let cpuBefore = NaN;
      await measure(
        name,
        into,
        () => {
          cpuBefore = worker.cpuMs();
          return context.db.insertDispatches(webhooks, deliveries, `${name}${round}`);
        },
        () => context.db.delivered(),
      );
      into.workerCpuUsPerDelivery!.push(((worker.cpuMs() - cpuBefore) * 1_000) / deliveries);
    } finally {
      await worker.stop();
    }
  }

  const turns: Record<Contestant, (round: number) => Promise<void>> = {
    async ceiling() {
      const ceiling = await forkRpc("./ceiling.ts");
      try {
        const run: CeilingRun = {
          url: `${context.subscriber.ready.url}/ceiling`,
          deliveries,
          concurrency,
          connections,
        };
        for (let drain = 0; drain <= WARM_UP_DRAINS; drain++) {
          await context.subscriber.call("reset");
          const { elapsedMs, failed } = await ceiling.call<{ elapsedMs: number; failed: number }>("run", run);
          if (drain < WARM_UP_DRAINS) continue;
          results.ceiling.rounds.push(failed === 0 ? (deliveries * 1_000) / elapsedMs : NaN);
          context.progress(`ceiling: ${((deliveries * 1_000) / elapsedMs).toFixed(0)} deliveries/s`);
        }
      } finally {
        await ceiling.stop();
      }
    },
    async hooklane(round) {
      const observed = () => countingTransactions("hooklane", () => laneRound(round, "hooklane", results.hooklane, {}));
      const single = () => laneRound(round, "hooklane-one-webhook", oneWebhook, {}, webhookIds.slice(0, 1));
      if (!quiet) {
        await observed();
        return single();
      }
      // Side by side, alternating which goes first.
      const unobserved = () => laneRound(round, "hooklane-quiet", quiet, QUIET_LANE);
      for (const turn of round % 2 ? [observed, unobserved] : [unobserved, observed]) await turn();
      await single();
    },
    "pg-boss": (round) => countingTransactions("pg-boss", () => peerRound("pg-boss", round)),
    bullmq: (round) =>
      redisDown ? Promise.resolve() : countingTransactions("bullmq", () => peerRound("bullmq", round)),
  };
  for (let round = 1; round <= rounds; round++) {
    // Each round starts with the next contestant, so a drift in the
    // machine's load does not always favour the same one.
    const shift = (round - 1) % CONTESTANTS.length;
    for (const name of [...CONTESTANTS.slice(shift), ...CONTESTANTS.slice(0, shift)]) await turns[name](round);
  }
  for (const result of [...Object.values(results), oneWebhook, ...(quiet ? [quiet] : [])]) {
    result.median = result.rounds.length ? median(result.rounds) : NaN;
  }
  return { deliveries, webhooks: LANE_WEBHOOKS, contestants: results, oneWebhook, ...(quiet ? { quiet } : {}) };
}

/** Why Redis cannot be reached within 1 s, or undefined when it answers PING. */
async function redisUnreachable(redisUrl: string): Promise<string | undefined> {
  const url = new URL(redisUrl);
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (reason: string | undefined) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(1_000, () => done("no answer within 1 s"));
    socket.once("error", (error) => done(error.message));
    socket.once("data", (data) => done(data.toString().startsWith("+PONG") ? undefined : data.toString().trim()));
    socket.connect(Number(url.port || 6379), url.hostname, () => socket.write("PING\r\n"));
  });
}
