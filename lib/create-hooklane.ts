import { createTokenVerifier } from "./auth/jwt.ts";
import { ConfigError, type Config } from "./config/env.ts";
import { openDatabase, type Database } from "./db/client.ts";
import { createLogger, type Logger } from "./log/logger.ts";
import type { Hooklane } from "./hooklane.ts";
import { createSmtpMailer } from "./mail/smtp-mailer.ts";
import { createMetrics } from "./metrics/metrics.ts";
import { autoSyncCatalogue } from "./webhook/catalogue/catalogue-auto-sync.ts";
import { createSender, type HttpSender } from "./webhook/outbound/webhook-http-sender.ts";
import type { DeliverDeps } from "./webhook/outbound/webhook-out-deliver.handler.ts";
import { createApiEventPublisher } from "./webhook/outbound/webhook-out-route.publisher.ts";
import { createSecretSealer } from "./webhook/outbound/webhook-secret-seal.ts";
import { createSigningKeyStore } from "./webhook/outbound/webhook-signing-keys.ts";
import { createSubscriptionCache } from "./webhook/outbound/webhook-subscription-cache.ts";
import { startPostgresLane, type Lane } from "./webhook/transport/postgres/postgres-lane.ts";
import { createPostgresTransport } from "./webhook/transport/postgres/postgres-transport.ts";
import { startSweeper, SWEEP_INTERVAL_MS } from "./webhook/sweeper/webhook-sweeper.ts";
import { vercelLaneTimings } from "./webhook/transport/vercel/vercel-queue-limits.ts";
import type { VercelQueue } from "./webhook/transport/vercel/vercel-transport.ts";

/**
 * Builds the product's services from a configuration: opens the database
 * unless one is given (migrating it; on Vercel, where migrating is a deploy
 * step, only verifying its schema — SchemaBehindError when it is behind),
 * syncs the catalogue into it when `CATALOGUE_AUTO_SYNC` is on, and wires
 * transport, publisher and auth. With the vercel driver the lane's timings
 * are checked first (a ConfigError names the variable at fault). Vercel's
 * transport and helpers are imported only when configured, so a lane worker
 * or `npm start` never loads them.
 * `outboxForwardGraceMs` shortens how long the Vercel sweep leaves a fresh
 * outbox row to its forward (tests).
 */
