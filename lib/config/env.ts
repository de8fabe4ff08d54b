import { existsSync, readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { z } from "zod";
import { BREAKER, RETRY } from "../webhook/outbound/webhook-retry-policy.ts";
import { parseBackoff, parseDuration, parseRetrySchedule } from "./duration.ts";

const flag = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", ""])
    .optional()
    .transform((v) => (v === undefined || v === "" ? fallback : v === "true" || v === "1"));

/** A text variable read by `parse` (default `fallback`); the parser's error message names what is wrong. */
const parsedText = <T>(fallback: string, parse: (text: string) => T) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      try {
        return parse(v);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    });

const list = z
  .string()
  .optional()
  .transform((v) =>
    v === undefined
      ? undefined
      : v
          .split(",")
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean),
  );

/** Every variable hooklane reads, with its rule; `.env.example` documents each one. */
export const envVariables = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
    .optional(),
  PGLITE_DATA_DIR: z.string().default(".hooklane/pglite"),
  ENABLE_API_EVENT_QUEUE: flag(true),
  /** `neon` speaks to Neon over WebSockets (serverless); chosen by default for `*.neon.tech` URLs. */
  DATABASE_DRIVER: z.enum(["pg", "neon"]).optional(),
  WEBHOOK_QUEUE_DRIVER: z.enum(["postgres", "vercel"]).default("postgres"),
  CRON_SECRET: z.string().min(16, "must be at least 16 characters").optional(),
  WEBHOOK_RETRY_SCHEDULE: parsedText(RETRY.defaultSchedule, parseRetrySchedule),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(1).max(60_000).default(10_000),
  WEBHOOK_ALLOWED_HOSTS: list,
  WEBHOOK_BRAND: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9-]{0,31}$/, "must be a header-safe word, e.g. Hooklane")
    .default("Hooklane"),
  WEBHOOK_SECRET_KEY: z
    .string()
    .regex(/^[A-Za-z0-9_-]{43}$/, "must be 32 random bytes in base64url (43 characters)")
    .optional(),
  WEBHOOK_LIVEMODE: flag(true),
  WEBHOOK_LEASE_MS: z.coerce.number().int().min(1_000).max(120_000).default(10_000),
  WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK: z.coerce.number().int().min(1).max(10_000).default(16),
  WEBHOOK_MAX_IN_FLIGHT_PER_ORIGIN: z.coerce.number().int().min(1).max(10_000).default(32),
  WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT: z.coerce.number().int().min(1).max(100_000).default(100),
  WEBHOOK_BATCH_SIZE: z.coerce.number().int().min(1).max(1_000).default(100),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).optional(),
  WEBHOOK_CONNECTIONS_PER_ORIGIN: z.coerce.number().int().min(1).max(10_000).optional(),
  AUTH_JWT_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  AUTH_JWKS_URL: z.string().url().optional(),
  HOOKLANE_LANE: z.enum(["on", "off"]).default("on"),
  RUNTIME_OUTBOUND_ENABLED: flag(true),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, "must be an smtp:// or smtps:// URL")
    .optional(),
  SMTP_FROM: z.string().min(3).default("hooklane <webhooks@localhost>"),
  WEBHOOK_DISABLE_AFTER: parsedText("7d", parseDuration),
  WEBHOOK_BREAKER_THRESHOLD: z.coerce.number().int().min(1).max(1_000).default(BREAKER.threshold),
  WEBHOOK_BREAKER_OPEN: parsedText(BREAKER.open, parseBackoff),
  CATALOGUE_AUTO_SYNC: z.enum(["true", "false", "1", "0"]).optional(),
  METRICS_ENABLED: flag(true),
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  READY_MAX_LAG: parsedText("5m", parseDuration),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).optional(),
  LOG_FORMAT: z.enum(["json", "pretty"]).optional(),
});

