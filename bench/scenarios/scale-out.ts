// Scenario 8, scale-out: does a second, third, fourth lane worker add throughput, or do the workers' claims wait
// on each other in the database? Claims no longer take one database-wide lock, only advisory locks on the keys of
// the webhook, origin and account they touch, and routing the key of its route shard, tried and skipped when held;
// this measures what is left of the contention. The same backlog, routed and delivered, is drained by one worker
// and by four, and pg_stat_activity says what the database's active sessions waited on meanwhile. On a machine with few cores the workers and
// PostgreSQL share them, so the CPU each spends per delivery is measured too, and the report projects from it
// what more cores would give.
import { availableParallelism } from "node:os";
import { addActivity, emptyActivity, sampleActivity, type ActivitySummary } from "../activity-sampler.ts";
import { backendCpuSpentMs, databaseBackendsCpu, serverPostmaster, type BackendCpu } from "../backend-cpu.ts";
import { deliveryDeadline, now, waitForDeliveries, type BenchContext, type Delivered } from "../bench-context.ts";
import { project, type Projection } from "../core-projection.ts";
import { postgresCpuMs, processCpuMs, startWorker, type ProductProcess } from "../product-processes.ts";
import { forkRpc, type RpcChild } from "../rpc.ts";
import {
  arrivalProblems,
  createAccounts,
  insertEvents,
  ledgerSpan,
  seedWebhooks,
  type BacklogShape,
} from "../scale-out-backlog.ts";
import { median } from "../stats.ts";
import type { SubscriberReady } from "../subscriber.ts";

const ORIGINS = 8;
const ACCOUNTS = 8;
const SAMPLE_EVERY_MS = 25;

export interface ScaleOutConfiguration {
  workers: number;
  /** Deliveries per second from the batch's first recorded success to its last (`completed_at`), each round. */
  rounds: number[];
  median: number;
  /** CPU per delivery (user + system, µs) while the measured batch drained, each round: the workers together… */
  workerCpuUs: number[];
  /** …every process of the PostgreSQL server (`postgresCpuMs`: anything else using the server counts too)… */
  postgresCpuUs: number[];
  /** …of which the bench database's sessions (the lane's statements, the benchmark's own left out)… */
  sessionCpuUs: number[];
  /** …and the subscriber (all eight origins are its ports). */
  subscriberCpuUs: number[];
  /**
   * Transactions the database committed per delivery, each round: from before its workers started to after they
   * stopped, over the warm-up's deliveries and the measured ones (the benchmark's own polls count too, a few per
   * hundred deliveries). A figure the machine's noise does not move.
   */
  transactionsPerDelivery: number[];
  /** pg_stat_activity while the measured batches drained, every round's samples together. */
  activity: ActivitySummary;
  /** Each round's share of active sessions waiting on a lock. */
  lockWaitShares: number[];
  /** What was not exactly once, per round (empty: every event × webhook arrived and was recorded once). */
  problems: string[];
  incomplete?: boolean;
}

export interface ScaleOutResult {
  events: number;
  /** Per batch: every event heard by its account's webhook on each origin. */
  deliveries: number;
  origins: number;
  accounts: number;
  oneWorker: ScaleOutConfiguration;
  fourWorkers: ScaleOutConfiguration;
  /** Four workers' deliveries per second over one's, each round, and the median. */
  ratios: number[];
  ratio: number;
  /**
   * On a machine with 2 or 3 cores, a worker per core as well (fewer workers than four, each with a core): what
   * adding workers gives before they outnumber the cores. Its ratios to one worker, each round, and the median.
   */
  perCore?: { configuration: ScaleOutConfiguration; ratios: number[]; ratio: number };
  /**
   * What more cores would give, from the four workers' CPU per delivery: arithmetic, not a measurement. Once from
   * the CPU of all the server's processes (too high when something else uses the server) and once from the lane's
   * sessions' alone (too low by the server's background work): on a quiet server the truth is near the first.
   */
  projection: Projection[];
  complete: boolean;
}

