import { existsSync, readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { z } from "zod";
import { BREAKER, RETRY } from "../webhook/outbound/webhook-retry-policy.ts";
import { parseByteSize } from "./byte-size.ts";
import { parseBackoff, parseDuration, parseRetrySchedule } from "./duration.ts";
import {
  DEVELOPMENT_JWT_SECRET,
  DEVELOPMENT_SECRET_KEY,
  isDevelopmentJwtSecret,
  isDevelopmentSecretKey,
  secretTextProblem,
} from "./shared-secrets.ts";

export { DEVELOPMENT_JWT_SECRET, DEVELOPMENT_SECRET_KEY } from "./shared-secrets.ts";

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

/** A shared secret: refused, saying why, when whitespace or a control character clings to it (`secretTextProblem`). */
const secret = () =>
  z.string().check((ctx) => {
    const problem = secretTextProblem(ctx.value);
    if (problem) ctx.issues.push({ code: "custom", message: problem, input: ctx.value, continue: false });
  });

/** A secret sent as `Authorization: Bearer <secret>`: a header carries printable ASCII only. */
const bearerSecret = () =>
  secret()
    .regex(/^[\x20-\x7e]*$/, "must be printable ASCII: it is sent in an Authorization header")
    .min(16, "must be at least 16 characters");

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
  /** Unset: production rules with a DATABASE_URL, the local quickstart (development rules, loopback) without one. */
  NODE_ENV: z.enum(["development", "production", "test"]).optional(),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).optional(),
  HTTP_BODY_LIMIT: parsedText("1mb", parseByteSize).pipe(z.number().int().min(1_024, "must be at least 1kb")),
  HTTP_HEADERS_TIMEOUT: parsedText("10s", parseDuration).pipe(
    z.number().int().min(1_000, "must be at least 1s").max(600_000, "must be at most 10m"),
  ),
  HTTP_REQUEST_TIMEOUT: parsedText("30s", parseDuration).pipe(
    z.number().int().min(1_000, "must be at least 1s").max(3_600_000, "must be at most 1h"),
  ),
  HTTP_KEEP_ALIVE_TIMEOUT: parsedText("5s", parseDuration).pipe(
    z.number().int().min(0).max(600_000, "must be at most 10m"),
  ),
  HTTP_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1_000_000).default(4_096),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
    .optional(),
  PGLITE_DATA_DIR: z.string().default(".hooklane/pglite"),
  ENABLE_API_EVENT_QUEUE: flag(true),
  /** `neon` speaks to Neon over WebSockets (serverless); chosen by default for `*.neon.tech` URLs. */
  DATABASE_DRIVER: z.enum(["pg", "neon"]).optional(),
  /** Connections each process (each function instance on Vercel) may open to DATABASE_URL at once. */
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(1_000).default(10),
  /** Default: vercel on Vercel, postgres elsewhere (see platformRules). */
  WEBHOOK_QUEUE_DRIVER: z.enum(["postgres", "vercel"]).optional(),
  CRON_SECRET: bearerSecret().optional(),
  WEBHOOK_RETRY_SCHEDULE: parsedText(RETRY.defaultSchedule, parseRetrySchedule),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(1).max(60_000).default(10_000),
  WEBHOOK_ALLOWED_HOSTS: list,
  WEBHOOK_BRAND: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9-]{0,31}$/, "must be a header-safe word, e.g. Hooklane")
    .default("Hooklane"),
  /** Whether a new account's endpoints must consent before anything is sent to them; unset: on in production. */
  WEBHOOK_ENDPOINT_CONSENT: z
    .enum(["true", "false", "1", "0", ""])
    .optional()
    .transform((v) => (v === undefined || v === "" ? undefined : v === "true" || v === "1")),
  /** The sender's name in the consent request (`WebHook-Request-Origin`), which an endpoint allows by name. */
  WEBHOOK_CONSENT_ORIGIN: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$/, "must be a host name, e.g. webhooks.example.com")
    .optional(),
  WEBHOOK_SECRET_KEY: secret()
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
  AUTH_JWT_SECRET: secret().min(32, "must be at least 32 characters").optional(),
  AUTH_JWKS_URL: z.url({ protocol: /^https?$/ }).optional(),
  AUTH_JWT_ISSUER: z.string().min(1).optional(),
  AUTH_JWT_AUDIENCE: z.string().min(1).optional(),
  AUTH_JWT_MAX_LIFETIME: parsedText("24h", parseDuration).pipe(z.number().int().min(60_000, "must be at least 1m")),
  HOOKLANE_LANE: z.enum(["on", "off"]).default("on"),
  RUNTIME_OUTBOUND_ENABLED: flag(true),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, "must be an smtp:// or smtps:// URL")
    .optional(),
  SMTP_FROM: z.string().min(3).default("hooklane <webhooks@localhost>"),
  OPS_EMAIL: z.email().optional(),
  WEBHOOK_NOTIFY_WINDOW: parsedText("1h", parseDuration).pipe(z.number().min(1_000, "must be at least 1s")),
  WEBHOOK_RETENTION: parsedText("30d", parseDuration).pipe(z.number().min(60_000, "must be at least 1m")),
  WEBHOOK_DISABLE_AFTER: parsedText("7d", parseDuration),
  WEBHOOK_QUOTA_WEBHOOKS: z.coerce.number().int().min(1).max(1_000_000).default(500),
  WEBHOOK_QUOTA_TEST_EVENTS: z.coerce.number().int().min(1).max(1_000_000).default(100),
  WEBHOOK_QUOTA_RECOVERIES: z.coerce.number().int().min(1).max(1_000).default(3),
  WEBHOOK_QUOTA_LISTEN_SESSIONS: z.coerce.number().int().min(1).max(1_000).default(5),
  WEBHOOK_QUOTA_LISTEN_STREAMS: z.coerce.number().int().min(1).max(1_000).default(5),
  API_RATE_LIMIT: flag(true),
  API_RATE_LIMIT_PER_SUBJECT: z.coerce.number().min(0.01).max(1_000_000).default(50),
  API_RATE_LIMIT_PER_SUBJECT_BURST: z.coerce.number().int().min(1).max(1_000_000).default(100),
  API_RATE_LIMIT_PER_ACCOUNT: z.coerce.number().min(0.01).max(1_000_000).default(200),
  API_RATE_LIMIT_PER_ACCOUNT_BURST: z.coerce.number().int().min(1).max(1_000_000).default(400),
  WEBHOOK_BREAKER_THRESHOLD: z.coerce.number().int().min(1).max(1_000).default(BREAKER.threshold),
  WEBHOOK_BREAKER_OPEN: parsedText(BREAKER.open, parseBackoff),
  WEBHOOK_LISTEN_TTL: parsedText("60s", parseDuration).pipe(
    z.number().min(1_000, "must be at least 1s").max(3_600_000, "must be at most 1h"),
  ),
  CATALOGUE_AUTO_SYNC: z.enum(["true", "false", "1", "0"]).optional(),
  METRICS_ENABLED: flag(true),
  METRICS_TOKEN: bearerSecret().optional(),
  /** Production only: serve /metrics without a token (e.g. on a private network). */
  METRICS_PUBLIC: flag(false),
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  READY_MAX_LAG: parsedText("5m", parseDuration),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).optional(),
  LOG_FORMAT: z.enum(["json", "pretty"]).optional(),
  /** OpenTelemetry: traces go over OTLP/HTTP to `<endpoint>/v1/traces`, or to the traces endpoint as given. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  OTEL_SERVICE_NAME: z.string().min(1).max(200).optional(),
  OTEL_SDK_DISABLED: flag(false),

  // The platform, as Vercel describes it to every build and function.
  /** `1` on Vercel (builds and functions). */
  VERCEL: z.string().optional(),
  /** The deployment's environment on Vercel. */
  VERCEL_ENV: z.enum(["production", "preview", "development"]).optional(),
  /** The direct (unpooled) connection string migrations run over; Neon's Vercel integration sets it. */
  DATABASE_URL_UNPOOLED: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
    .optional(),
});

