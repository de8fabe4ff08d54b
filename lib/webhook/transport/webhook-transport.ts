import type { Database } from "../../db/client.ts";
import type { CatalogueEntry } from "../catalogue/catalogue-entry.ts";
import type { RouteMessage } from "../outbound/webhook-out-queue-registrations.ts";

/** What publishing reads of the resource, as its catalogue entry says. */
export type EventCapture = Pick<CatalogueEntry, "owner" | "attributes">;

/** A route message written to the outbox inside a mutation's transaction. */
export interface RouteReceipt {
  message: RouteMessage;
  /** Its `webhook_route_job` row; absent when the row is written with the COMMIT (postgres: nobody needs it). */
  jobId?: number;
}

/**
 * The replaceable transport between the stages. The ledger row is the
 * commitment; a transport only carries work and wakes consumers.
 */
export interface WebhookTransport {
  readonly name: string;
  /**
   * Writes a `webhook-out-route` message into the outbox (`webhook_route_job`)
   * within `tx`, so it commits or rolls back with the mutation: now, or with
   * the COMMIT (`Database.beforeCommit`), whose failure then fails the
   * transaction. Throws when it cannot. Given the event's catalogue entry,
   * the same statement reads the resource's owner into the message's
   * `account` (the receipt's message carries it when the transport needs it
   * after the commit) and its declared attributes into `attributes`; without
   * it the message is stored as it is.
   */
  enqueueRoute(tx: Database, message: RouteMessage, entry?: EventCapture): Promise<RouteReceipt>;
  /**
   * Whether `enqueueRoute` writes with the COMMIT on a pipelined transaction:
   * its statement then follows every statement of the mutation, so a message
   * for a row the mutation is about to create can be written ahead of it
   * (`lastStatements()`), its owner still read from that row.
   */
  readonly routesAtCommit: boolean;
  /** After the commit: wakes the route consumer, or forwards the message to the queue. */
  routeCommitted(receipt: RouteReceipt): Promise<void>;
  /** Hands freshly inserted dispatch rows to `webhook-out-deliver`. */
  sendDeliver(dispatchIds: readonly string[]): Promise<void>;
  /** Counts messages sent, so tests can prove that none was. */
  readonly sent: { route: number; deliver: number };
}
