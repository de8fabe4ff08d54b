import { count } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhook } from "../../../lib/db/schema.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";

const ADMIN = { account: "acc_ops", admin: true };

describe("POST /v3/webhooks: who and where", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness(pgliteFactory, { lane: false });
  }, HARNESS_START_MS);
  afterAll(() => harness?.close());

  const create = (who: { account: string; admin?: boolean }, body: Record<string, unknown>) =>
    harness.call("POST", "/v3/webhooks", { ...who, body: { events: ["*"], ...body } });
  const webhooks = async () => (await harness.hooklane.database.db.select({ n: count() }).from(webhook))[0]!.n;

  it("refuses an account webhook for an account that does not exist, so it cannot wait for one to be created", async () => {
    const before = await webhooks();
    for (const who of [{ account: "acc_ghost" }, { account: "acc_ghost", admin: true }]) {
      const response = await create(who, { url: "http://localhost:4000/hook" });
      expect(response.status).toBe(422);
      expect(response.body).toMatchObject({
        code: "validation_failed",
        errors: [{ field: "account", message: "no such account" }],
      });
    }
    expect(await webhooks()).toBe(before);
    // Once the account exists, it may subscribe; a global webhook needs no account of its own.
    await harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id: "acc_ghost", name: "Ghost" } });
    expect((await create({ account: "acc_ghost" }, { url: "http://localhost:4000/hook" })).status).toBe(201);
    expect((await create(ADMIN, { url: "http://localhost:4000/all", scope: "global" })).status).toBe(201);
  });

  it.each(["invalid", "test", "example", "localhost", "onion", "alt"])(
    "refuses a callback on the special-use domain .%s, when created and when changed",
    async (tld) => {
      const url = `https://hooks.acme.${tld}/in`;
      const created = await create(ADMIN, { url, scope: "global" });
      expect(created.status).toBe(422);
      expect(created.body.errors).toEqual([
        { field: "url", message: expect.stringContaining(`.${tld} is a special-use`) },
      ]);
      const hook = await create(ADMIN, { url: "https://hooks.acme.com/in", scope: "global" });
      const changed = await harness.call("PATCH", `/v3/webhooks/${hook.body.id}`, { ...ADMIN, body: { url } });
      expect(changed.status).toBe(422);
    },
  );

  it("refuses account subscriptions to events no account owns, naming the event; a global webhook may hear them", async () => {
    await harness.call("POST", "/v3/accounts", { ...ADMIN, body: { id: "acc_scope", name: "Scope" } });
    const before = await webhooks();
    const globalOnly = ["payment-debt.purged", "subscription.purged", "general.address.created"];
    for (const name of globalOnly) {
      const events = ["payment-debt.created", name];
      const created = await create({ account: "acc_scope" }, { url: "http://localhost:4000/scope", events });
      expect(created.status).toBe(422);
      expect(created.body.errors).toEqual([
        {
          field: "events[1]",
          message: expect.stringContaining(`${name} belongs to no account, so only global webhooks`),
        },
      ]);
      const listen = await harness.call("POST", "/v3/listen-sessions", {
        account: "acc_scope",
        body: { events, forwardTo: "http://localhost:4000/listen" },
      });
      expect(listen.status).toBe(422);
    }
    expect(await webhooks()).toBe(before);
    // Changing an account webhook's events is checked the same way; `*` stays what the scope can hear.
    const hook = await create({ account: "acc_scope" }, { url: "http://localhost:4000/scope" });
    expect(hook.status).toBe(201);
    const changed = await harness.call("PATCH", `/v3/webhooks/${hook.body.id}`, {
      account: "acc_scope",
      body: { events: ["general.address.updated"] },
    });
    expect(changed.status).toBe(422);
    expect(changed.body.detail).toContain("events[0]: general.address.updated belongs to no account");
    const global = await create(ADMIN, { url: "http://localhost:4000/global", scope: "global", events: globalOnly });
    expect(global.status).toBe(201);
    expect(global.body.events).toEqual(globalOnly);
  });
});
