import { createTokenVerifier } from "./auth/jwt.ts";
import type { Config } from "./config/env.ts";
import { openDatabase, type Database } from "./db/client.ts";
import type { Hooklane } from "./hooklane.ts";
import { createHttpSender, type HttpSender } from "./webhook/outbound/webhook-http-sender.ts";
import { createApiEventPublisher } from "./webhook/outbound/webhook-out-route.publisher.ts";
import { createSecretSealer } from "./webhook/outbound/webhook-secret-seal.ts";
import { createSubscriptionCache } from "./webhook/outbound/webhook-subscription-cache.ts";
import { startPostgresLane, type Lane } from "./webhook/transport/postgres/postgres-lane.ts";
import { createPostgresTransport } from "./webhook/transport/postgres/postgres-transport.ts";

/**
 * Builds the product's services from a configuration: opens (and migrates)
 * the database unless one is given, and wires transport, publisher and auth.
 */
export async function createHooklane(config: Config, options: { database?: Database } = {}): Promise<Hooklane> {
  const database =
    options.database ??
    (await openDatabase({
      ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
      pgliteDataDir: config.pgliteDataDir,
    }));
  const transport = createPostgresTransport(database);
  const subscriptions = createSubscriptionCache(database);
  return {
    config,
    database,
    transport,
    subscriptions,
    publisher: createApiEventPublisher({
      enabled: config.publishEnabled,
      livemode: config.livemode,
      subscriptions,
      transport,
    }),
    secrets: createSecretSealer(config.secretKey),
    verifyToken: createTokenVerifier({
      ...(config.jwtSecret ? { jwtSecret: config.jwtSecret } : {}),
      ...(config.jwksUrl ? { jwksUrl: config.jwksUrl } : {}),
    }),
  };
}

/** Starts the `webhook-out` lane for these services. The returned lane's `stop()` drains it. */
export async function startLane(
  hooklane: Hooklane,
  options: { sender?: HttpSender; workerId?: string } = {},
): Promise<Lane> {
  const { config } = hooklane;
  const sender =
    options.sender ??
    createHttpSender({ timeoutMs: config.timeoutMs, connectionsPerOrigin: config.connectionsPerOrigin });
  const lane = await startPostgresLane({
    database: hooklane.database,
    transport: hooklane.transport,
    deliver: {
      brand: config.brand,
      retrySchedule: config.retrySchedule,
      allowedHosts: config.allowedHosts,
      sender,
      secrets: hooklane.secrets,
    },
    batchSize: config.batchSize,
    concurrency: config.concurrency,
    leaseMs: config.leaseMs,
    ...(options.workerId ? { workerId: options.workerId } : {}),
  });
  return {
    workerId: lane.workerId,
    async stop() {
      await lane.stop();
      if (!options.sender) await sender.close();
    },
  };
}