/**
 * What the platform implies. Production rules hold on every deployment
 * reachable from the internet (Vercel's production and preview), whatever
 * NODE_ENV says. On Vercel the lane is the queue-triggered function, so the
 * vercel driver is required (the postgres queue would have no consumer), a
 * server database is required (a function has no disk to keep PGlite on),
 * and production needs the cron's secret (without it the sweeper is refused
 * and nothing re-sends what the queue lost).
 */
function platformRules(env: z.output<typeof envVariables>, ctx: z.RefinementCtx) {
  const onVercel = env.VERCEL === "1";
  const deployed = env.VERCEL_ENV === "production" || env.VERCEL_ENV === "preview";
  const queueDriver = env.WEBHOOK_QUEUE_DRIVER ?? (onVercel ? "vercel" : "postgres");
  if (onVercel && queueDriver !== "vercel") {
    ctx.addIssue({
      code: "custom",
      path: ["WEBHOOK_QUEUE_DRIVER"],
      message: "must be vercel on Vercel (VERCEL=1): nothing would consume the postgres queue there",
    });
  }
  if (onVercel && !env.DATABASE_URL) {
    ctx.addIssue({ code: "custom", path: ["DATABASE_URL"], message: "is required on Vercel (VERCEL=1)" });
  }
  if (onVercel && env.VERCEL_ENV === "production" && !env.CRON_SECRET) {
    ctx.addIssue({
      code: "custom",
      path: ["CRON_SECRET"],
      message: "is required on Vercel production: the sweeper cron sends it",
    });
  }
  return {
    onVercel,
    /** A deployment reachable from the internet: production rules, whatever NODE_ENV says. */
    deployed,
    queueDriver,
  };
}

