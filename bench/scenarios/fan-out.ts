import { sql } from "drizzle-orm";
import { DELIVER_WAKE_CHANNEL } from "../../lib/webhook/transport/postgres/postgres-transport.ts";
import { deliveryDeadline, now, waitForDeliveries, type BenchContext } from "../bench-context.ts";
import { startPipeline } from "../product-processes.ts";

export interface FanOutResult {
  webhooks: number;
  /** Dispatch rows the event produced. */
  routed: number;
  /** From the API's 2xx to the route stage's commit of every dispatch row (its deliver wake-up). */
  routeMs: number;
  /** From the API's 2xx to the last POST's arrival. */
  lastArrivalMs: number;
  /** From the API's 2xx to the ledger recording every delivery. */
  allRecordedMs: number;
  complete: boolean;
}

/**
 * Scenario 3: one `POST /v3/payment-debts` heard by `webhooks` global
 * webhooks (created directly in SQL, each with its own sealed secret). The
 * route stage inserts every dispatch in one statement and then sends its
 * deliver wake-up (a NOTIFY this scenario listens to), which marks "routed".
 */
export async function fanOut(context: BenchContext): Promise<FanOutResult> {
  const webhooks = context.options.sizes.fanOut.webhooks;
  await context.db.reset();
  context.progress(`fan-out: creating ${webhooks.toLocaleString("en")} webhooks`);
  await context.db.seedWebhooks(webhooks, `${context.subscriber.ready.url}/fan-out`, "global");
  const { api, worker } = await startPipeline(context.product, "fan-out");
  let routedAt: number | undefined;
  let onRouted: () => void = () => {};
  const routed = new Promise<void>((resolve) => (onRouted = resolve));
  const unlisten = await context.db.database.listen(DELIVER_WAKE_CHANNEL, () => {
    routedAt ??= now();
    onRouted();
  });
  try {
    await context.subscriber.call("reset");
    const response = await fetch(`${api.url}/v3/payment-debts`, {
      method: "POST",
      headers: { authorization: `Bearer ${context.token}`, "content-type": "application/json" },
      body: JSON.stringify({ amount: "10.00", currency: "EUR" }),
    });
    const answeredAt = now();
    if (response.status !== 201)
      throw new Error(`fan-out: the API answered ${response.status}: ${await response.text()}`);
    await Promise.race([routed, new Promise((resolve) => setTimeout(resolve, 30_000))]);
    const [row] = await context.db.database.rows<{ n: number }>(sql`select count(*)::int as n from webhook_dispatch`);
    context.progress(`fan-out: ${row?.n ?? 0} dispatches routed in ${((routedAt ?? NaN) - answeredAt).toFixed(0)} ms`);
    const delivered = await waitForDeliveries(context, {
      label: "fan-out",
      count: webhooks,
      recordedTarget: webhooks,
      recorded: () => context.db.delivered(),
      deadline: deliveryDeadline(webhooks),
    });
    return {
      webhooks,
      routed: row?.n ?? 0,
      routeMs: (routedAt ?? NaN) - answeredAt,
      lastArrivalMs: (delivered.arrivals.times.at(-1) ?? NaN) - answeredAt,
      allRecordedMs: delivered.doneAt - answeredAt,
      complete: delivered.complete,
    };
  } finally {
    await unlisten();
    await api.stop();
    await worker.stop();
  }
}
