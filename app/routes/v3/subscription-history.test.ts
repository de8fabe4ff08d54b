import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resourceTestApi, type ResourceTestApi } from "./resource-test-api.ts";

let api: ResourceTestApi;
let alicesSubscription: string;

beforeAll(async () => {
  api = await resourceTestApi();
  const response = await api.call(api.alice, "POST", "/v3/subscriptions", { plan: "pro" });
  alicesSubscription = (await response.json()).id;
});
afterAll(() => api.database.close());

describe("POST /v3/subscriptions/:id/history", () => {
  it("records a change and emits subscription.history.created with the new entry's id", async () => {
    const response = await api.call(api.alice, "POST", `/v3/subscriptions/${alicesSubscription}/history`, {
      change: "upgraded",
    });
    expect(response.status).toBe(201);
    const entry = await response.json();
    expect(entry).toMatchObject({
      id: expect.stringMatching(/^sh_/),
      subscription: alicesSubscription,
      change: "upgraded",
    });
    expect(api.events().at(-1)).toEqual({ type: "subscription.history.created", id: entry.id });
  });

  it("answers 422 naming the missing change", async () => {
    const response = await api.call(api.alice, "POST", `/v3/subscriptions/${alicesSubscription}/history`, {});
    expect(response.status).toBe(422);
    expect((await response.json()).errors.map((error: { field: string }) => error.field)).toEqual(["change"]);
  });

  it("answers 404 for an unknown subscription", async () => {
    const response = await api.call(api.alice, "POST", "/v3/subscriptions/sub_nope/history", { change: "x" });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ detail: "No such subscription." });
  });
});

describe("GET /v3/subscriptions/:id/history", () => {
  it("lists the entries newest first, in cursor pages", async () => {
    await api.call(api.alice, "POST", `/v3/subscriptions/${alicesSubscription}/history`, { change: "downgraded" });
    const response = await api.call(api.alice, "GET", `/v3/subscriptions/${alicesSubscription}/history`);
    expect(response.status).toBe(200);
    const { data } = await response.json();
    expect(data.map((entry: { change: string }) => entry.change)).toEqual(["downgraded", "upgraded"]);
    const first = await (
      await api.call(api.alice, "GET", `/v3/subscriptions/${alicesSubscription}/history?limit=1`)
    ).json();
    expect(first.data.map((entry: { change: string }) => entry.change)).toEqual(["downgraded"]);
    const path = `/v3/subscriptions/${alicesSubscription}/history?limit=1&cursor=${first.nextCursor}`;
    const second = await (await api.call(api.alice, "GET", path)).json();
    expect(second).toMatchObject({ object: "list", data: [{ change: "upgraded" }], nextCursor: null });
  });
});

describe("another account's subscription history", () => {
  it("answers 404 to reads and writes and records nothing", async () => {
    const before = api.events().length;
    const write = await api.call(api.bob, "POST", `/v3/subscriptions/${alicesSubscription}/history`, {
      change: "hijacked",
    });
    expect(write.status).toBe(404);
    expect((await api.call(api.bob, "GET", `/v3/subscriptions/${alicesSubscription}/history`)).status).toBe(404);
    expect(api.events()).toHaveLength(before);
    const { data } = await (await api.call(api.alice, "GET", `/v3/subscriptions/${alicesSubscription}/history`)).json();
    expect(data.map((entry: { change: string }) => entry.change)).not.toContain("hijacked");
  });
});
