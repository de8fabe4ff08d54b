import { count, eq, sql } from "drizzle-orm";
import Stripe from "stripe";
import { afterEach, describe, expect, it } from "vitest";
import {
  paymentDebt,
  webhook,
  webhookAttempt,
  webhookDispatch,
  webhookDispatchOpen,
  type WebhookDispatch,
  webhookNotification,
  webhookRouteJob,
} from "../../lib/db/schema.ts";
import { claimDispatches } from "../../lib/db/sql/claim-dispatches.ts";
import { handleRouteMessage } from "../../lib/webhook/outbound/webhook-out-route.handler.ts";
import { generateWebhookSecret } from "../../lib/webhook/outbound/webhook-signature.ts";
import { capturedLogs } from "./captured-logs.ts";
import { eventually } from "./eventually.ts";
import { startHarness, type DatabaseFactory, type Driver, type Harness } from "./harness.ts";
import { startReceiver, type ReceivedPost, type Reply, type TestReceiver } from "./receiver.ts";
import { readStream, sequenceDrill, setUpSequence } from "./sequence-drill.ts";
import {
  delivered,
  orderingWebhook,
  paymentDebts,
  sequencesByResource,
  setUpOrdering,
  updateEach,
} from "./ordering-drill.ts";

const stripe = new Stripe("sk_test_hooklane");
const ADMIN = { account: "acc_ops", admin: true };

/**
 * The pipeline's behaviour, publish → route → deliver, written once and run
 * against every database the product supports.
 */
