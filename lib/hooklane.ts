import type { Config } from "./config/env.ts";
import type { Database } from "./db/client.ts";
import type { TokenVerifier } from "./auth/jwt.ts";
import type { Logger } from "./log/logger.ts";
import type { Mailer } from "./mail/smtp-mailer.ts";
import type { Metrics } from "./metrics/metrics.ts";
import type { Tracing } from "./observability/tracing.ts";
import type { ApiEventPublisher } from "./webhook/outbound/webhook-out-route.publisher.ts";
import type { SecretSealer } from "./webhook/outbound/webhook-secret-seal.ts";
import type { SubscriptionCache } from "./webhook/outbound/webhook-subscription-cache.ts";
import type { PostgresTransport } from "./webhook/transport/postgres/postgres-transport.ts";
import type { VercelTransport } from "./webhook/transport/vercel/vercel-transport.ts";

/** The product's services, built once per process and handed to the API and the lane. */
export interface Hooklane {
  config: Config;
  /** The process's logger; components log through its children. */
  logger: Logger;
  database: Database;
  /** Chosen by WEBHOOK_QUEUE_DRIVER; `name` tells which. */
  transport: PostgresTransport | VercelTransport;
  publisher: ApiEventPublisher;
  subscriptions: SubscriptionCache;
  secrets: SecretSealer;
  verifyToken: TokenVerifier;
  /** E-mails webhook owners when `SMTP_URL` is set; otherwise they get notification rows only. */
  mailer: Mailer | undefined;
  /** This process's Prometheus metrics; undefined with `METRICS_ENABLED=false`. */
  metrics: Metrics | undefined;
  /** OpenTelemetry traces, exported over OTLP; undefined (and nothing traced) without an OTLP endpoint. */
  tracing: Tracing | undefined;
}
