import { randomUUID } from "node:crypto";
import { and, count, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idempotencyKey, paymentDebt, webhookDispatch, webhookRouteJob } from "../../lib/db/schema.ts";
import { pruneIdempotencyKeysTask } from "../../lib/webhook/sweeper/prune-idempotency-keys.ts";
import { eventually } from "./eventually.ts";
import { HARNESS_START_MS, startHarness, type DatabaseFactory, type Harness, type HarnessAnswer } from "./harness.ts";
import { startReceiver, type TestReceiver } from "./receiver.ts";

const ALICE = { account: "acc_alice" };
const BOB = { account: "acc_bob" };

/**
 * `Idempotency-Key` on the API, written once and run against every database
 * the product supports: replays answer the first answer byte for byte and
 * publish nothing; another request under the key is refused.
 */
export function describeIdempotency(name: string, factory: DatabaseFactory): void {
  describe(`Idempotency-Key on ${name}`, () => {
    let harness: Harness;
    let receiver: TestReceiver;

    beforeAll(async () => {
      receiver = await startReceiver();
      harness = await startHarness(factory, { env: { WEBHOOK_TIMEOUT_MS: "10000" } });
      for (const id of [ALICE.account, BOB.account]) {
        await harness.call("POST", "/v3/accounts", { account: "acc_ops", admin: true, body: { id, name: id } });
      }
      // Two subscribers of alice's debts: one event each per debt created.
      for (const path of ["/first", "/second"]) {
        const hook = await harness.call("POST", "/v3/webhooks", {
          ...ALICE,
          body: { url: `${receiver.url}${path}`, events: ["payment-debt.created"] },
        });
        expect(hook.status).toBe(201);
      }
    }, HARNESS_START_MS);
    afterAll(async () => {
      await harness?.close();
      await receiver?.close();
    });

    const post = (key: string, body: unknown, who = ALICE) =>
      harness.call("POST", "/v3/payment-debts", { ...who, body, headers: { "idempotency-key": key } });
    const debtsOf = async (account: string) =>
      (
        await harness.hooklane.database.db
          .select({ n: count() })
          .from(paymentDebt)
          .where(eq(paymentDebt.account, account))
      )[0]!.n;
    /** Once every route message is routed: the dispatches of `resourceId`'s events, one per subscriber per event. */
    const dispatchesOf = async (resourceId: string) => {
      await harness.settled();
      await eventually(
        async () => (await harness.hooklane.database.db.select({ n: count() }).from(webhookRouteJob))[0]!.n,
        (n) => n === 0,
      );
      return harness.hooklane.database.db
        .select({ eventId: webhookDispatch.eventId, webhookId: webhookDispatch.webhookId })
        .from(webhookDispatch)
        .where(sql`${webhookDispatch.payload}::jsonb -> 'data' ->> 'id' = ${resourceId}`);
    };

    it("creates one debt and one event per subscriber for a key sent four times: 2 in a row, then 2 at once", async () => {
      const key = randomUUID();
      const body = { amount: "42.00", currency: "EUR" };
      const before = await debtsOf(ALICE.account);
      const first = await post(key, body);
      expect(first.status).toBe(201);
      expect(first.headers.get("idempotent-replayed")).toBeNull();

      const again = await post(key, body);
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"));
      expect(again.text).toBe(first.text);

      const together = await Promise.all([post(key, body), post(key, body)]);
      for (const answer of together) expectReplayOrBusy(answer, first);

      expect(await debtsOf(ALICE.account)).toBe(before + 1);
      const dispatches = await dispatchesOf(first.body.id);
      expect(dispatches).toHaveLength(2);
      expect(new Set(dispatches.map((d) => d.eventId)).size).toBe(1);
      const delivered = await receiver.waitFor(2, { filter: (p) => p.body.includes(first.body.id) });
      expect(delivered.map((p) => p.path).sort()).toEqual(["/first", "/second"]);
    });

    it("answers 422 to the same key with another body, and runs nothing", async () => {
      const key = randomUUID();
      expect((await post(key, { amount: "1.00", currency: "EUR" })).status).toBe(201);
      const before = await debtsOf(ALICE.account);
      const other = await post(key, { amount: "2.00", currency: "EUR" });
      expect(other.status).toBe(422);
      expect(other.headers.get("content-type")).toBe("application/problem+json");
      expect(other.body.errors).toEqual([
        {
          field: "Idempotency-Key",
          message: "was already used for a different request in the last 24 h; use a new key for a new request",
        },
      ]);
      // The same request on another route is another request too.
      const elsewhere = await harness.call("POST", "/v3/subscriptions", {
        ...ALICE,
        body: { plan: "pro" },
        headers: { "idempotency-key": key },
      });
      expect(elsewhere.status).toBe(422);
      expect(await debtsOf(ALICE.account)).toBe(before);
      // Key order and spacing are not a different body.
      const reordered = await harness.call("POST", "/v3/payment-debts", {
        ...ALICE,
        body: { currency: "EUR", amount: "1.00" },
        headers: { "idempotency-key": key },
      });
      expect(reordered.status).toBe(201);
      expect(reordered.headers.get("idempotent-replayed")).toBe("true");
    });

    it("never creates a second resource when the first requests with a key all arrive at once", async () => {
      const key = randomUUID();
      const before = await debtsOf(ALICE.account);
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => post(key, { amount: "3.00", currency: "EUR" })),
      );
      const created = answers.filter((a) => a.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      for (const answer of answers) expect([201, 409]).toContain(answer.status);
      expect(new Set(created.map((a) => a.text)).size).toBe(1);
      expect(created.filter((a) => a.headers.get("idempotent-replayed") === null)).toHaveLength(1);
      for (const busy of answers.filter((a) => a.status === 409)) {
        expect(busy.headers.get("content-type")).toBe("application/problem+json");
      }
      expect(await debtsOf(ALICE.account)).toBe(before + 1);
      expect(await dispatchesOf(created[0]!.body.id)).toHaveLength(2);
    });

    it("scopes keys to the account", async () => {
      const key = randomUUID();
      const alices = await post(key, { amount: "5.00", currency: "EUR" });
      const bobs = await post(key, { amount: "5.00", currency: "EUR" }, BOB);
      expect(bobs.status).toBe(201);
      expect(bobs.headers.get("idempotent-replayed")).toBeNull();
      expect(bobs.body.id).not.toBe(alices.body.id);
      expect(bobs.body.account).toBe(BOB.account);
    });

    it("keeps only successful answers: a refused request may be sent again, corrected, with its key", async () => {
      const key = randomUUID();
      const refused = await post(key, { amount: "-1", currency: "EUR" });
      expect(refused.status).toBe(422);
      const corrected = await post(key, { amount: "1.00", currency: "EUR" });
      expect(corrected.status).toBe(201);
      expect(corrected.headers.get("idempotent-replayed")).toBeNull();
    });

    it("forgets a key after 24 hours, and the sweeper prunes it", async () => {
      const key = randomUUID();
      const first = await post(key, { amount: "6.00", currency: "EUR" });
      const { database } = harness.hooklane;
      await database.db
        .update(idempotencyKey)
        .set({ expiresAt: sql`now() - interval '1 second'` })
        .where(and(eq(idempotencyKey.account, ALICE.account), eq(idempotencyKey.key, key)));
      const later = await post(key, { amount: "6.00", currency: "EUR" });
      expect(later.status).toBe(201);
      expect(later.headers.get("idempotent-replayed")).toBeNull();
      expect(later.body.id).not.toBe(first.body.id);

      const other = randomUUID();
      await post(other, { amount: "7.00", currency: "EUR" });
      await database.db
        .update(idempotencyKey)
        .set({ expiresAt: sql`now() - interval '1 second'` })
        .where(eq(idempotencyKey.key, other));
      await pruneIdempotencyKeysTask.run({ hooklane: harness.hooklane, workerId: "test", now: () => new Date() });
      const left = await database.db.select({ key: idempotencyKey.key }).from(idempotencyKey);
      expect(left.map((row) => row.key)).not.toContain(other);
      expect(left.map((row) => row.key)).toContain(key);
    });

    it("replays updates and deletes too: a retried DELETE answers what the first did, not 404", async () => {
      const debt = await post(randomUUID(), { amount: "8.00", currency: "EUR" });
      const key = randomUUID();
      const send = (method: string) =>
        harness.call(method, `/v3/payment-debts/${debt.body.id}`, {
          ...ALICE,
          ...(method === "PATCH" ? { body: { status: "paid" } } : {}),
          headers: { "idempotency-key": `${key}-${method}` },
        });
      for (const method of ["PATCH", "DELETE"]) {
        const first = await send(method);
        expect(first.status).toBe(200);
        const replay = await send(method);
        expect(replay.status).toBe(200);
        expect(replay.text).toBe(first.text);
      }
    });

    it("replays a new webhook's secret, and keeps it sealed meanwhile", async () => {
      const key = randomUUID();
      const body = { url: `${receiver.url}/sealed`, events: ["account.updated"] };
      const send = () => harness.call("POST", "/v3/webhooks", { ...ALICE, body, headers: { "idempotency-key": key } });
      const first = await send();
      expect(first.status).toBe(201);
      const replay = await send();
      expect(replay.text).toBe(first.text);
      const [stored] = await harness.hooklane.database.db
        .select()
        .from(idempotencyKey)
        .where(and(eq(idempotencyKey.account, ALICE.account), eq(idempotencyKey.key, key)));
      expect(stored!.sealed).toBe(true);
      expect(stored!.body).not.toContain(first.body.secret);
      expect(stored!.body).not.toContain(first.body.id);
    });

    it("answers 422 naming the header for a key that is not 1-255 visible characters", async () => {
      for (const key of ["", "has space", "x".repeat(256), "clé"]) {
        const answer = await harness.call("POST", "/v3/payment-debts", {
          ...ALICE,
          body: { amount: "1.00", currency: "EUR" },
          headers: { "idempotency-key": key },
        });
        expect(answer.status, key).toBe(422);
        expect(answer.body.errors[0].field).toBe("Idempotency-Key");
      }
    });
  });
}

/** A concurrent duplicate: the first answer again, or 409 while the first still runs. */
export function expectReplayOrBusy(answer: HarnessAnswer, first: HarnessAnswer): void {
  if (answer.status === 409) {
    expect(answer.headers.get("content-type")).toBe("application/problem+json");
    return;
  }
  expect(answer.status).toBe(first.status);
  expect(answer.headers.get("idempotent-replayed")).toBe("true");
  expect(answer.text).toBe(first.text);
}