export async function createHooklane(
  config: Config,
  options: { database?: Database; queue?: VercelQueue; logger?: Logger; outboxForwardGraceMs?: number } = {},
): Promise<Hooklane> {
  const logger = options.logger ?? createLogger({ level: config.logLevel, format: config.logFormat });
  if (config.developmentSecrets.length > 0) {
    logger.warn(
      `${config.mode} mode with the published development ${config.developmentSecrets.join(" and ")}: anyone can mint an admin token for this server or read its webhook secrets. Keep it on this machine; to deploy, set NODE_ENV=production with your own secrets (see .env.example).`,
    );
  }
  if (config.queueDriver === "vercel") vercelLaneTimings(config);
  const database =
    options.database ??
    (await openDatabase({
      ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
      driver: config.databaseDriver,
      poolMax: config.databasePoolMax,
      pgliteDataDir: config.pgliteDataDir,
      logger,
      schema: config.onVercel ? "verify" : "apply",
      vercelFunction: config.onVercel,
    }));
  if (config.catalogueAutoSync) await autoSyncCatalogue(database, logger);
  let transport;
  let waitUntil: ((promise: Promise<unknown>) => void) | undefined;
  if (config.queueDriver === "vercel") {
    const [{ createQueueClient, createVercelTransport }, vercelFunctions] = await Promise.all([
      import("./webhook/transport/vercel/vercel-transport.ts"),
      import("@vercel/functions"),
    ]);
    // A forward to the queue outlives the response only when the function is told to wait for it.
    waitUntil = vercelFunctions.waitUntil;
    transport = createVercelTransport(database, options.queue ?? createQueueClient(), logger, {
      ...(options.outboxForwardGraceMs === undefined ? {} : { forwardGraceMs: options.outboxForwardGraceMs }),
    });
  } else {
    transport = createPostgresTransport(database);
  }
  // The SDK loads only when traces go somewhere.
  const tracing = config.tracing
    ? (await import("./observability/tracing-sdk.ts")).createTracing(config.tracing)
    : undefined;
  const subscriptions = createSubscriptionCache(database, { logger });
  const publisher = createApiEventPublisher({
    enabled: config.publishEnabled,
    livemode: config.livemode,
    subscriptions,
    transport,
    logger,
    tracing,
    ...(waitUntil ? { waitUntil } : {}),
  });
  return {
    config,
    logger,
    database,
    transport,
    subscriptions,
    publisher,
    secrets: createSecretSealer(config.secretKey),
    verifyToken: createTokenVerifier({
      ...(config.jwtSecret ? { jwtSecret: config.jwtSecret } : {}),
      ...(config.jwksUrl ? { jwksUrl: config.jwksUrl } : {}),
      ...(config.jwtIssuer ? { issuer: config.jwtIssuer } : {}),
      ...(config.jwtAudience ? { audience: config.jwtAudience } : {}),
      maxLifetimeMs: config.jwtMaxLifetimeMs,
    }),
    mailer: config.smtpUrl ? createSmtpMailer({ url: config.smtpUrl, from: config.smtpFrom }) : undefined,
    metrics: config.metricsEnabled ? createMetrics({ database, publisherStats: publisher.stats }) : undefined,
    tracing,
  };
}

/** What the deliver stage needs, the same whichever transport carries the work. */
export function deliverDeps(hooklane: Hooklane, sender: HttpSender): DeliverDeps {
  const { config } = hooklane;
  return {
    brand: config.brand,
    retrySchedule: config.retrySchedule,
    allowedHosts: config.allowedHosts,
    outboundEnabled: config.outboundEnabled,
    sender,
    secrets: hooklane.secrets,
    signingKeys: createSigningKeyStore(hooklane.database, hooklane.secrets),
    tracing: hooklane.tracing,
  };
}

export { createSender };

/**
 * Starts the self-hosted `webhook-out` lane (postgres transport) for these
 * services, with its sweeper (auto-disable, recovery jobs; `sweeperNow`
 * injects its clock). The returned lane's `stop()` drains it. With the vercel
 * transport the lane is a push consumer instead: see `createVercelLane`.
 */
export async function startLane(
  hooklane: Hooklane,
  options: { sender?: HttpSender; workerId?: string; sweeperNow?: () => Date } = {},
): Promise<Lane> {
  const { config, transport } = hooklane;
  if (transport.name !== "postgres") {
    throw new ConfigError(
      "WEBHOOK_QUEUE_DRIVER=vercel: the lane runs as the webhook-out function on Vercel, not in this process",
    );
  }
  const sender = options.sender ?? createSender(config);
  const lane = await startPostgresLane({
    database: hooklane.database,
    transport,
    deliver: deliverDeps(hooklane, sender),
    logger: hooklane.logger,
    batchSize: config.batchSize,
    concurrency: config.concurrency,
    leaseMs: config.leaseMs,
    caps: config.caps,
    breaker: config.breaker,
    mailer: hooklane.mailer,
    metrics: hooklane.metrics?.lane,
    ...(options.workerId ? { workerId: options.workerId } : {}),
  });
  const sweeper = await startSweeper(hooklane, {
    intervalMs: SWEEP_INTERVAL_MS,
    workerId: `${lane.workerId}/sweeper`,
    ...(options.sweeperNow ? { now: options.sweeperNow } : {}),
  });
  return {
    workerId: lane.workerId,
    async stop() {
      await sweeper.stop();
      await lane.stop();
      if (!options.sender) await sender.close();
    },
  };
}
