import { DELIVER_TOPIC, ROUTE_TOPIC } from "../../outbound/webhook-out-queue-registrations.ts";

/**
 * The deployment's functions. The lane is two functions, one per topic, so
 * routing never waits behind deliveries and each has its own concurrency;
 * both run the same handler (`handleLaneRequest`) with the same timings.
 * `vercel.ts` builds the project's configuration from these when the
 * deployment is built, and `npm run vercel:check` checks the built output
 * against them.
 */
export const VERCEL_FUNCTIONS = {
  api: { path: "api/index.ts", maxDurationSeconds: 30 },
  /** `webhook-out-route`: one message per invocation. [cli trigger `maxConcurrency`] */
  route: { path: "api/webhook-out-route.ts", topic: ROUTE_TOPIC, maxDurationSeconds: 60 },
  /** `webhook-out-deliver`: one message per invocation, which goes on with its webhook's next due dispatches. */
  deliver: { path: "api/webhook-out-deliver.ts", topic: DELIVER_TOPIC, maxDurationSeconds: 60 },
  /** Run by the cron every minute. */
  sweeper: { path: "api/cron/webhook-sweeper.ts", maxDurationSeconds: 60 },
} as const;

/** The lane's functions: their `maxDuration` is the lane's (a message's visibility and a dispatch's lease). */
export const LANE_MAX_DURATION_SECONDS = VERCEL_FUNCTIONS.deliver.maxDurationSeconds;

/** The sweeper's path, which the cron calls. */
export const SWEEPER_PATH = "/api/cron/webhook-sweeper";

/**
 * Invocations of each lane function at once, at most (its queue trigger's
 * `maxConcurrency`), read from the build's environment. Deliver slots bound
 * deliveries in flight; a slow subscriber holds one for its whole attempt.
 */
export const LANE_CONCURRENCY = {
  route: { variable: "WEBHOOK_ROUTE_MAX_CONCURRENCY", default: 10 },
  deliver: { variable: "WEBHOOK_DELIVER_MAX_CONCURRENCY", default: 50 },
} as const;

/** The most a trigger's concurrency may be set to here: beyond it, ask whether the database can take it. */
export const MAX_LANE_CONCURRENCY = 10_000;

export type LaneConcurrency = Record<keyof typeof LANE_CONCURRENCY, number>;

/** The lane's concurrency as `env` sets it; throws an Error naming the variable at fault. */
export function laneConcurrency(env: Readonly<Record<string, string | undefined>>): LaneConcurrency {
  const read = (which: keyof typeof LANE_CONCURRENCY): number => {
    const { variable, default: fallback } = LANE_CONCURRENCY[which];
    const raw = env[variable]?.trim();
    if (!raw) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < 1 || value > MAX_LANE_CONCURRENCY) {
      throw new Error(`${variable}: "${raw}" is not a whole number from 1 to ${MAX_LANE_CONCURRENCY}`);
    }
    return value;
  };
  return { route: read("route"), deliver: read("deliver") };
}

/** A queue trigger as the project configuration declares it. */
export interface QueueTrigger {
  type: "queue/v2beta";
  topic: string;
  retryAfterSeconds: number;
  maxConcurrency: number;
}

/** A function's settings as the project configuration declares them. */
export interface FunctionSettings {
  maxDuration: number;
  experimentalTriggers?: QueueTrigger[];
}

/** A message whose handling threw without a directive is pushed again after this long. */
const TRIGGER_RETRY_AFTER_SECONDS = 10;

/**
 * The project's configuration (what `vercel.json` would hold), for `env` at
 * build time: the API function every path is rewritten to, the lane's two
 * queue-triggered functions with their concurrency, the sweeper and its cron,
 * and only `public/` served as static files.
 */
export function vercelProjectConfig(env: Readonly<Record<string, string | undefined>>): {
  $schema: string;
  framework: null;
  buildCommand: string;
  outputDirectory: string;
  rewrites: Array<{ source: string; destination: string }>;
  functions: Record<string, FunctionSettings>;
  crons: Array<{ path: string; schedule: string }>;
} {
  const concurrency = laneConcurrency(env);
  const trigger = (topic: string, maxConcurrency: number): QueueTrigger => ({
    type: "queue/v2beta",
    topic,
    retryAfterSeconds: TRIGGER_RETRY_AFTER_SECONDS,
    maxConcurrency,
  });
  const { api, route, deliver, sweeper } = VERCEL_FUNCTIONS;
  return {
    $schema: "https://openapi.vercel.sh/vercel.json",
    framework: null,
    buildCommand: "npm run vercel-build",
    outputDirectory: "public",
    rewrites: [{ source: "/((?!api/).*)", destination: "/api" }],
    functions: {
      [api.path]: { maxDuration: api.maxDurationSeconds },
      [route.path]: {
        maxDuration: route.maxDurationSeconds,
        experimentalTriggers: [trigger(route.topic, concurrency.route)],
      },
      [deliver.path]: {
        maxDuration: deliver.maxDurationSeconds,
        experimentalTriggers: [trigger(deliver.topic, concurrency.deliver)],
      },
      [sweeper.path]: { maxDuration: sweeper.maxDurationSeconds },
    },
    crons: [{ path: SWEEPER_PATH, schedule: "* * * * *" }],
  };
}