/**
 * Scenario 8: `events` route jobs in the outbox, over 8 accounts whose 8 webhooks each sit on one of 8 origins
 * (the subscriber's ports), drained by one lane worker and by four (separate processes, the throughput scenario's
 * settings and the product's caps), and on a machine of 2 or 3 cores by one a core, in rotating rounds. Each round starts fresh workers together and warms them
 * with an unmeasured batch of the same shape, as many deliveries per worker as the measured batch, before it.
 */
export async function scaleOut(context: BenchContext): Promise<ScaleOutResult> {
  const { events, rounds } = context.options.sizes.scaleOut;
  const subscriber = await forkRpc<SubscriberReady>("./subscriber.ts", {
    env: { ...process.env, BENCH_SUBSCRIBER_PORTS: String(ORIGINS) },
  });
  try {
    const shape: BacklogShape = { accounts: ACCOUNTS, originUrls: subscriber.ready.urls };
    await createAccounts(context.db.database, shape);
    const oneWorker = emptyConfiguration(1);
    const fourWorkers = emptyConfiguration(4);
    const cores = availableParallelism();
    const perCore = cores > 1 && cores < 4 ? emptyConfiguration(cores) : undefined;
    const configurations = [oneWorker, fourWorkers, ...(perCore ? [perCore] : [])];
    for (let round = 1; round <= rounds; round++) {
      // Rotating which goes first, so a drift in the machine's load does not always favour the same one.
      const order = configurations.map((_, i) => configurations[(i + round - 1) % configurations.length]!);
      for (const configuration of order) await drainRound(context, subscriber, shape, configuration, round);
    }
    const ratiosOf = (c: ScaleOutConfiguration) => c.rounds.map((rate, i) => rate / oneWorker.rounds[i]!);
    const ratios = ratiosOf(fourWorkers);
    for (const configuration of configurations) configuration.median = median(configuration.rounds);
    return {
      events,
      deliveries: events * ORIGINS,
      origins: ORIGINS,
      accounts: ACCOUNTS,
      oneWorker,
      fourWorkers,
      ratios,
      ratio: median(ratios),
      ...(perCore && {
        perCore: { configuration: perCore, ratios: ratiosOf(perCore), ratio: median(ratiosOf(perCore)) },
      }),
      projection: [
        project(
          "the PostgreSQL server's processes",
          median(fourWorkers.workerCpuUs),
          median(fourWorkers.postgresCpuUs),
        ),
        project("the lane's sessions", median(fourWorkers.workerCpuUs), median(fourWorkers.sessionCpuUs)),
      ],
      complete: configurations.every((c) => !c.incomplete && c.problems.length === 0),
    };
  } finally {
    await subscriber.stop();
  }
}

function emptyConfiguration(workers: number): ScaleOutConfiguration {
  return {
    workers,
    rounds: [],
    median: NaN,
    workerCpuUs: [],
    postgresCpuUs: [],
    sessionCpuUs: [],
    subscriberCpuUs: [],
    transactionsPerDelivery: [],
    activity: emptyActivity(),
    lockWaitShares: [],
    problems: [],
  };
}

/**
 * One round of one configuration, on emptied tables and fresh webhooks: its workers started together, a warm-up
 * batch drained (`workers` times the events: a lane worker's first thousands of deliveries run its code cold, see
 * the throughput scenario), then the measured one. That one is inserted in one transaction while the warm workers
 * idle (not before they start, as that would time their start-up, cold code included): its commit wakes them all
 * at once.
 */