const databaseVariables = envVariables.pick({
  DATABASE_URL: true,
  DATABASE_URL_UNPOOLED: true,
  DATABASE_DRIVER: true,
  DATABASE_POOL_MAX: true,
  PGLITE_DATA_DIR: true,
});

/** Where the database is and how to speak to it: the part of the configuration an operator script needs. */
function databaseSettings(env: z.output<typeof databaseVariables>) {
  return {
    databaseUrl: env.DATABASE_URL,
    /** Where migrations run: the direct URL, not the pooler. */
    migrationDatabaseUrl: env.DATABASE_URL_UNPOOLED ?? env.DATABASE_URL,
    databaseDriver:
      env.DATABASE_DRIVER ?? (env.DATABASE_URL && /\.neon\.tech[:/]/.test(env.DATABASE_URL) ? "neon" : "pg"),
    pgliteDataDir: env.PGLITE_DATA_DIR,
    databasePoolMax: env.DATABASE_POOL_MAX,
  };
}

/**
 * Which rules apply. NODE_ENV decides when it is set. Unset, a process with a
 * DATABASE_URL is a deployment (production rules), and one without is the
 * embedded quickstart (`npm start` on a laptop: development rules, loopback).
 */
function resolveMode(env: {
  NODE_ENV?: "development" | "production" | "test" | undefined;
  DATABASE_URL?: string | undefined;
}) {
  return env.NODE_ENV ?? (env.DATABASE_URL ? "production" : "development");
}