const schema = envVariables.transform((env, ctx) => {
  const production = env.NODE_ENV === "production";
  if (production && !env.WEBHOOK_SECRET_KEY) {
    ctx.addIssue({ code: "custom", path: ["WEBHOOK_SECRET_KEY"], message: "is required in production" });
  }
  if (production && !env.AUTH_JWT_SECRET && !env.AUTH_JWKS_URL) {
    ctx.addIssue({
      code: "custom",
      path: ["AUTH_JWKS_URL"],
      message: "AUTH_JWKS_URL or AUTH_JWT_SECRET is required in production",
    });
  }
  return {
    production,
    port: env.PORT,
    databaseUrl: env.DATABASE_URL,
    databaseDriver:
      env.DATABASE_DRIVER ?? (env.DATABASE_URL && /\.neon\.tech[:/]/.test(env.DATABASE_URL) ? "neon" : "pg"),
    pgliteDataDir: env.PGLITE_DATA_DIR,
    publishEnabled: env.ENABLE_API_EVENT_QUEUE,
    queueDriver: env.WEBHOOK_QUEUE_DRIVER,
    cronSecret: env.CRON_SECRET,
    retrySchedule: env.WEBHOOK_RETRY_SCHEDULE,
    timeoutMs: env.WEBHOOK_TIMEOUT_MS,
    allowedHosts: env.WEBHOOK_ALLOWED_HOSTS ?? (production ? [] : ["localhost"]),
    brand: env.WEBHOOK_BRAND,
    // Outside production a fixed development key keeps a laptop's data readable
    // across restarts; production refuses to start without its own key.
    secretKey: env.WEBHOOK_SECRET_KEY ?? DEVELOPMENT_SECRET_KEY,
    livemode: env.WEBHOOK_LIVEMODE,
    leaseMs: env.WEBHOOK_LEASE_MS,
    batchSize: env.WEBHOOK_BATCH_SIZE,
    // The embedded database runs on the event loop the POSTs share; fewer in flight keeps their deadlines honest.
    concurrency: env.WEBHOOK_CONCURRENCY ?? (env.DATABASE_URL ? 200 : 32),
    caps: {
      perWebhook: env.WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK,
      perOrigin: env.WEBHOOK_MAX_IN_FLIGHT_PER_ORIGIN,
      perAccount: env.WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT,
    },
    // As many sockets per origin as the lane may have deliveries in flight there, so none waits for a socket.
    connectionsPerOrigin: env.WEBHOOK_CONNECTIONS_PER_ORIGIN ?? env.WEBHOOK_MAX_IN_FLIGHT_PER_ORIGIN,
    jwtSecret: env.AUTH_JWT_SECRET ?? (production ? undefined : DEVELOPMENT_JWT_SECRET),
    jwksUrl: env.AUTH_JWKS_URL,
    laneInProcess: env.HOOKLANE_LANE === "on",
    outboundEnabled: env.RUNTIME_OUTBOUND_ENABLED,
    smtpUrl: env.SMTP_URL,
    smtpFrom: env.SMTP_FROM,
    disableAfterMs: env.WEBHOOK_DISABLE_AFTER,
    breaker: {
      threshold: env.WEBHOOK_BREAKER_THRESHOLD,
      openBaseMs: env.WEBHOOK_BREAKER_OPEN.baseMs,
      openMaxMs: env.WEBHOOK_BREAKER_OPEN.maxMs,
      connectionClasses: BREAKER.connectionClasses,
    },
    metricsEnabled: env.METRICS_ENABLED,
    metricsToken: env.METRICS_TOKEN,
    metricsPort: env.METRICS_PORT,
    readyMaxLagMs: env.READY_MAX_LAG,
    // A laptop syncs the catalogue on start; production waits for ops to run the sync.
    // Tests read their own captured lines; a laptop gets readable lines, production JSON.
    logLevel: env.LOG_LEVEL ?? (env.NODE_ENV === "test" ? "silent" : "info"),
    logFormat: env.LOG_FORMAT ?? (production ? "json" : "pretty"),
    catalogueAutoSync:
      env.CATALOGUE_AUTO_SYNC === undefined
        ? !production
        : env.CATALOGUE_AUTO_SYNC === "true" || env.CATALOGUE_AUTO_SYNC === "1",
  };
});

export type Config = z.output<typeof schema>;

export const DEVELOPMENT_SECRET_KEY = "aG9va2xhbmUtZGV2ZWxvcG1lbnQta2V5LW5vdC1zZWM";
export const DEVELOPMENT_JWT_SECRET = "hooklane-development-jwt-secret-not-for-production";

export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Parses configuration from an environment. Throws ConfigError whose message
 * names every offending variable.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((issue) => `  ${issue.path.join(".") || "env"}: ${issue.message}`);
  throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
}

let cached: Config | undefined;

/**
 * The process's configuration, parsed once on first use: the environment,
 * plus a `.env` file in the working directory for what the environment leaves unset.
 */
export function config(): Config {
  cached ??= loadConfig({ ...readDotEnv(".env"), ...process.env });
  return cached;
}

function readDotEnv(path: string): Record<string, string | undefined> {
  return existsSync(path) ? parseEnv(readFileSync(path, "utf8")) : {};
}
