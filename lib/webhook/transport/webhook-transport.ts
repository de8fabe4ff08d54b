import type { RouteMessage } from "../outbound/webhook-out-queue-registrations.ts";

/**
 * The replaceable transport between the stages. The ledger row is the
 * commitment; a transport only carries work and wakes consumers.
 */
export interface WebhookTransport {
  readonly name: string;
  /** Enqueues a `webhook-out-route` message. Throws when the transport cannot take it. */
  sendRoute(message: RouteMessage): Promise<void>;
  /** Hands freshly inserted dispatch rows to `webhook-out-deliver`. */
  sendDeliver(dispatchIds: readonly string[]): Promise<void>;
  /** Counts messages sent, so tests can prove that none was. */
  readonly sent: { route: number; deliver: number };
}