async function drainRound(
  context: BenchContext,
  subscriber: RpcChild<SubscriberReady>,
  shape: BacklogShape,
  into: ScaleOutConfiguration,
  round: number,
): Promise<void> {
  const { events } = context.options.sizes.scaleOut;
  const deliveries = events * ORIGINS;
  const label = `scale-out, ${into.workers} worker${into.workers === 1 ? "" : "s"}`;
  const local = { ...context, subscriber };
  await context.db.reset();
  await seedWebhooks(context.db, shape);
  const transactionsBefore = await context.db.transactions();
  const workers = await startWorkers(context, into.workers, round);
  /** Puts `count` events in the outbox; resolves with the deliveries they make. */
  const enqueue = async (tag: string, count: number) => {
    await subscriber.call("reset");
    await insertEvents(context.db.database, shape, tag, count);
    return count * ORIGINS;
  };
  const drained = (what: string, count: number, recordedTarget: number) =>
    waitForDeliveries(local, {
      label: `${label}, ${what}`,
      count,
      recordedTarget,
      recorded: () => context.db.delivered(),
      deadline: deliveryDeadline(count),
    });
  try {
    // Every process as warm as the single worker: as many deliveries each as the measured batch has in all.
    const warmUp = await enqueue(`so${round}w${into.workers}warm`, events * into.workers);
    if (!(await drained("warm-up", warmUp, warmUp)).complete) {
      throw new Error(`${label}: the warm-up batch did not drain before its deadline`);
    }

    const tag = `so${round}w${into.workers}run`;
    // PostgreSQL's figures are NaN for a server on another machine.
    const postmaster = await serverPostmaster(context.db.database);
    const cpu = () => ({
      workers: workers.reduce((sum, worker) => sum + worker.cpuMs(), 0),
      postgres: postmaster === undefined ? NaN : postgresCpuMs(postmaster),
      subscriber: processCpuMs(subscriber.pid),
    });
    // The sampler's queries and the benchmark's ledger counts are PostgreSQL CPU too: a few µs per delivery.
    const sampler = sampleActivity(context.db.database, {
      everyMs: SAMPLE_EVERY_MS,
      maxSamples: Math.ceil((deliveryDeadline(deliveries) - now()) / SAMPLE_EVERY_MS),
    });
    let delivered: Delivered;
    let activity: ActivitySummary;
    let before: ReturnType<typeof cpu>;
    let sessionsBefore: BackendCpu;
    try {
      await enqueue(tag, events);
      // Read once the batch committed: the insert is the publisher's work, not the lane's.
      before = cpu();
      sessionsBefore = await databaseBackendsCpu(context.db.database);
      delivered = await drained("measured", deliveries, warmUp + deliveries);
    } finally {
      activity = await sampler.stop();
    }
    const after = cpu();
    const sessionsMs = backendCpuSpentMs(sessionsBefore, await databaseBackendsCpu(context.db.database));
    const perDelivery = (key: keyof typeof after) => ((after[key] - before[key]) * 1_000) / deliveries;

    const ledger = await ledgerSpan(context.db, shape, tag, events);
    const problems = [...ledger.problems, ...arrivalProblems(delivered.arrivals, shape, tag, events)];
    into.problems.push(...problems.map((problem) => `round ${round}: ${problem}`));
    if (!delivered.complete) into.incomplete = true;
    const rate = delivered.complete ? (ledger.succeeded * 1_000) / ledger.spanMs : NaN;
    into.rounds.push(rate);
    into.workerCpuUs.push(perDelivery("workers"));
    into.postgresCpuUs.push(perDelivery("postgres"));
    into.sessionCpuUs.push(postmaster === undefined ? NaN : (sessionsMs * 1_000) / deliveries);
    into.subscriberCpuUs.push(perDelivery("subscriber"));
    into.activity = addActivity(into.activity, activity);
    into.lockWaitShares.push(activity.lockWaiting / activity.active);
    context.progress(
      `${label}: ${rate.toFixed(0)} deliveries/s, ${((100 * activity.lockWaiting) / activity.active).toFixed(1)} % ` +
        `of active sessions waiting on a lock (${activity.samples} samples)` +
        (problems.length ? `; ${problems.join("; ")}` : ""),
    );
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
  // Read once the workers exited: a backend's counts land when it ends.
  const drainedInAll = (into.workers + 1) * deliveries;
  into.transactionsPerDelivery.push(((await context.db.transactions()) - transactionsBefore) / drainedInAll);
}

/** `count` lane workers started side by side; when one fails to start, the others are stopped before it throws. */
async function startWorkers(context: BenchContext, count: number, round: number): Promise<ProductProcess[]> {
  const started = await Promise.allSettled(
    Array.from({ length: count }, (_, i) =>
      startWorker(context.product, { name: `scale-out-${count}-workers-round-${round}-${i + 1}` }),
    ),
  );
  const workers = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const failed = started.find((s) => s.status === "rejected");
  if (!failed) return workers;
  await Promise.all(workers.map((worker) => worker.stop()));
  throw failed.reason;
}
