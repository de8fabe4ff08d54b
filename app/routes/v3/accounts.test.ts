import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resourceTestApi, type ResourceTestApi } from "./resource-test-api.ts";

let api: ResourceTestApi;

beforeAll(async () => {
  api = await resourceTestApi();
});
afterAll(() => api.database.close());

describe("POST /v3/accounts", () => {
  it("lets an admin create an account and emits account.created with its id", async () => {
    const response = await api.call(api.admin, "POST", "/v3/accounts", { name: "Acme", email: "ops@acme.test" });
    expect(response.status).toBe(201);
    const body = await response.json();
    expect(body).toMatchObject({ id: expect.stringMatching(/^acc_/), name: "Acme", email: "ops@acme.test" });
    expect(api.events().at(-1)).toEqual({ type: "account.created", id: body.id });
  });

  it("keeps an id chosen by the admin and answers 409 when it is taken", async () => {
    const first = await api.call(api.admin, "POST", "/v3/accounts", { id: "acc_mirror_1", name: "Mirror" });
    expect(first.status).toBe(201);
    expect(await first.json()).toMatchObject({ id: "acc_mirror_1" });
    const before = api.events().length;
    const again = await api.call(api.admin, "POST", "/v3/accounts", { id: "acc_mirror_1", name: "Mirror" });
    expect(again.status).toBe(409);
    expect(api.events()).toHaveLength(before);
  });

  it("answers 403 to a caller who is not an admin", async () => {
    const before = api.events().length;
    const response = await api.call(api.alice, "POST", "/v3/accounts", { name: "Sneaky" });
    expect(response.status).toBe(403);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(api.events()).toHaveLength(before);
  });

  it("answers 422 naming each bad field", async () => {
    const response = await api.call(api.admin, "POST", "/v3/accounts", { email: "not-an-email" });
    expect(response.status).toBe(422);
    const fields = (await response.json()).errors.map((error: { field: string }) => error.field);
    expect(fields).toEqual(expect.arrayContaining(["name", "email"]));
  });
});

describe("PATCH /v3/accounts/:id", () => {
  it("lets an account update itself and emits account.updated", async () => {
    const response = await api.call(api.alice, "PATCH", `/v3/accounts/${api.alice.account}`, {
      email: "alice@example.test",
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: api.alice.account, name: "alice", email: "alice@example.test" });
    expect(api.events().at(-1)).toEqual({ type: "account.updated", id: api.alice.account });
  });

  it("answers 404 for another account and leaves it unchanged", async () => {
    const response = await api.call(api.alice, "PATCH", `/v3/accounts/${api.bob.account}`, { name: "pwned" });
    expect(response.status).toBe(404);
    const bobAsSeenByAdmin = await api.call(api.admin, "GET", `/v3/accounts/${api.bob.account}`);
    expect(await bobAsSeenByAdmin.json()).toMatchObject({ name: "bob" });
  });

  it("answers 422 for an empty change", async () => {
    const response = await api.call(api.alice, "PATCH", `/v3/accounts/${api.alice.account}`, {});
    expect(response.status).toBe(422);
    expect((await response.json()).errors).toEqual([{ field: "(body)", message: "must change at least one field" }]);
  });
});

describe("GET /v3/accounts/:id", () => {
  it("shows an account to itself and to admins only", async () => {
    expect((await api.call(api.bob, "GET", `/v3/accounts/${api.bob.account}`)).status).toBe(200);
    expect((await api.call(api.admin, "GET", `/v3/accounts/${api.bob.account}`)).status).toBe(200);
    const other = await api.call(api.alice, "GET", `/v3/accounts/${api.bob.account}`);
    expect(other.status).toBe(404);
    expect(JSON.stringify(await other.json())).not.toContain("bob");
  });
});
