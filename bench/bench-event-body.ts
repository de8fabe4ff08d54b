import { buildEventBody } from "../lib/webhook/outbound/webhook-event-body.ts";

/** The account every benchmark resource belongs to. */
export const BENCH_ACCOUNT = "acc_bench";

/** The event `POST /v3/payment-debts` emits, and the type of every benchmark dispatch. */
export const BENCH_EVENT_TYPE = "payment-debt.created";

const CREATED = new Date().toISOString();

/**
 * The product's thin body for one benchmark event, so the ceiling, the peers
 * and hooklane POST bytes of the same shape and size.
 */
export function benchEventBody(eventId: string, resourceId: string): string {
  return buildEventBody({
    id: eventId,
    type: BENCH_EVENT_TYPE,
    created: CREATED,
    livemode: true,
    object: "payment-debt",
    resourceId,
    account: BENCH_ACCOUNT,
  });
}
