import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDispatch } from "../../lib/db/schema.ts";
import { startHarness, type Harness } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

/**
 * A filtered webhook among unfiltered traffic, on PostgreSQL with the lane
 * running: of 1,000 debts in four currencies, opened concurrently, it
 * receives every EUR one and nothing else.
 */
describe("webhook filters on PostgreSQL", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    harness = await startHarness(postgresFactory);
    await harness.accounts("acc_alice");
  });
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  it('delivers exactly the EUR events among 1,000 mixed ones to a webhook filtered on currency in ["EUR"]', async () => {
    const subscribe = async (path: string, filter?: string) => {
      const response = await harness.call("POST", "/v3/webhooks", {
        account: "acc_alice",
        body: { url: `${receiver.url}${path}`, events: ["payment-debt.created"], ...(filter ? { filter } : {}) },
      });
      expect(response.status, response.text).toBe(201);
      return response.body as { id: string };
    };
    const eur = await subscribe("/eur", 'currency in ["EUR"]');
    const all = await subscribe("/all");

    const currencies = ["EUR", "USD", "GBP", "JPY"];
    const opened: Array<{ id: string; currency: string }> = [];
    // 1,000 debts, 20 requests at a time; the currency is hashed from the request's number, not a tidy cycle.
    const draw = (n: number) => currencies[(Math.imul(n + 1, 2_654_435_761) >>> 0) >>> 30]!;
    for (let batch = 0; batch < 50; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const response = await harness.call("POST", "/v3/payment-debts", {
            account: "acc_alice",
            body: { amount: "1.00", currency: draw(batch * 20 + i) },
          });
          expect(response.status, response.text).toBe(201);
          return response.body as { id: string; currency: string };
        }),
      );
      opened.push(...answers);
    }
    const expected = opened.filter((debt) => debt.currency === "EUR").map((debt) => debt.id);
    expect(expected.length).toBeGreaterThan(150);
    expect(expected.length).toBeLessThan(350);
    await harness.settled();

    await receiver.waitFor(expected.length, { filter: (post) => post.path === "/eur", timeoutMs: 120_000 });
    await receiver.waitFor(1_000, { filter: (post) => post.path === "/all", timeoutMs: 120_000 });
    const received = receiver.posts
      .filter((post) => post.path === "/eur")
      .map((post) => (JSON.parse(post.body) as { data: { id: string } }).data.id);
    expect(received.sort()).toEqual([...expected].sort());
    const ledger = await harness.hooklane.database.db
      .select({ id: webhookDispatch.id, attributes: webhookDispatch.attributes })
      .from(webhookDispatch)
      .where(eq(webhookDispatch.webhookId, eur.id));
    expect(ledger).toHaveLength(expected.length);
    expect(ledger.every((row) => row.attributes?.currency === "EUR" && row.attributes.status === "open")).toBe(true);
    const unfiltered = await harness.hooklane.database.db
      .select({ id: webhookDispatch.id })
      .from(webhookDispatch)
      .where(eq(webhookDispatch.webhookId, all.id));
    expect(unfiltered).toHaveLength(1_000);
    console.log(
      `[filters] postgres: 1000 debts, ${expected.length} EUR; the filtered webhook got ${received.length}, the other 1000`,
    );
  });
});
