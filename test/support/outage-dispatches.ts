import { buildEventBody } from "../../lib/webhook/outbound/webhook-event-body.ts";

const HOUR_MS = 3_600_000;

/**
 * `count` exhausted dispatch rows for `webhookId`, as an outage leaves them,
 * created `minutesAgo` (1 ms apart); event ids are `evt_<tag>_000000`, … in
 * creation order. Insert them with drizzle.
 */
export function exhaustedDispatches(
  webhookId: string,
  account: string,
  count: number,
  minutesAgo: number,
  tag: string,
) {
  const base = Date.now() - minutesAgo * 60_000;
  return Array.from({ length: count }, (_, i) => {
    const eventId = `evt_${tag}_${String(i).padStart(6, "0")}`;
    return {
      eventId,
      eventType: "payment-debt.created",
      webhookId,
      account: account,
      payload: buildEventBody({
        id: eventId,
        type: "payment-debt.created",
        created: new Date(base + i).toISOString(),
        livemode: true,
        object: "payment-debt",
        resourceId: `pd_${tag}_${i}`,
        account: account,
      }),
      status: "exhausted" as const,
      attemptCount: 6,
      lastStatusCode: 503,
      lastError: "http_status: 503",
      createdAt: new Date(base + i),
      completedAt: new Date(base + i + 25 * HOUR_MS),
    };
  });
}
