import { expect } from "vitest";
import type { WebhookEvent } from "../../lib/webhook/verify/webhook-verify.ts";
import { eventually } from "./eventually.ts";
import { startHarness, type DatabaseFactory, type Driver, type Harness } from "./harness.ts";
import { startReceiver, type ReceivedPost, type Reply, type TestReceiver } from "./receiver.ts";

const OWNER = { account: "acc_order" };
/** Ten retries 50 ms apart: a subscriber failing 30 % of attempts at random exhausts an event once in 10^5.7. */
export const FAST_SCHEDULE = Array.from({ length: 10 }, () => "50ms").join(",");

export interface OrderingSetup {
  harness: Harness;
  receiver: TestReceiver;
  /** Each post's answer, by post. */
  answered: Map<ReceivedPost, number>;
  close(): Promise<void>;
}

/** A harness with the fast schedule, and a subscriber that answers as `reply` says (each answer remembered). */
export async function setUpOrdering(
  factory: DatabaseFactory,
  driver: Driver,
  reply: (post: ReceivedPost, event: WebhookEvent) => number,
  env: Record<string, string> = {},
): Promise<OrderingSetup> {
  const answered = new Map<ReceivedPost, number>();
  const receiver = await startReceiver((post): Reply => {
    const status = reply(post, JSON.parse(post.body) as WebhookEvent);
    answered.set(post, status);
    return { status };
  });
  const harness = await startHarness(factory, { driver, env: { WEBHOOK_RETRY_SCHEDULE: FAST_SCHEDULE, ...env } });
  await harness.accounts(OWNER.account);
  return {
    harness,
    receiver,
    answered,
    async close() {
      await harness.close();
      await receiver.close();
    },
  };
}

/** An account webhook on `payment-debt.updated` at `path`, with the ordering given. */
export async function orderingWebhook(
  setup: OrderingSetup,
  path: string,
  ordering: "none" | "resource",
): Promise<string> {
  const created = await setup.harness.call("POST", "/v3/webhooks", {
    ...OWNER,
    body: { url: `${setup.receiver.url}${path}`, events: ["payment-debt.updated"], ordering },
  });
  expect(created.status, created.text).toBe(201);
  expect(created.body).toMatchObject({ ordering, orderingHoldMax: 3_600 });
  return created.body.id;
}

/** `resources` payment debts, made before any webhook hears their events. */
export async function paymentDebts(setup: OrderingSetup, resources: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < resources; i++) {
    const created = await setup.harness.call("POST", "/v3/payment-debts", {
      ...OWNER,
      body: { amount: "10.00", currency: "EUR" },
    });
    expect(created.status, created.text).toBe(201);
    ids.push(created.body.id);
  }
  return ids;
}

/** `updates` PATCHes of each debt, one after the other per debt and every debt at once: its publish order. */
export async function updateEach(setup: OrderingSetup, debts: readonly string[], updates: number): Promise<void> {
  await Promise.all(
    debts.map(async (id) => {
      for (let i = 0; i < updates; i++) {
        const answer = await setup.harness.call("PATCH", `/v3/payment-debts/${id}`, {
          ...OWNER,
          body: { status: i % 2 === 0 ? "paid" : "open" },
        });
        expect(answer.status, answer.text).toBe(200);
      }
    }),
  );
  await setup.harness.settled();
}

/** The first post answered 200 of each event at `path`, in the order they arrived. */
export function firstReceipts(setup: OrderingSetup, path: string): Array<{ event: WebhookEvent; at: number }> {
  const seen = new Set<string>();
  const firsts: Array<{ event: WebhookEvent; at: number }> = [];
  for (const post of setup.receiver.posts) {
    if (post.path !== path || setup.answered.get(post) !== 200) continue;
    const event = JSON.parse(post.body) as WebhookEvent;
    if (seen.has(event.id)) continue;
    seen.add(event.id);
    firsts.push({ event, at: post.receivedAt });
  }
  return firsts;
}

/** Waits until `count` events at `path` have had a 200 (bounded). */
export async function delivered(setup: OrderingSetup, path: string, count: number, timeoutMs = 120_000) {
  return eventually(
    async () => firstReceipts(setup, path),
    (firsts) => firsts.length >= count,
    { timeoutMs, everyMs: 50 },
  );
}

/** Per resource, the sequences of its events in the order their first receipts arrived. */
export function sequencesByResource(firsts: ReadonlyArray<{ event: WebhookEvent }>): Map<string, number[]> {
  const byResource = new Map<string, number[]>();
  for (const { event } of firsts) {
    const list = byResource.get(event.data.id) ?? [];
    list.push(event.sequence!);
    byResource.set(event.data.id, list);
  }
  return byResource;
}