const schema = envVariables.transform((env, ctx) => {
  const platform = platformRules(env, ctx);
  if (env.HTTP_HEADERS_TIMEOUT > env.HTTP_REQUEST_TIMEOUT) {
    ctx.addIssue({
      code: "custom",
      path: ["HTTP_HEADERS_TIMEOUT"],
      message: "must not be longer than HTTP_REQUEST_TIMEOUT: the headers are part of the request",
    });
  }
  const mode = platform.deployed ? "production" : resolveMode(env);
  const production = mode === "production";
  const refuse = (path: string, message: string) => {
    // Say why production rules apply when nobody asked for them by name.
    const why = env.NODE_ENV
      ? ""
      : " (NODE_ENV is unset and DATABASE_URL is set, so production rules apply; NODE_ENV=development for a development database)";
    ctx.addIssue({ code: "custom", path: [path], message: `${message}${why}` });
  };
  if (production) {
    if (!env.WEBHOOK_SECRET_KEY) refuse("WEBHOOK_SECRET_KEY", "is required outside development");
    if (!env.AUTH_JWT_SECRET && !env.AUTH_JWKS_URL) {
      refuse("AUTH_JWKS_URL", "AUTH_JWKS_URL or AUTH_JWT_SECRET is required outside development");
    }
    // The development values are published in this repository: anyone could mint tokens or unseal secrets.
    // Compared as the keys they make, so no other spelling of them gets through.
    if (env.WEBHOOK_SECRET_KEY && isDevelopmentSecretKey(env.WEBHOOK_SECRET_KEY)) {
      refuse("WEBHOOK_SECRET_KEY", "is the published development key (it decodes to its 32 bytes); generate your own");
    }
    if (env.AUTH_JWT_SECRET && isDevelopmentJwtSecret(env.AUTH_JWT_SECRET)) {
      refuse("AUTH_JWT_SECRET", "is the published development secret (it signs as that key); generate your own");
    }
    // Metrics name this deployment's traffic and failures: not for anyone who finds the URL.
    if (env.METRICS_ENABLED && !env.METRICS_TOKEN && !env.METRICS_PUBLIC) {
      refuse(
        "METRICS_TOKEN",
        "is required outside development while metrics are on: scrapers send Authorization: Bearer <token> (METRICS_PUBLIC=true serves /metrics to anyone who can reach it; METRICS_ENABLED=false turns metrics off)",
      );
    }
    if (env.AUTH_JWKS_URL) {
      if (!env.AUTH_JWKS_URL.startsWith("https:")) refuse("AUTH_JWKS_URL", "must be an https: URL outside development");
      // One identity provider signs tokens for many applications: only ours may be accepted.
      if (!env.AUTH_JWT_ISSUER) refuse("AUTH_JWT_ISSUER", "is required with AUTH_JWKS_URL outside development");
      if (!env.AUTH_JWT_AUDIENCE) refuse("AUTH_JWT_AUDIENCE", "is required with AUTH_JWKS_URL outside development");
    }
  }
  // Outside production fixed development values keep a laptop's data readable
  // across restarts and let `npm run token` mint tokens the server accepts.
  const secretKey = env.WEBHOOK_SECRET_KEY ?? DEVELOPMENT_SECRET_KEY;
  const jwtSecret = env.AUTH_JWT_SECRET ?? (production ? undefined : DEVELOPMENT_JWT_SECRET);
  const developmentSecrets = [
    ...(!env.AUTH_JWKS_URL && jwtSecret && isDevelopmentJwtSecret(jwtSecret) ? ["AUTH_JWT_SECRET"] : []),
    ...(isDevelopmentSecretKey(secretKey) ? ["WEBHOOK_SECRET_KEY"] : []),
  ];
  return {
    mode,
    production,
    /** The published development values in use, by variable: start-up warns about each (never in production). */
    developmentSecrets,
    // Development serves this machine only; a deployment listens on every interface unless told otherwise.
    // A Vercel function binds nothing: the platform routes requests to it under the deployment's own names.
    host: env.HOST ?? (production || env.VERCEL === "1" ? undefined : "127.0.0.1"),
    bodyLimitBytes: env.HTTP_BODY_LIMIT,
    /** How long a client may take, and how many may be connected at once, on each HTTP port of the process. */
    http: {
      headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT,
      requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT,
      keepAliveTimeoutMs: env.HTTP_KEEP_ALIVE_TIMEOUT,
      maxConnections: env.HTTP_MAX_CONNECTIONS,
    },
    port: env.PORT,
    ...databaseSettings(env),
    publishEnabled: env.ENABLE_API_EVENT_QUEUE,
    queueDriver: platform.queueDriver,
    onVercel: platform.onVercel,
    cronSecret: env.CRON_SECRET,
    retrySchedule: env.WEBHOOK_RETRY_SCHEDULE,
    timeoutMs: env.WEBHOOK_TIMEOUT_MS,
    allowedHosts: env.WEBHOOK_ALLOWED_HOSTS ?? (production ? [] : ["localhost"]),
    brand: env.WEBHOOK_BRAND,
    /** Endpoint consent: required of new accounts by default, and the name the request gives its sender. */
    consent: {
      newAccounts: env.WEBHOOK_ENDPOINT_CONSENT ?? production,
      origin: (env.WEBHOOK_CONSENT_ORIGIN ?? env.WEBHOOK_BRAND).toLowerCase(),
    },
    secretKey,
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
    jwtSecret,
    jwksUrl: env.AUTH_JWKS_URL,
    jwtIssuer: env.AUTH_JWT_ISSUER,
    jwtAudience: env.AUTH_JWT_AUDIENCE,
    jwtMaxLifetimeMs: env.AUTH_JWT_MAX_LIFETIME,
    laneInProcess: env.HOOKLANE_LANE === "on",
    outboundEnabled: env.RUNTIME_OUTBOUND_ENABLED,
    smtpUrl: env.SMTP_URL,
    smtpFrom: env.SMTP_FROM,
    opsEmail: env.OPS_EMAIL,
    notifyWindowMs: env.WEBHOOK_NOTIFY_WINDOW,
    retentionMs: env.WEBHOOK_RETENTION,
    disableAfterMs: env.WEBHOOK_DISABLE_AFTER,
    quotas: {
      webhooks: env.WEBHOOK_QUOTA_WEBHOOKS,
      testEventsPerHour: env.WEBHOOK_QUOTA_TEST_EVENTS,
      openRecoveries: env.WEBHOOK_QUOTA_RECOVERIES,
      listenSessions: env.WEBHOOK_QUOTA_LISTEN_SESSIONS,
      listenStreams: env.WEBHOOK_QUOTA_LISTEN_STREAMS,
    },
    /** Requests per second and burst, per token subject and per account, in each process; undefined: off. */
    rateLimit: env.API_RATE_LIMIT
      ? {
          subject: { perSecond: env.API_RATE_LIMIT_PER_SUBJECT, burst: env.API_RATE_LIMIT_PER_SUBJECT_BURST },
          account: { perSecond: env.API_RATE_LIMIT_PER_ACCOUNT, burst: env.API_RATE_LIMIT_PER_ACCOUNT_BURST },
        }
      : undefined,
    breaker: {
      threshold: env.WEBHOOK_BREAKER_THRESHOLD,
      openBaseMs: env.WEBHOOK_BREAKER_OPEN.baseMs,
      openMaxMs: env.WEBHOOK_BREAKER_OPEN.maxMs,
      connectionClasses: BREAKER.connectionClasses,
    },
    listenTtlMs: env.WEBHOOK_LISTEN_TTL,
    metricsEnabled: env.METRICS_ENABLED,
    metricsToken: env.METRICS_TOKEN,
    /** `/metrics` answers without a token: none is set, and development rules or METRICS_PUBLIC=true apply. */
    metricsPublic: !env.METRICS_TOKEN && (!production || env.METRICS_PUBLIC),
    metricsPort: env.METRICS_PORT,
    readyMaxLagMs: env.READY_MAX_LAG,
    // A laptop syncs the catalogue on start; production waits for ops to run the sync.
    // Tests read their own captured lines; a laptop gets readable lines, production JSON.
    logLevel: env.LOG_LEVEL ?? (mode === "test" ? "silent" : "info"),
    logFormat: env.LOG_FORMAT ?? (production ? "json" : "pretty"),
    /** Where traces go (OTLP/HTTP), and as which service; undefined: no tracing, and no cost. */
    tracing:
      (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT) && !env.OTEL_SDK_DISABLED
        ? {
            url:
              env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
              `${env.OTEL_EXPORTER_OTLP_ENDPOINT!.replace(/\/+$/, "")}/v1/traces`,
            serviceName: env.OTEL_SERVICE_NAME ?? "hooklane",
          }
        : undefined,
    catalogueAutoSync:
      env.CATALOGUE_AUTO_SYNC === undefined
        ? !production
        : env.CATALOGUE_AUTO_SYNC === "true" || env.CATALOGUE_AUTO_SYNC === "1",
  };
});

export type Config = z.output<typeof schema>;

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

export type DatabaseConfig = ReturnType<typeof databaseSettings>;

/**
 * Only the database's variables (`DATABASE_URL`, `DATABASE_URL_UNPOOLED`,
 * `DATABASE_DRIVER`, `PGLITE_DATA_DIR`), from the environment and a `.env`
 * file as `config()` reads them: what `db:migrate` and `catalogue:sync`
 * need, so an operator runs them with the database URL alone, never the
 * server's secrets. Throws ConfigError naming a malformed one.
 */
export function databaseConfig(
  env: Record<string, string | undefined> = { ...readDotEnv(".env"), ...process.env },
): DatabaseConfig {
  const parsed = databaseVariables.safeParse(env);
  if (parsed.success) return databaseSettings(parsed.data);
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
