import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { HELD_LOOK_AGAIN } from "../../lib/webhook/transport/vercel/vercel-queue-limits.ts";
import type { WebhookEvent } from "../../lib/webhook/verify/webhook-verify.ts";
import { eventually } from "../support/eventually.ts";
import type { Driver } from "../support/harness.ts";
import {
  delivered,
  firstReceipts,
  orderingWebhook,
  paymentDebts,
  sequencesByResource,
  setUpOrdering,
  updateEach,
  type OrderingSetup,
} from "../support/ordering-drill.ts";
import { postgresFactory } from "../support/postgres.ts";

const RESOURCES = 20;
const UPDATES = 25;

/** A deterministic stream of numbers in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 4_294_967_296;
  };
}

const increasing = (list: readonly number[]) => list.every((n, i) => i === 0 || n > list[i - 1]!);

describe.each(["postgres", "vercel"] as Driver[])("ordering per resource on PostgreSQL, %s transport", (driver) => {
  let setup: OrderingSetup | undefined;
  afterEach(async () => {
    await setup?.close();
    setup = undefined;
  });

  it(
    `delivers ${RESOURCES} resources × ${UPDATES} updates in publish order per resource through 30 % failures, within 2× of the same events unordered (on Vercel, plus one look-again of a held message)`,
    { timeout: 300_000 },
    async () => {
      const random = seeded(42);
      setup = await setUpOrdering(postgresFactory, driver, () => (random() < 0.3 ? 503 : 200));
      const debts = await paymentDebts(setup, RESOURCES);
      const ordered = await orderingWebhook(setup, "/ordered", "resource");
      const unordered = await orderingWebhook(setup, "/unordered", "none");
      const started = Date.now();
      await updateEach(setup, debts, UPDATES);
      const total = RESOURCES * UPDATES;
      const [orderedFirsts, unorderedFirsts] = await Promise.all([
        delivered(setup, "/ordered", total),
        delivered(setup, "/unordered", total),
      ]);
      const took = (firsts: ReadonlyArray<{ at: number }>) => Math.max(...firsts.map((f) => f.at)) - started;

      // Publish order per resource is its sequence order: each debt's updates were made one after the other.
      const orderedRuns = sequencesByResource(orderedFirsts);
      expect(orderedRuns.size).toBe(RESOURCES);
      expect([...orderedRuns.values()].filter((run) => run.length !== UPDATES || !increasing(run))).toEqual([]);
      const unorderedRuns = sequencesByResource(unorderedFirsts);
      const outOfOrder = [...unorderedRuns.values()].filter((run) => !increasing(run)).length;
      // Nothing was overtaken, so no body names a skipped event.
      expect(orderedFirsts.filter((f) => (f.event as { ordering?: unknown }).ordering !== undefined)).toEqual([]);

      const ratio = took(orderedFirsts) / took(unorderedFirsts);
      const failed = [...setup.answered.values()].filter((status) => status !== 200).length;
      console.info(
        `[ordering] ${driver}: ${total} events to each webhook, ${failed} of ${setup.answered.size} attempts failed; ` +
          `ordered ${took(orderedFirsts)} ms, unordered ${took(unorderedFirsts)} ms (${ratio.toFixed(2)}×); ` +
          `resources received out of order: ordered 0 of ${RESOURCES}, unordered ${outOfOrder} of ${RESOURCES}`,
      );
      // On Vercel a held event looks again through the queue, in whole seconds and never sooner than the floor (with
      // its jitter), which keeps held messages from storming the queue; the unordered side never pays it, and its
      // drain shrinks on a faster machine while the floor does not. So there the bound is 2× plus one such look.
      const lookAgainMs = driver === "vercel" ? HELD_LOOK_AGAIN.floorMs * (1 + HELD_LOOK_AGAIN.jitter) : 0;
      expect(took(orderedFirsts)).toBeLessThan(2 * took(unorderedFirsts) + lookAgainMs);
      // Routed into each webhook's stream, the ordered one's open rows carried the resource and sequence.
      const keys = await setup.harness.hooklane.database.rows<{ n: number }>(
        sql`select count(*)::integer as n from webhook_dispatch where webhook_id = ${ordered} and sequence is not null`,
      );
      expect(keys[0]!.n).toBe(total);
      expect(unordered).not.toBe(ordered);
    },
  );

  it(
    "lets a resource's later events go once its failing event is exhausted, naming it, and never holds other resources",
    { timeout: 120_000 },
    async () => {
      // The first event of the webhook's stream fails every attempt; the next four of its debt wait behind it.
      setup = await setUpOrdering(postgresFactory, driver, (_, event) => (event.sequence === 1 ? 503 : 200), {
        WEBHOOK_RETRY_SCHEDULE: "200ms,200ms,200ms",
      });
      const [stuck, ...others] = await paymentDebts(setup, 4);
      const hook = await orderingWebhook(setup, "/hook", "resource");
      await updateEach(setup, [stuck!], 5);
      await updateEach(setup, others, 5);
      const firsts = await delivered(setup, "/hook", 4 + 3 * 5);
      const blocker = JSON.parse(setup.receiver.posts.find((post) => JSON.parse(post.body).sequence === 1)!.body).id;
      const exhaustedAt = await eventually(
        () =>
          setup!.harness.hooklane.database.rows<{ at: Date }>(
            sql`select completed_at as at from webhook_dispatch where event_id = ${blocker} and status = 'exhausted'`,
          ),
        (rows) => rows.length === 1,
      );
      const blockerAttempts = setup.receiver.posts.filter((post) => JSON.parse(post.body).id === blocker).length;
      expect(blockerAttempts).toBe(4);

      const stuckFirsts = firsts.filter((f) => f.event.data.id === stuck);
      // Its next four, in the order they were numbered (routing may number another debt's event between them: a
      // transport routes messages side by side).
      const stuckSequences = stuckFirsts.map((f) => f.event.sequence!);
      expect(stuckSequences).toHaveLength(4);
      expect(stuckSequences.every((n, i) => n > (i === 0 ? 1 : stuckSequences[i - 1]!))).toBe(true);
      // The first one after it names it, in its body, on every attempt and in GET /v3/events; the others do not.
      expect(stuckFirsts.map((f) => (f.event as { ordering?: unknown }).ordering)).toEqual([
        { skipped: [blocker] },
        undefined,
        undefined,
        undefined,
      ]);
      expect(stuckFirsts[0]!.at).toBeGreaterThanOrEqual(new Date(exhaustedAt[0]!.at).getTime() - 50);
      const streamed = await setup.harness.call(
        "GET",
        `/v3/events?webhook=${hook}&after=${stuckSequences[0]! - 1}&limit=1`,
        {
          account: "acc_order",
        },
      );
      expect(streamed.body.data[0]).toEqual(stuckFirsts[0]!.event);
      // The other debts never waited: all delivered before the stuck one's event was given up.
      const otherFirsts = firsts.filter((f) => f.event.data.id !== stuck);
      expect(otherFirsts).toHaveLength(15);
      expect(Math.max(...otherFirsts.map((f) => f.at))).toBeLessThan(new Date(exhaustedAt[0]!.at).getTime());
      console.info(
        `[ordering] ${driver}: the blocker failed ${blockerAttempts} attempts and was exhausted; its resource's next event went ` +
          `${stuckFirsts[0]!.at - new Date(exhaustedAt[0]!.at).getTime()} ms later naming it; 15 events of 3 other resources were delivered meanwhile`,
      );
    },
  );

  it(
    "lets the next event go, naming the failing one, once the hold passes while it still retries",
    {
      timeout: 120_000,
    },
    async () => {
      setup = await setUpOrdering(postgresFactory, driver, (_, event) => (event.sequence === 1 ? 503 : 200), {
        WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 20 }, () => "500ms").join(","),
      });
      const [debt] = await paymentDebts(setup, 1);
      const hook = await orderingWebhook(setup, "/hook", "resource");
      // A hold of 1 s, below what the API accepts (60 s), to see it pass in a test.
      await setup.harness.hooklane.database.rows(sql`update webhook set ordering_hold_max = 1 where id = ${hook}`);
      await updateEach(setup, [debt!], 1);
      const [first] = await eventually(
        async () => setup!.receiver.posts.map((post) => JSON.parse(post.body) as WebhookEvent),
        (events) => events.length > 0,
      );
      const blocker = first!.id;
      const published = Date.now();
      await updateEach(setup, [debt!], 1);
      const [next] = await delivered(setup, "/hook", 1);
      expect(next!.event).toMatchObject({ sequence: 2, ordering: { skipped: [blocker] } });
      const [state] = await setup.harness.hooklane.database.rows<{ status: string }>(
        sql`select status from webhook_dispatch where event_id = ${blocker}`,
      );
      expect(state!.status).toBe("error");
      console.info(
        `[ordering] ${driver}: with a 1 s hold, the next event went ${next!.at - published} ms after it was published, its blocker still retrying`,
      );
      expect(next!.at - published).toBeGreaterThanOrEqual(500);
    },
  );
});
