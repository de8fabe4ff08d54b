import { z } from "zod";

/** The lane's two topics. Both run on the dedicated `webhook-out` lane. */
export const ROUTE_TOPIC = "webhook-out-route";
export const DELIVER_TOPIC = "webhook-out-deliver";

/** One API transaction to fan out: published by the API, consumed by the route stage. */
export const routeMessageSchema = z.object({
  eventId: z.string().regex(/^evt_[A-Za-z0-9_-]{8,64}$/),
  type: z.string().min(1).max(200),
  resourceId: z.string().min(1).max(200),
  occurredAt: z.iso.datetime(),
  livemode: z.boolean(),
  /**
   * The account that owned the resource when the event was published (null: none), read in the mutation's
   * transaction. A message without it (written before it was kept, or not a string or null) is routed to the
   * owner found at route time, as the route statement does.
   */
  account: z.string().nullable().optional().catch(undefined),
  /**
   * The resource's attributes the catalogue declares for this event, as text, read in the mutation's transaction
   * (null: the row was gone): what webhook filters read. Absent for an event that declares none.
   */
  attributes: z.record(z.string(), z.string().nullable()).nullable().optional().catch(undefined),
  /**
   * With tracing on: the W3C `traceparent` of the event's publish span, which routing, claims and attempts continue
   * (and each attempt sends on). Absent when tracing was off where it was published.
   */
  traceparent: z
    .string()
    .regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/)
    .optional()
    .catch(undefined),
  /**
   * The outbox row (`webhook_route_job`) the message was forwarded from, on transports that forward (Vercel): the
   * route stage deletes it once the event's dispatches exist. Absent where the outbox is the queue (postgres).
   */
  outboxId: z.number().int().positive().optional().catch(undefined),
});
export type RouteMessage = z.infer<typeof routeMessageSchema>;

/**
 * One dispatch to attempt: sent by the route stage, consumed by the deliver
 * stage. `run` and `attempt` name the attempt it was sent for: once that one
 * has been made, the message is spent (the next attempt has its own).
 */
export const deliverMessageSchema = z.object({
  dispatchId: z.string().regex(/^wd_[a-f0-9]{32}$/),
  run: z.number().int().min(1).optional(),
  attempt: z.number().int().min(1).optional(),
});
export type DeliverMessage = z.infer<typeof deliverMessageSchema>;
