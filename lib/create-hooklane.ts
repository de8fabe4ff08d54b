import { QueueClient } from "@vercel/queue";
import { createTokenVerifier } from "./auth/jwt.ts";
import { ConfigError, type Config } from "./config/env.ts";
import { openDatabase, type Database } from "./db/client.ts";
import { createLogger, type Logger } from "./log/logger.ts";
import type { Hooklane } from "./hooklane.ts";
import { createSmtpMailer } from "./mail/smtp-mailer.ts";
import { createMetrics } from "./metrics/metrics.ts";
import { autoSyncCatalogue } from "./webhook/catalogue/catalogue-auto-sync.ts";
import { createHttpSender, type HttpSender } from "./webhook/outbound/webhook-http-sender.ts";
import type { DeliverDeps } from "./webhook/outbound/webhook-out-deliver.handler.ts";
import { createApiEventPublisher } from "./webhook/outbound/webhook-out-route.publisher.ts";
import { createSecretSealer } from "./webhook/outbound/webhook-secret-seal.ts";
import { createSubscriptionCache } from "./webhook/outbound/webhook-subscription-cache.ts";
import { startPostgresLane, type Lane } from "./webhook/transport/postgres/postgres-lane.ts";
import { createPostgresTransport } from "./webhook/transport/postgres/postgres-transport.ts";
import { startSweeper, sweepOnce, SWEEP_INTERVAL_MS } from "./webhook/sweeper/webhook-sweeper.ts";
import { createVercelLaneHandler } from "./webhook/transport/vercel/vercel-lane-handler.ts";
import { sweepVercelTransport } from "./webhook/transport/vercel/vercel-sweep.ts";
import { createVercelTransport } from "./webhook/transport/vercel/vercel-transport.ts";

/**
 * Builds the product's services from a configuration: opens (and migrates)
 * the database unless one is given, syncs the catalogue into it when
 * `CATALOGUE_AUTO_SYNC` is on, and wires transport, publisher and auth.
 */
export async function createHooklane(
  config: Config,
  options: { database?: Database; queue?: QueueClient; logger?: Logger } = {},
): Promise<Hooklane> {
  const logger = options.logger ?? createLogger({ level: config.logLevel, format: config.logFormat });
  const database =
    options.database ??
    (await openDatabase({
      ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
      driver: config.databaseDriver,
      pgliteDataDir: config.pgliteDataDir,
      logger,
    }));
  if (config.catalogueAutoSync) await autoSyncCatalogue(database, logger);
  const transport =
    config.queueDriver === "vercel"
      ? createVercelTransport(database, options.queue ?? new QueueClient(), logger)
      : createPostgresTransport(database);
  const subscriptions = createSubscriptionCache(database, { logger });
  const publisher = createApiEventPublisher({
    enabled: config.publishEnabled,
    livemode: config.livemode,
    subscriptions,
    transport,
    logger,
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
    }),
    mailer: config.smtpUrl ? createSmtpMailer({ url: config.smtpUrl, from: config.smtpFrom }) : undefined,
    metrics: config.metricsEnabled ? createMetrics({ database, publisherStats: publisher.stats }) : undefined,
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
  };
}

function createSender(config: Config): HttpSender {
  return createHttpSender({
    timeoutMs: config.timeoutMs,
    connectionsPerOrigin: config.connectionsPerOrigin,
    allowedHosts: config.allowedHosts,
  });
}

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

/**
 * The `webhook-out` lane on Vercel Queues: the push handler of the lane's
 * function, and the sweep its cron runs (the transport's re-sends, then every
 * sweeper task once). `sweep` resolves to what the transport re-sent.
 */
export function createVercelLane(
  hooklane: Hooklane,
  options: { queue?: QueueClient; sender?: HttpSender } = {},
): { handler: (request: Request) => Promise<Response>; sweep(): Promise<{ routes: number; dispatches: number }> } {
  const { config, transport, database } = hooklane;
  if (transport.name !== "vercel") throw new ConfigError("createVercelLane needs WEBHOOK_QUEUE_DRIVER=vercel");
  const queue = options.queue ?? new QueueClient();
  return {
    handler: createVercelLaneHandler({
      database,
      transport,
      deliver: deliverDeps(hooklane, options.sender ?? createSender(config)),
      logger: hooklane.logger,
      caps: config.caps,
      breaker: config.breaker,
      queue,
      visibilityTimeoutSeconds: Math.max(30, Math.ceil((config.timeoutMs * 3) / 1_000)),
      mailer: hooklane.mailer,
    }),
    async sweep() {
      const workerId = `sweeper/${process.pid}`;
      const sent = await sweepVercelTransport({ database, transport, queue, workerId });
      await sweepOnce(hooklane, { workerId });
      return sent;
    },
  };
}