export function describePipeline(name: string, factory: DatabaseFactory, driver: Driver = "postgres"): void {
  describe(`pipeline on ${name}, ${driver} transport`, () => {
    const open: Array<{ close(): Promise<void> }> = [];
    afterEach(async () => {
      await Promise.all(open.splice(0).map((thing) => thing.close()));
    });

    async function setUp(
      options: { env?: Record<string, string>; lane?: boolean; reply?: (post: ReceivedPost) => Reply } = {},
    ) {
      const receiver = await startReceiver(options.reply);
      const harness = await startHarness(factory, { ...options, driver });
      open.push(harness, receiver);
      return { receiver, harness };
    }

    async function subscribe(
      harness: Harness,
      receiver: TestReceiver,
      path: string,
      who: { account: string; admin?: boolean },
      body: Record<string, unknown> = {},
    ) {
      const response = await harness.call("POST", "/v3/webhooks", {
        ...who,
        body: { url: `${receiver.url}${path}`, events: ["*"], ...body },
      });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      return response.body as { id: string; secret: string };
    }

    async function dispatchesOf(harness: Harness, webhookId: string) {
      return harness.hooklane.database.db
        .select()
        .from(webhookDispatch)
        .where(eq(webhookDispatch.webhookId, webhookId));
    }

    /** Publishes `account.updated` for acc_alice (owner: acc_alice itself). */
    async function touchAlice(harness: Harness) {
      const response = await harness.call("PATCH", "/v3/accounts/acc_alice", { ...ADMIN, body: { name: "Alice" } });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
    }

    it("routes an event to the owner its resource had when it was published, even if the resource is gone by then", async () => {
      const { harness, receiver } = await setUp({ lane: false });
      await harness.accounts("acc_alice", "acc_bob");
      // payment-debt.purged belongs to no account: an account webhook cannot subscribe to it (422).
      const events = ["payment-debt.created", "subscription.history.created"];
      const alice = await subscribe(harness, receiver, "/alice", { account: "acc_alice" }, { events });
      const bob = await subscribe(harness, receiver, "/bob", { account: "acc_bob" }, { events });
      const call = async (method: string, path: string, body?: unknown) => {
        const response = await harness.call(method, path, { account: "acc_alice", body });
        expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
        return response.body;
      };
      // Each resource is deleted before anything is routed: the lane is not running yet.
      const debt = await call("POST", "/v3/payment-debts", { amount: "3.00", currency: "eur" }); // direct
      await call("DELETE", `/v3/payment-debts/${debt.id}`); // none
      const subscription = await call("POST", "/v3/subscriptions", { plan: "pro" });
      await call("POST", `/v3/subscriptions/${subscription.id}/history`, { change: "upgraded" }); // via
      await call("DELETE", `/v3/subscriptions/${subscription.id}`);
      await harness.settled();

      await harness.startLane();
      await receiver.waitFor(2);
      await harness.settled();
      const seen = receiver.posts
        .map((post) => {
          const event = JSON.parse(post.body);
          return `${post.path} ${event.type} ${event.data.account}`;
        })
        .sort();
      expect(seen).toEqual(["/alice payment-debt.created acc_alice", "/alice subscription.history.created acc_alice"]);
      expect((await dispatchesOf(harness, alice.id)).length).toBe(2);
      expect(await dispatchesOf(harness, bob.id)).toEqual([]);
    });

    it("routes each owner strategy: account webhooks get their account's events, global ones get all", async () => {
      const { harness, receiver } = await setUp();
      const expectOk = async (promise: Promise<{ status: number; body: any }>) => {
        const response = await promise;
        expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
        return response.body;
      };
      // Only global webhooks hear an account being created: an account webhook needs its account to exist.
      const global = await subscribe(harness, receiver, "/global", { ...ADMIN }, { scope: "global" });
      await expectOk(harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id: "acc_alice", name: "Alice" } })); // self
      await expectOk(harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id: "acc_bob", name: "Bob" } })); // self
      // Routed before the account webhooks exist (routing matches the webhooks there are when it runs).
      await receiver.waitFor(2);
      const alice = await subscribe(harness, receiver, "/alice", { account: "acc_alice" });
      const bob = await subscribe(harness, receiver, "/bob", { account: "acc_bob" });
      await expectOk(harness.call("PATCH", "/v3/accounts/acc_alice", { ...ADMIN, body: { name: "Alice A." } })); // self
      await expectOk(harness.call("PATCH", "/v3/accounts/acc_bob", { ...ADMIN, body: { name: "Bob B." } })); // self
      const debt = await expectOk(
        harness.call("POST", "/v3/payment-debts", { account: "acc_alice", body: { amount: "12.50", currency: "eur" } }),
      ); // direct
      const sub = await expectOk(
        harness.call("POST", "/v3/subscriptions", { account: "acc_bob", body: { plan: "pro" } }),
      ); // direct
      await expectOk(
        harness.call("POST", `/v3/subscriptions/${sub.id}/history`, {
          account: "acc_bob",
          body: { change: "upgraded" },
        }),
      ); // via
      await expectOk(
        harness.call("POST", "/v3/general-addresses", {
          account: "acc_alice",
          body: { line1: "1 Main St", city: "Lima", country: "PE" },
        }),
      ); // none
      await expectOk(harness.call("DELETE", `/v3/payment-debts/${debt.id}`, { account: "acc_alice" })); // none (purged)
      await harness.settled();

      await receiver.waitFor(2 + 3 + 9);
      const seen = (path: string) =>
        receiver.posts
          .filter((post) => post.path === path)
          .map((post) => {
            const event = JSON.parse(post.body);
            return `${event.type} ${event.data.account}`;
          })
          .sort();
      expect(seen("/alice")).toEqual(["account.updated acc_alice", "payment-debt.created acc_alice"]);
      expect(seen("/bob")).toEqual([
        "account.updated acc_bob",
        "subscription.created acc_bob",
        "subscription.history.created acc_bob",
      ]);
      expect(seen("/global")).toEqual([
        "account.created acc_alice",
        "account.created acc_bob",
        "account.updated acc_alice",
        "account.updated acc_bob",
        "general.address.created null",
        "payment-debt.created acc_alice",
        "payment-debt.purged null",
        "subscription.created acc_bob",
        "subscription.history.created acc_bob",
      ]);
      // The ledger agrees: one row per match, nothing else.
      expect((await dispatchesOf(harness, alice.id)).length).toBe(2);
      expect((await dispatchesOf(harness, bob.id)).length).toBe(3);
      expect((await dispatchesOf(harness, global.id)).length).toBe(9);
      // Nothing in flight once all is recorded: no worker's row is left in the in-flight book.
      const book = () =>
        harness.hooklane.database.rows<{ worker: string }>(sql`select worker from webhook_lane_in_flight`);
      expect(await eventually(book, (rows) => rows.length === 0, { timeoutMs: 10_000 })).toEqual([]);
    });

    it("sends a thin, Stripe-verifiable body with the contract's headers", async () => {
      const { harness, receiver } = await setUp();
      await harness.accounts("acc_alice");
      const hook = await subscribe(
        harness,
        receiver,
        "/hook",
        { account: "acc_alice" },
        { events: ["account.updated"] },
      );
      await touchAlice(harness);
      const [post] = await receiver.waitFor(1);
      const event = stripe.webhooks.constructEvent(
        post!.body,
        String(post!.headers["hooklane-signature"]),
        hook.secret,
      );
      expect(event).toMatchObject({
        type: "account.updated",
        livemode: true,
        data: { object: "account", id: "acc_alice", account: "acc_alice" },
      });
      expect(Object.keys(JSON.parse(post!.body))).toEqual([
        "id",
        "object",
        "type",
        "created",
        "livemode",
        "sequence",
        "data",
      ]);
      expect(JSON.parse(post!.body)).toMatchObject({ object: "event", sequence: 1 });
      expect(post!.headers["content-type"]).toBe("application/json");
      expect(post!.headers["user-agent"]).toMatch(/^Hooklane-Webhooks\/\d+\.\d+\.\d+/);
      expect(post!.headers["hooklane-event-id"]).toBe(event.id);
      expect(post!.headers["hooklane-attempt"]).toBe("1");
      expect(String(post!.headers["hooklane-signature"])).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    });

    it("sends a webhook's own headers on every attempt, its secret one never shown or logged again", async () => {
      const SECRET_VALUE = "Bearer hdr-secret-7f3a9c1e5b";
      const logs = capturedLogs();
      let failures = 2;
      // A gateway that says which key it refused: what it echoes back is recorded without the secret.
      const receiver = await startReceiver((post) =>
        post.path === "/headers" && failures-- > 0
          ? { status: 503, body: `refused key ${String(post.headers["authorization"])}` }
          : {},
      );
      const harness = await startHarness(factory, { driver, logger: logs.logger });
      open.push(harness, receiver);
      await harness.accounts("acc_alice");
      const created = await harness.call("POST", "/v3/webhooks", {
        account: "acc_alice",
        body: {
          url: `${receiver.url}/headers`,
          events: ["account.updated"],
          headers: { "X-Team": "billing", Authorization: { value: SECRET_VALUE, secret: true } },
        },
      });
      expect(created.status, created.text).toBe(201);
      expect(created.body.headers).toEqual({ "X-Team": "billing", Authorization: { secret: true } });
      const hook = created.body as { id: string };
      await touchAlice(harness);
      // Two 503s, then the delivery: each attempt carries both headers.
      const posts = await receiver.waitFor(3);
      expect(posts.map((post) => post.headers["hooklane-attempt"])).toEqual(["1", "2", "3"]);
      for (const post of posts) {
        expect(post.headers["x-team"]).toBe("billing");
        expect(post.headers["authorization"]).toBe(SECRET_VALUE);
      }

      // Renamed one, kept the secret without sending it: the next event carries the new value and the same secret.
      const updated = await harness.call("PATCH", `/v3/webhooks/${hook.id}`, {
        account: "acc_alice",
        body: { headers: { "X-Team": "ops", Authorization: { secret: true } } },
      });
      expect(updated.status, updated.text).toBe(200);
      expect(updated.body.headers).toEqual({ "X-Team": "ops", Authorization: { secret: true } });
      await touchAlice(harness);
      const [next] = (await receiver.waitFor(4)).slice(3);
      expect(next!.headers["x-team"]).toBe("ops");
      expect(next!.headers["authorization"]).toBe(SECRET_VALUE);

      // The secret again, with a new value, and the URL to another origin: it must be given again to follow it.
      const moved = await harness.call("PATCH", `/v3/webhooks/${hook.id}`, {
        account: "acc_alice",
        body: { url: `${receiver.url.replace("127.0.0.1", "localhost")}/headers` },
      });
      expect(moved.status, moved.text).toBe(422);
      expect(moved.text).toContain("Authorization");
      const rekeyed = await harness.call("PATCH", `/v3/webhooks/${hook.id}`, {
        account: "acc_alice",
        body: { headers: { "X-Team": "ops", Authorization: { value: `${SECRET_VALUE}-2`, secret: true } } },
      });
      expect(rekeyed.status, rekeyed.text).toBe(200);

      // Refused: names the delivery owns, values that could start another header, too many, a secret to keep that
      // was never stored. Each 422 names the header.
      const refused = {
        "Content-Type": "text/plain",
        Host: "example.com",
        "Hooklane-Signature": "t=1,v1=00",
        "webhook-id": "msg_1",
        Connection: "close",
        "X-Bad": "a\r\nX-Injected: 1",
      };
      for (const [name, value] of Object.entries(refused)) {
        const answer = await harness.call("PATCH", `/v3/webhooks/${hook.id}`, {
          account: "acc_alice",
          body: { headers: { [name]: value } },
        });
        expect(answer.status, `${name}: ${answer.text}`).toBe(422);
        expect(answer.text, name).toContain(name);
      }
      const tooMany = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, "v"]));
      const many = await harness.call("PATCH", `/v3/webhooks/${hook.id}`, {
        account: "acc_alice",
        body: { headers: tooMany },
      });
      expect(many.status, many.text).toBe(422);
      const unknownSecret = await harness.call("PATCH", `/v3/webhooks/${hook.id}`, {
        account: "acc_alice",
        body: { headers: { "X-Api-Key": { secret: true } } },
      });
      expect(unknownSecret.status, unknownSecret.text).toBe(422);
      expect(unknownSecret.text).toContain("X-Api-Key");

      // Nowhere after creation: not in the webhook, the list, the audit log or the delivery log, nor any log line.
      const [first] = await dispatchesOf(harness, hook.id);
      const answers = await Promise.all(
        [
          `/v3/webhooks/${hook.id}`,
          "/v3/webhooks",
          `/v3/webhooks/${hook.id}/dispatches`,
          `/v3/webhook-dispatches/${first!.id}`,
        ].map((path) => harness.call("GET", path, { account: "acc_alice" })),
      );
      // The gateway's answer is there, the key it echoed is not.
      expect(answers[3]!.text).toContain("refused key [redacted]");
      const audit = await harness.call("GET", "/v3/audit-log", { account: "acc_alice" });
      for (const answer of [...answers, audit]) {
        expect(answer.status, answer.text).toBe(200);
        expect(answer.text).not.toContain("hdr-secret");
      }
      expect(audit.text).toContain(hook.id);
      expect(logs.lines.length).toBeGreaterThan(0);
      expect(logs.lines.filter((line) => JSON.stringify(line).includes("hdr-secret"))).toEqual([]);
      const [stored] = await harness.hooklane.database.db.select().from(webhook).where(eq(webhook.id, hook.id));
      expect(JSON.stringify(stored!.headers)).not.toContain("hdr-secret");
    });

    it("routes to a filtered webhook only the events whose attributes match, numbering only those", async () => {
      const { harness, receiver } = await setUp();
      await harness.accounts("acc_alice");
      const debtEvents = ["payment-debt.created", "payment-debt.updated"];
      const refused = async (body: Record<string, unknown>, field: string) => {
        const response = await harness.call("POST", "/v3/webhooks", {
          account: "acc_alice",
          body: { url: `${receiver.url}/refused`, ...body },
        });
        expect(response.status, response.text).toBe(422);
        expect(response.body.errors[0].field).toBe("filter");
        expect(response.body.detail).toContain(field);
        return response.body.detail as string;
      };
      expect(await refused({ events: debtEvents, filter: 'currency in ["EUR"' }, "position 19")).toContain('"]"');
      expect(await refused({ events: debtEvents, filter: 'currency == "EUR" plan' }, "position 19")).toBeTruthy();
      // An attribute some type it hears does not declare: named with the type.
      await refused(
        { events: debtEvents, filter: 'plan == "pro"' },
        '"plan" is not an attribute of payment-debt.created',
      );
      await refused({ events: ["*"], filter: 'currency == "EUR"' }, "account.");

      const eur = await subscribe(
        harness,
        receiver,
        "/eur",
        { account: "acc_alice" },
        {
          events: debtEvents,
          filter: 'currency in ["EUR"]',
        },
      );
      const paid = await subscribe(
        harness,
        receiver,
        "/paid",
        { account: "acc_alice" },
        {
          events: ["payment-debt.updated"],
          filter: 'status == "paid" and not currency == "GBP"',
        },
      );
      const all = await subscribe(harness, receiver, "/all", { account: "acc_alice" }, { events: debtEvents });
      expect((await harness.call("GET", `/v3/webhooks/${eur.id}`, { account: "acc_alice" })).body.filter).toBe(
        'currency in ["EUR"]',
      );
      // New events held to the filter kept: subscription.created declares no currency.
      const widened = await harness.call("PATCH", `/v3/webhooks/${eur.id}`, {
        account: "acc_alice",
        body: { events: [...debtEvents, "subscription.created"] },
      });
      expect(widened.status, widened.text).toBe(422);
      expect(widened.body.detail).toContain("subscription.created");

      const currencies = ["EUR", "USD", "GBP", "EUR", "USD", "GBP", "EUR", "EUR", "USD"];
      const debts: Array<{ id: string; currency: string }> = [];
      for (const currency of currencies) {
        const response = await harness.call("POST", "/v3/payment-debts", {
          account: "acc_alice",
          body: { amount: "1.00", currency },
        });
        expect(response.status, response.text).toBe(201);
        debts.push(response.body);
      }
      // Paid: one EUR, one USD, one GBP (the GBP one is filtered out of /paid by its `not`).
      for (const debt of [debts[0]!, debts[1]!, debts[2]!]) {
        const response = await harness.call("PATCH", `/v3/payment-debts/${debt.id}`, {
          account: "acc_alice",
          body: { status: "paid" },
        });
        expect(response.status, response.text).toBe(200);
      }
      await harness.settled();
      await receiver.waitFor(4 + 1 + 2 + 9 + 3);
      const seen = (path: string) =>
        receiver.posts
          .filter((post) => post.path === path)
          .map((post) => JSON.parse(post.body) as { type: string; sequence: number; data: { id: string } })
          .sort((a, b) => a.sequence - b.sequence);
      const eurIds = new Set(debts.filter((debt) => debt.currency === "EUR").map((debt) => debt.id));
      const eurSeen = seen("/eur");
      expect(eurSeen.map((event) => event.type).sort()).toEqual([
        ...Array(4).fill("payment-debt.created"),
        "payment-debt.updated",
      ]);
      expect(eurSeen.every((event) => eurIds.has(event.data.id))).toBe(true);
      // A filtered-out event takes no number: the filtered stream has no gaps.
      expect(eurSeen.map((event) => event.sequence)).toEqual([1, 2, 3, 4, 5]);
      expect(
        seen("/paid")
          .map((event) => event.data.id)
          .sort(),
      ).toEqual([debts[0]!.id, debts[1]!.id].sort());
      expect(seen("/all")).toHaveLength(12);
      expect(await dispatchesOf(harness, eur.id)).toHaveLength(5);
      expect(await dispatchesOf(harness, paid.id)).toHaveLength(2);
      expect(await dispatchesOf(harness, all.id)).toHaveLength(12);

      // Previewed over what the delivery log holds: 9 debts opened and 3 paid, each counted once.
      const preview = async (filter: string) =>
        harness.call("POST", "/v3/webhooks/filter-preview", {
          account: "acc_alice",
          body: { events: debtEvents, filter },
        });
      expect((await preview('currency in ["EUR"]')).body).toEqual({
        object: "webhook-filter-preview",
        matched: 5,
        of: 12,
      });
      expect((await preview('status == "paid"')).body).toMatchObject({ matched: 3, of: 12 });
      const unparsed = await preview('status == "paid" or');
      expect(unparsed.status, unparsed.text).toBe(422);
      expect(unparsed.body.detail).toContain("position 20");

      // The filter removed: every event again.
      const cleared = await harness.call("PATCH", `/v3/webhooks/${eur.id}`, {
        account: "acc_alice",
        body: { filter: null },
      });
      expect(cleared.status, cleared.text).toBe(200);
      expect(cleared.body.filter).toBeNull();
      const usd = await harness.call("POST", "/v3/payment-debts", {
        account: "acc_alice",
        body: { amount: "2.00", currency: "USD" },
      });
      expect(usd.status, usd.text).toBe(201);
      await harness.settled();
      const late = await eventually(
        async () => seen("/eur").filter((event) => event.data.id === usd.body.id),
        (events) => events.length === 1,
        { timeoutMs: 10_000 },
      );
      expect(late[0]!.sequence).toBe(6);
    });

    it("signs with two v1 values during a rotation, each verifiable by the stripe SDK", async () => {
      const { harness, receiver } = await setUp();
      await harness.accounts("acc_alice");
      const hook = await subscribe(harness, receiver, "/hook", { account: "acc_alice" });
      const next = generateWebhookSecret();
      await harness.hooklane.database.db
        .update(webhook)
        .set({
          secretSealed: await harness.hooklane.secrets.seal(next),
          previousSecretSealed: await harness.hooklane.secrets.seal(hook.secret),
          previousSecretExpiresAt: new Date(Date.now() + 86_400_000),
        })
        .where(eq(webhook.id, hook.id));
      await touchAlice(harness);
      const [post] = await receiver.waitFor(1);
      const header = String(post!.headers["hooklane-signature"]);
      expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
      for (const secret of [next, hook.secret]) {
        expect(stripe.webhooks.constructEvent(post!.body, header, secret).id).toBe(post!.headers["hooklane-event-id"]);
      }
      expect(() => stripe.webhooks.constructEvent(post!.body, header, generateWebhookSecret())).toThrow();
    });

    it("rotates with the grace asked for: 0 stops the old secret at once, 2 h keeps both until expired now", async () => {
      const { harness, receiver } = await setUp();
      await harness.accounts("acc_alice");
      const hook = await subscribe(
        harness,
        receiver,
        "/hook",
        { account: "acc_alice" },
        { events: ["account.updated"] },
      );
      const rotate = async (body?: unknown) => {
        const response = await harness.call("POST", `/v3/webhooks/${hook.id}/rotate-secret`, {
          account: "acc_alice",
          ...(body === undefined ? {} : { body }),
        });
        expect(response.status, response.text).toBe(200);
        return response.body as { secret: string; previousSecretExpires: string | null };
      };
      const verifies = (post: ReceivedPost, secret: string) => {
        try {
          return stripe.webhooks.constructEvent(post.body, String(post.headers["hooklane-signature"]), secret).id;
        } catch {
          return undefined;
        }
      };
      const delivered = async (count: number) => {
        await touchAlice(harness);
        return (await receiver.waitFor(count)).at(-1)!;
      };

      // A leak: grace 0. The next attempt is signed by the new secret alone.
      const leaked = hook.secret;
      const first = await rotate({ grace: 0 });
      expect(first.previousSecretExpires).toBeNull();
      const afterLeak = await delivered(1);
      expect(String(afterLeak.headers["hooklane-signature"])).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(verifies(afterLeak, first.secret)).toBe(afterLeak.headers["hooklane-event-id"]);
      expect(verifies(afterLeak, leaked)).toBeUndefined();

      // A planned switch: 2 h. Both sign until then, and the API says until when.
      const before = Date.now();
      const second = await rotate({ grace: 7_200 });
      const until = Date.parse(second.previousSecretExpires!);
      expect(until).toBeGreaterThanOrEqual(before + 7_200_000 - 5_000);
      expect(until).toBeLessThanOrEqual(Date.now() + 7_200_000 + 5_000);
      const during = await delivered(2);
      expect(verifies(during, second.secret)).toBe(during.headers["hooklane-event-id"]);
      expect(verifies(during, first.secret)).toBe(during.headers["hooklane-event-id"]);

      // Ended early: from the next attempt only the current secret signs.
      const expired = await harness.call("POST", `/v3/webhooks/${hook.id}/expire-previous-secret`, {
        account: "acc_alice",
      });
      expect(expired.status, expired.text).toBe(200);
      expect(expired.body.previousSecretExpires).toBeNull();
      const after = await delivered(3);
      expect(verifies(after, second.secret)).toBe(after.headers["hooklane-event-id"]);
      expect(verifies(after, first.secret)).toBeUndefined();

      // No grace given: the 24 h default. Each step is in the audit log, the grace with it.
      const third = await rotate();
      expect(Date.parse(third.previousSecretExpires!) - Date.now()).toBeGreaterThan(86_400_000 - 60_000);
      const audit = await harness.call("GET", "/v3/audit-log?limit=100", { account: "acc_alice" });
      expect(audit.status, audit.text).toBe(200);
      const steps = (audit.body.data as Array<{ action: string; target: string; detail: unknown }>)
        .filter((entry) => entry.target === hook.id && entry.action !== "webhook.created")
        .reverse()
        .map((entry) => [entry.action, entry.detail]);
      expect(steps).toEqual([
        ["webhook.secret-rotated", { graceSeconds: 0 }],
        ["webhook.secret-rotated", { graceSeconds: 7_200 }],
        ["webhook.previous-secret-expired", {}],
        ["webhook.secret-rotated", { graceSeconds: 86_400 }],
      ]);
      const refused = await harness.call("POST", `/v3/webhooks/${hook.id}/rotate-secret`, {
        account: "acc_alice",
        body: { grace: 8 * 86_400 },
      });
      expect(refused.status, refused.text).toBe(422);
      expect(refused.body.errors[0].field).toBe("grace");
    });

    it("writes no queue message and no row when nobody subscribes to the event", async () => {
      const { harness, receiver } = await setUp({ lane: false });
      await harness.accounts("acc_alice");
      await subscribe(harness, receiver, "/hook", { account: "acc_alice" }, { events: ["subscription.created"] });
      await touchAlice(harness);
      for (let i = 0; i < 5; i++) {
        const response = await harness.call("POST", "/v3/payment-debts", {
          account: "acc_alice",
          body: { amount: 1, currency: "usd" },
        });
        expect(response.status).toBe(201);
      }
      await harness.settled();
      const { db } = harness.hooklane.database;
      expect(harness.hooklane.transport.sent).toMatchObject({ route: 0, deliver: 0 });
      expect(harness.hooklane.publisher.stats).toMatchObject({ published: 0, unsubscribed: 6 });
      expect((await db.select({ n: count() }).from(webhookRouteJob))[0]!.n).toBe(0);
      expect((await db.select({ n: count() }).from(webhookDispatch))[0]!.n).toBe(0);
    });

    it("answers 422 for an account that does not exist, keeping neither the resource nor an event", async () => {
      const { harness, receiver } = await setUp({ lane: false });
      await harness.accounts("acc_alice");
      await subscribe(harness, receiver, "/g", { ...ADMIN }, { scope: "global" });
      const response = await harness.call("POST", "/v3/payment-debts", {
        ...ADMIN,
        body: { amount: 1, currency: "usd", account: "acc_nobody" },
      });
      expect(response.status, JSON.stringify(response.body)).toBe(422);
      expect(response.body).toMatchObject({ errors: [{ field: "account", message: "no such account" }] });
      const { db } = harness.hooklane.database;
      expect((await db.select({ n: count() }).from(paymentDebt))[0]!.n).toBe(0);
      expect((await db.select({ n: count() }).from(webhookRouteJob))[0]!.n).toBe(0);
      // The connection it ran on is clean: the next request commits.
      const created = await harness.call("POST", "/v3/payment-debts", {
        ...ADMIN,
        body: { amount: 1, currency: "usd", account: "acc_alice" },
      });
      expect(created.status).toBe(201);
    });

    it("answers 5xx and keeps neither the resource nor an event when the outbox row cannot be written", async () => {
      const { harness, receiver } = await setUp();
      await harness.accounts("acc_alice");
      await subscribe(harness, receiver, "/hook", { account: "acc_alice" });
      const { database } = harness.hooklane;
      await database.rows(sql`
        create function refuse_route_job() returns trigger language plpgsql
        as $$ begin raise exception 'the outbox refuses this row'; end $$
      `);
      await database.rows(sql`
        create trigger refuse_route_job before insert on webhook_route_job
        for each row execute function refuse_route_job()
      `);
      const debt = { account: "acc_alice", body: { amount: 1, currency: "usd" } };
      const refused = await harness.call("POST", "/v3/payment-debts", debt);
      expect(refused.status).toBe(500);
      await harness.settled();
      expect((await database.db.select({ n: count() }).from(paymentDebt))[0]!.n).toBe(0);
      expect((await database.db.select({ n: count() }).from(webhookRouteJob))[0]!.n).toBe(0);

      await database.rows(sql`drop trigger refuse_route_job on webhook_route_job`);
      const created = await harness.call("POST", "/v3/payment-debts", debt);
      expect(created.status).toBe(201);
      const [post] = await receiver.waitFor(1);
      // The one event delivered is the committed mutation's.
      expect(JSON.parse(post!.body).data.id).toBe((created.body as { id: string }).id);
      expect((await database.db.select({ n: count() }).from(paymentDebt))[0]!.n).toBe(1);
    });

    it("with ENABLE_API_EVENT_QUEUE=false does no catalogue or cache work and sends nothing", async () => {
      // The same calls against two APIs: publishing off, and on with a warm cache and nobody listening.
      const off = await setUp({ lane: false, env: { ENABLE_API_EVENT_QUEUE: "false" } });
      const on = await setUp({ lane: false });
      const queriesPerCall: number[][] = [];
      for (const { harness, receiver } of [off, on]) {
        await harness.accounts("acc_alice");
        await subscribe(harness, receiver, "/hook", { account: "acc_alice" }, { events: ["subscription.created"] });
        await touchAlice(harness);
        await harness.settled();
        const counts: number[] = [];
        for (let i = 0; i < 10; i++) {
          const before = harness.hooklane.database.queryCount;
          await harness.call("POST", "/v3/payment-debts", {
            account: "acc_alice",
            body: { amount: 1, currency: "usd" },
          });
          await harness.settled();
          counts.push(harness.hooklane.database.queryCount - before);
        }
        queriesPerCall.push(counts);
      }
      const { hooklane } = off.harness;
      expect(hooklane.publisher.enabled).toBe(false);
      expect(hooklane.publisher.stats).toEqual({ considered: 0, published: 0, unsubscribed: 0, failed: 0 });
      expect(hooklane.subscriptions.loads).toBe(0);
      expect(hooklane.transport.sent).toMatchObject({ route: 0, deliver: 0 });
      // Off, each call costs exactly the handler's own statements: the same as on with a warm cache.
      expect(queriesPerCall[0]).toEqual(queriesPerCall[1]);
      expect(on.harness.hooklane.subscriptions.loads).toBe(1);
      expect(off.receiver.posts.length).toBe(0);
    });

    it("numbers a webhook's events 1, 2, 3… once each, through retries, a pause, a recovery and a resend", async () => {
      const sequence = await setUpSequence(factory, driver);
      open.push(sequence);
      const figures = await sequenceDrill(sequence, 40);
      expect(figures).toMatchObject({ events: 40, firstReceipts: 40, duplicatesDropped: 40 });
      // GET /v3/events has the same stream, in order, with the bodies that were posted.
      const streamed = await readStream(sequence);
      expect(streamed.map((event) => event.sequence)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      const posted = new Set(sequence.receiver.posts.map((post) => post.body));
      expect(streamed.filter((event) => !posted.has(JSON.stringify(event)))).toEqual([]);
    }, 120_000);

    it("delivers each resource's events in order to a webhook with resource ordering, through failures", async () => {
      let calls = 0;
      const ordering = await setUpOrdering(factory, driver, () => (++calls % 3 === 0 ? 503 : 200));
      open.push(ordering);
      const debts = await paymentDebts(ordering, 4);
      await orderingWebhook(ordering, "/ordered", "resource");
      await updateEach(ordering, debts, 6);
      const runs = sequencesByResource(await delivered(ordering, "/ordered", 24));
      expect([...runs.values()].map((run) => run.length)).toEqual([6, 6, 6, 6]);
      expect([...runs.values()].filter((run) => run.some((n, i) => i > 0 && n < run[i - 1]!))).toEqual([]);
      expect([...ordering.answered.values()].filter((status) => status === 503).length).toBeGreaterThan(0);
    }, 120_000);

    it("creates no duplicate dispatch rows when the same route message is delivered again", async () => {
      const { harness, receiver } = await setUp({ lane: false });
      await harness.accounts("acc_alice");
      await subscribe(harness, receiver, "/a", { account: "acc_alice" });
      await subscribe(harness, receiver, "/g", { ...ADMIN }, { scope: "global" });
      await touchAlice(harness);
      const message = {
        eventId: "evt_redelivered_0001",
        type: "account.updated",
        resourceId: "acc_alice",
        occurredAt: new Date().toISOString(),
        livemode: true,
      };
      const deps = { database: harness.hooklane.database, transport: harness.hooklane.transport };
      expect((await handleRouteMessage(deps, message)).length).toBe(2);
      expect(await handleRouteMessage(deps, message)).toEqual([]);
      await Promise.all([handleRouteMessage(deps, message), handleRouteMessage(deps, message)]);
      const rows = await harness.hooklane.database.db
        .select({ n: count() })
        .from(webhookDispatch)
        .where(eq(webhookDispatch.eventId, message.eventId));
      expect(rows[0]!.n).toBe(2);
    });

    describe("failures, with a compressed schedule (100 ms between attempts)", () => {
      const until = (harness: Harness, webhookId: string, done: (rows: WebhookDispatch[]) => boolean) =>
        eventually(
          () => dispatchesOf(harness, webhookId),
          (rows) => rows.length > 0 && done(rows),
        );
      const attemptsOf = (harness: Harness, dispatchId: string) =>
        harness.hooklane.database.db
          .select()
          .from(webhookAttempt)
          .where(eq(webhookAttempt.dispatchId, dispatchId))
          .orderBy(webhookAttempt.attempt);

      it("fails 503 + Retry-After, 302, timeouts and refused connections; exhausts after 6 attempts with the same event and body", async () => {
        const closedPort = await (async () => {
          const probe = await startReceiver();
          const url = probe.url;
          await probe.close();
          return url;
        })();
        const { harness, receiver } = await setUp({
          env: { WEBHOOK_TIMEOUT_MS: "300" },
          reply: (post): Reply => {
            if (post.path === "/unavailable") return { status: 503, headers: { "retry-after": "1" } };
            if (post.path === "/moved") return { status: 302, headers: { location: `${receiver.url}/elsewhere` } };
            if (post.path === "/slow") return { delayMs: 1_500 };
            return {};
          },
        });
        await harness.accounts("acc_alice");
        const hooks = {
          unavailable: await subscribe(harness, receiver, "/unavailable", { account: "acc_alice" }),
          moved: await subscribe(harness, receiver, "/moved", { account: "acc_alice" }),
          slow: await subscribe(harness, receiver, "/slow", { account: "acc_alice" }),
        };
        const refusedResponse = await harness.call("POST", "/v3/webhooks", {
          account: "acc_alice",
          body: { url: `${closedPort}/refused`, events: ["*"] },
        });
        const refused = refusedResponse.body as { id: string };
        await touchAlice(harness);
        await harness.settled();

        const expectedClass = {
          unavailable: "http_status",
          moved: "redirect",
          slow: "timeout",
          refused: "connection_refused",
        };
        for (const [name, hook] of Object.entries({ ...hooks, refused })) {
          const [dispatch] = await until(harness, hook.id, (rows) => rows.every((row) => row.status === "exhausted"));
          expect(dispatch!.attemptCount, name).toBe(6);
          const attempts = await attemptsOf(harness, dispatch!.id);
          expect(
            attempts.map((a) => a.attempt),
            name,
          ).toEqual([1, 2, 3, 4, 5, 6]);
          expect(new Set(attempts.map((a) => a.errorClass)), name).toEqual(
            new Set([expectedClass[name as keyof typeof expectedClass]]),
          );
          expect(
            attempts.map((a) => a.outcome),
            name,
          ).toEqual(["retry", "retry", "retry", "retry", "retry", "failed"]);
        }
        // Each owner hears about its exhausted dispatch (written just after the attempt is recorded).
        const notifications = await eventually(
          () =>
            harness.hooklane.database.db
              .select()
              .from(webhookNotification)
              .where(eq(webhookNotification.kind, "dispatch.exhausted")),
          (rows) => rows.length >= 4,
        );
        expect(notifications.map((n) => n.webhookId).sort()).toEqual(
          [hooks.unavailable.id, hooks.moved.id, hooks.slow.id, refused.id].sort(),
        );

        for (const path of ["/unavailable", "/moved", "/slow"]) {
          const posts = receiver.posts.filter((post) => post.path === path);
          expect(posts.length, path).toBe(6);
          expect(new Set(posts.map((post) => post.body)).size, path).toBe(1);
          expect(new Set(posts.map((post) => post.headers["hooklane-event-id"])).size, path).toBe(1);
          expect(
            posts.map((post) => post.headers["hooklane-attempt"]),
            path,
          ).toEqual(["1", "2", "3", "4", "5", "6"]);
        }
        // Retry-After: 1 was honoured between every pair of attempts, though the schedule says 100 ms.
        const times = receiver.posts.filter((post) => post.path === "/unavailable").map((post) => post.receivedAt);
        for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1_000);
        // The redirect was never followed.
        expect(receiver.posts.filter((post) => post.path === "/elsewhere")).toEqual([]);
      });

      it("turns an attempt that cannot be made (a secret that will not unseal) into an internal failure that waits a minute", async () => {
        const { harness, receiver } = await setUp();
        await harness.accounts("acc_alice");
        const hook = await subscribe(harness, receiver, "/sealed", { account: "acc_alice" });
        await harness.hooklane.database.db
          .update(webhook)
          .set({ secretSealed: "not.a.sealed.secret" })
          .where(eq(webhook.id, hook.id));
        await touchAlice(harness);
        const [dispatch] = await until(harness, hook.id, (rows) => rows[0]!.attemptCount === 1);
        expect(dispatch).toMatchObject({ status: "error", lastStatusCode: null });
        expect(dispatch!.nextAttemptAt.getTime() - Date.now()).toBeGreaterThan(50_000);
        // Released: its open row waits, unleased, for the retry.
        const [open] = await harness.hooklane.database.db
          .select()
          .from(webhookDispatchOpen)
          .where(eq(webhookDispatchOpen.dispatchId, dispatch!.id));
        expect(open).toMatchObject({ lockedBy: null, nextAttemptAt: dispatch!.nextAttemptAt });
        const [attempt] = await attemptsOf(harness, dispatch!.id);
        expect(attempt).toMatchObject({ outcome: "retry", errorClass: "internal", statusCode: null });
        expect(attempt!.errorMessage).toMatch(/could not be made/);
        expect(receiver.posts.length).toBe(0);
      });

      it("disables the webhook on 410 Gone, notifies its owner, and keeps the dispatch", async () => {
        const { harness, receiver } = await setUp({ reply: () => ({ status: 410 }) });
        await harness.accounts("acc_alice");
        const hook = await subscribe(harness, receiver, "/gone", { account: "acc_alice" });
        await touchAlice(harness);
        await receiver.waitFor(1);
        const [dispatch] = await until(harness, hook.id, (rows) => rows.every((row) => row.attemptCount === 1));
        const notes = await eventually(
          () =>
            harness.hooklane.database.db
              .select()
              .from(webhookNotification)
              .where(eq(webhookNotification.webhookId, hook.id)),
          (rows) => rows.length > 0,
        );
        expect(notes.map((note) => note.kind)).toEqual(["webhook.disabled"]);
        const [row] = await harness.hooklane.database.db.select().from(webhook).where(eq(webhook.id, hook.id));
        expect(row!.status).toBe("disabled");
        expect(dispatch!.status).toBe("error");
        // The dispatch is kept and due again after 100 ms, yet no claim takes it while the webhook is disabled.
        await eventually(
          () =>
            harness.hooklane.database.rows<{ due: boolean }>(
              sql`select next_attempt_at <= now() as due from webhook_dispatch where id = ${dispatch!.id}`,
            ),
          ([state]) => state?.due === true,
        );
        const claimed = await claimDispatches(harness.hooklane.database, {
          workerId: "probe",
          limit: 10,
          leaseMs: 1_000,
          caps: harness.hooklane.config.caps,
        });
        expect(claimed.dispatches.map((c) => c.id)).not.toContain(dispatch!.id);
        expect((await attemptsOf(harness, dispatch!.id)).length).toBe(1);
      });
    });
  });
}
