import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Principal } from "../../../lib/auth/jwt.ts";
import { subscriptionHistory } from "../../../lib/db/schema.ts";
import { resourceTestApi, type ResourceTestApi } from "./resource-test-api.ts";

let api: ResourceTestApi;

beforeAll(async () => {
  api = await resourceTestApi();
});
afterAll(() => api.database.close());

async function createSubscription(principal: Principal, body: Record<string, unknown> = {}) {
  const response = await api.call(principal, "POST", "/v3/subscriptions", { plan: "pro", ...body });
  expect(response.status).toBe(201);
  return response.json();
}

const historyOf = (id: string) =>
  api.database.db.select().from(subscriptionHistory).where(eq(subscriptionHistory.subscription, id));

describe("POST /v3/subscriptions", () => {
  it("creates a subscription for the caller and emits subscription.created with its id", async () => {
    const created = await createSubscription(api.alice, { account: api.bob.account });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^sub_/),
      account: api.alice.account,
      plan: "pro",
      status: "active",
    });
    expect(api.events().at(-1)).toEqual({ type: "subscription.created", id: created.id });
  });

  it("lets an admin create one for another account", async () => {
    expect(await createSubscription(api.admin, { account: api.bob.account })).toMatchObject({
      account: api.bob.account,
    });
  });

  it("answers 422 naming the missing plan", async () => {
    const response = await api.call(api.alice, "POST", "/v3/subscriptions", { plan: "  " });
    expect(response.status).toBe(422);
    expect((await response.json()).errors.map((error: { field: string }) => error.field)).toEqual(["plan"]);
  });
});

describe("PATCH /v3/subscriptions/:id", () => {
  it("changes plan and status and emits subscription.updated", async () => {
    const created = await createSubscription(api.alice);
    const response = await api.call(api.alice, "PATCH", `/v3/subscriptions/${created.id}`, {
      plan: "team",
      status: "paused",
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: created.id, plan: "team", status: "paused" });
    expect(api.events().at(-1)).toEqual({ type: "subscription.updated", id: created.id });
  });

  it("answers 422 for an unknown status", async () => {
    const created = await createSubscription(api.alice);
    const response = await api.call(api.alice, "PATCH", `/v3/subscriptions/${created.id}`, { status: "gone" });
    expect(response.status).toBe(422);
    expect((await response.json()).errors.map((error: { field: string }) => error.field)).toEqual(["status"]);
  });
});

describe("DELETE /v3/subscriptions/:id", () => {
  it("deletes the subscription with its history and emits subscription.purged", async () => {
    const created = await createSubscription(api.alice);
    await api.call(api.alice, "POST", `/v3/subscriptions/${created.id}/history`, { change: "upgraded" });
    const response = await api.call(api.alice, "DELETE", `/v3/subscriptions/${created.id}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: created.id, object: "subscription", deleted: true });
    expect(api.events().at(-1)).toEqual({ type: "subscription.purged", id: created.id });
    expect(await historyOf(created.id)).toEqual([]);
    expect((await api.call(api.alice, "GET", `/v3/subscriptions/${created.id}`)).status).toBe(404);
  });
});

describe("another account's subscription", () => {
  it("answers 404 to every read and write and keeps the row and its history", async () => {
    const created = await createSubscription(api.bob);
    await api.call(api.bob, "POST", `/v3/subscriptions/${created.id}/history`, { change: "created" });
    const before = api.events().length;
    for (const [method, body] of [["GET"], ["PATCH", { plan: "free" }], ["DELETE"]] as const) {
      const response = await api.call(api.alice, method, `/v3/subscriptions/${created.id}`, body);
      expect(response.status).toBe(404);
    }
    expect(api.events()).toHaveLength(before);
    expect(await (await api.call(api.bob, "GET", `/v3/subscriptions/${created.id}`)).json()).toMatchObject({
      plan: "pro",
    });
    expect(await historyOf(created.id)).toHaveLength(1);
  });
});
