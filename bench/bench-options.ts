import { parseArgs } from "node:util";

export const SCENARIOS = [
  "publisher",
  "end-to-end",
  "fan-out",
  "throughput",
  "backlog",
  "fairness",
  "scale-out",
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** How big each scenario is; `--quick` shrinks everything to fit a CI smoke run. */
export interface BenchSizes {
  publisher: { rounds: number; warmupSeconds: number; seconds: number; connections: number };
  endToEnd: { warmup: number; light: number; lightRate: number; events: number; connections: number };
  fanOut: { webhooks: number };
  throughput: { deliveries: number; rounds: number };
  /** `starts` rounds of one worker started from the bundle and one from source, then the backlog of `dispatches`. */
  backlog: { starts: number; dispatches: number };
  /**
   * Healthy webhooks' light load (`events` at `rate` per second after `warmup`), alone and beside
   * `slowWebhooks` answering after `slowMs`, each with `backlogPerSlowWebhook` dispatches queued.
   * One slow webhook is SPEC's case; more than the origin cap over the per-webhook cap (32 / 16)
   * fill the shared origin's slots and starve its healthy neighbour (see docs/benchmarks.md).
   */
  fairness: {
    warmup: number;
    events: number;
    rate: number;
    slowWebhooks: number;
    slowMs: number;
    backlogPerSlowWebhook: number;
  };
  /**
   * `events` route jobs (each heard by 8 webhooks) drained by 1 and by 4 workers in each of `rounds`, after an
   * unmeasured batch of `events` per worker.
   */
  scaleOut: { events: number; rounds: number };
  /** POSTs in flight per worker (the lane's WEBHOOK_CONCURRENCY, the peers', the ceiling's). */
  concurrency: number;
  /** Keep-alive sockets to the subscriber (WEBHOOK_CONNECTIONS_PER_ORIGIN, and the same for the others). */
  connections: number;
}

const FULL: BenchSizes = {
  publisher: { rounds: 3, warmupSeconds: 1, seconds: 5, connections: 32 },
  endToEnd: { warmup: 500, light: 1_000, lightRate: 200, events: 20_000, connections: 32 },
  fanOut: { webhooks: 10_000 },
  throughput: { deliveries: 10_000, rounds: 4 },
  backlog: { starts: 5, dispatches: 100_000 },
  fairness: { warmup: 50, events: 1_000, rate: 100, slowWebhooks: 1, slowMs: 3_000, backlogPerSlowWebhook: 2_000 },
  scaleOut: { events: 2_400, rounds: 3 },
  concurrency: 200,
  connections: 16,
};

const QUICK: BenchSizes = {
  publisher: { rounds: 1, warmupSeconds: 0.3, seconds: 1, connections: 32 },
  endToEnd: { warmup: 50, light: 100, lightRate: 200, events: 1_000, connections: 32 },
  fanOut: { webhooks: 1_000 },
  throughput: { deliveries: 1_000, rounds: 1 },
  backlog: { starts: 2, dispatches: 5_000 },
  fairness: { warmup: 20, events: 100, rate: 50, slowWebhooks: 1, slowMs: 2_000, backlogPerSlowWebhook: 200 },
  scaleOut: { events: 160, rounds: 1 },
  concurrency: 200,
  connections: 16,
};

export interface BenchOptions {
  quick: boolean;
  /** Runs every product process (API, lane workers) under --cpu-prof and summarises the profiles; alone, only end to end. */
  profile: boolean;
  /** `synchronous_commit = off` on the throwaway database: shows what the disk's flush latency costs. */
  asyncCommit: boolean;
  /** The throughput scenario also runs the lane with metrics and logs off, side by side: what observability costs. */
  observabilityCost: boolean;
  scenarios: readonly ScenarioName[];
  /** A server where the benchmark may create and drop a database. */
  adminUrl: string;
  redisUrl: string;
  sizes: BenchSizes;
}

export const USAGE = `usage: npm run bench -- [--quick] [--profile] [--async-commit] [--observability-cost] [--only ${SCENARIOS.join(",")}]
  BENCH_DATABASE_URL  admin URL of the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/postgres)
  BENCH_REDIS_URL     Redis for the BullMQ peer (default redis://127.0.0.1:6379)`;

/** Parses the command line; throws with the usage on anything it does not know. */
export function parseBenchOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: "boolean", default: false },
      profile: { type: "boolean", default: false },
      "async-commit": { type: "boolean", default: false },
      "observability-cost": { type: "boolean", default: false },
      only: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) throw new Error(USAGE);
  const only = values.only?.split(",").map((s) => s.trim());
  for (const name of only ?? []) {
    if (!(SCENARIOS as readonly string[]).includes(name)) throw new Error(`unknown scenario ${name}\n${USAGE}`);
  }
  // `npm run bench --quick` (without `--`) reaches us only as npm's own config variable.
  const quick = values.quick || env.npm_config_quick === "true";
  return {
    quick,
    profile: values.profile,
    asyncCommit: values["async-commit"],
    observabilityCost: values["observability-cost"],
    scenarios: (only as ScenarioName[] | undefined) ?? (values.profile ? ["end-to-end"] : SCENARIOS),
    adminUrl: env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    redisUrl: env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379",
    sizes: quick ? QUICK : FULL,
  };
}
