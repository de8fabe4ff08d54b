import type { Config } from "./config/env.ts";
import type { Database } from "./db/client.ts";
import type { TokenVerifier } from "./auth/jwt.ts";
import type { ApiEventPublisher } from "./webhook/outbound/webhook-out-route.publisher.ts";
import type { SecretSealer } from "./webhook/outbound/webhook-secret-seal.ts";
import type { SubscriptionCache } from "./webhook/outbound/webhook-subscription-cache.ts";
import type { PostgresTransport } from "./webhook/transport/postgres/postgres-transport.ts";

/** The product's services, built once per process and handed to the API and the lane. */
export interface Hooklane {
  config: Config;
  database: Database;
  transport: PostgresTransport;
  publisher: ApiEventPublisher;
  subscriptions: SubscriptionCache;
  secrets: SecretSealer;
  verifyToken: TokenVerifier;
}
