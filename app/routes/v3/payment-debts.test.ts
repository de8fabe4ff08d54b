import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Principal } from "../../../lib/auth/jwt.ts";
import { resourceTestApi, type ResourceTestApi, type TestResponse } from "./resource-test-api.ts";

let api: ResourceTestApi;

beforeAll(async () => {
  api = await resourceTestApi();
});
afterAll(() => api.database.close());

async function createDebt(principal: Principal, body: Record<string, unknown> = {}) {
  const response = await api.call(principal, "POST", "/v3/payment-debts", {
    amount: "10.00",
    currency: "EUR",
    ...body,
  });
  expect(response.status).toBe(201);
  return response.json();
}

const fieldsOf = async (response: TestResponse) =>
  (await response.json()).errors.map((error: { field: string }) => error.field);

describe("POST /v3/payment-debts", () => {
  it("creates a debt for the caller's account and emits payment-debt.created with its id", async () => {
    const debt = await createDebt(api.alice, { amount: "12.5", currency: "eur" });
    expect(debt).toMatchObject({
      id: expect.stringMatching(/^pd_/),
      account: api.alice.account,
      amount: "12.50",
      currency: "EUR",
      status: "open",
    });
    expect(api.events().at(-1)).toEqual({ type: "payment-debt.created", id: debt.id });
  });

  it("accepts the amount as a number", async () => {
    expect(await createDebt(api.alice, { amount: 7.5 })).toMatchObject({ amount: "7.50" });
  });

  it("ignores the account a non-admin names", async () => {
    expect(await createDebt(api.alice, { account: api.bob.account })).toMatchObject({ account: api.alice.account });
  });

  it("lets an admin create for any existing account", async () => {
    expect(await createDebt(api.admin, { account: api.bob.account })).toMatchObject({ account: api.bob.account });
    const unknown = await api.call(api.admin, "POST", "/v3/payment-debts", {
      amount: 1,
      currency: "EUR",
      account: "acc_nope",
    });
    expect(unknown.status).toBe(422);
    expect(await fieldsOf(unknown)).toEqual(["account"]);
  });

  it.each([
    [{ amount: "-1", currency: "EUR" }, ["amount"]],
    [{ amount: "0.00", currency: "EUR" }, ["amount"]],
    [{ amount: 1.234, currency: "EUR" }, ["amount"]],
    [{ amount: "1e3", currency: "EUR" }, ["amount"]],
    [{ amount: "5", currency: "EURO" }, ["currency"]],
    [{}, ["amount", "currency"]],
  ])("answers 422 for %j naming %j", async (body, fields) => {
    const before = api.events().length;
    const response = await api.call(api.alice, "POST", "/v3/payment-debts", body);
    expect(response.status).toBe(422);
    expect(await fieldsOf(response)).toEqual(fields);
    expect(api.events()).toHaveLength(before);
  });
});

describe("PATCH /v3/payment-debts/:id", () => {
  it("changes the status and emits payment-debt.updated", async () => {
    const debt = await createDebt(api.alice);
    const response = await api.call(api.alice, "PATCH", `/v3/payment-debts/${debt.id}`, { status: "paid" });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: debt.id, status: "paid", amount: "10.00" });
    expect(api.events().at(-1)).toEqual({ type: "payment-debt.updated", id: debt.id });
  });

  it("answers 422 for an unknown status", async () => {
    const debt = await createDebt(api.alice);
    const response = await api.call(api.alice, "PATCH", `/v3/payment-debts/${debt.id}`, { status: "forgiven" });
    expect(response.status).toBe(422);
    expect(await fieldsOf(response)).toEqual(["status"]);
  });
});

describe("DELETE /v3/payment-debts/:id", () => {
  it("deletes the row and emits payment-debt.purged", async () => {
    const debt = await createDebt(api.alice);
    const response = await api.call(api.alice, "DELETE", `/v3/payment-debts/${debt.id}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: debt.id, object: "payment-debt", deleted: true });
    expect(api.events().at(-1)).toEqual({ type: "payment-debt.purged", id: debt.id });
    expect((await api.call(api.alice, "GET", `/v3/payment-debts/${debt.id}`)).status).toBe(404);
  });
});

describe("another account's debt", () => {
  it("answers 404 to every read and write, touches nothing and emits nothing", async () => {
    const debt = await createDebt(api.bob);
    const before = api.events().length;
    for (const [method, body] of [["GET"], ["PATCH", { status: "void" }], ["DELETE"]] as const) {
      const response = await api.call(api.alice, method, `/v3/payment-debts/${debt.id}`, body);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ title: "Not Found", detail: "No such payment debt." });
    }
    expect(api.events()).toHaveLength(before);
    expect(await (await api.call(api.bob, "GET", `/v3/payment-debts/${debt.id}`)).json()).toMatchObject({
      status: "open",
    });
  });
});

describe("GET /v3/payment-debts", () => {
  it("lists the caller's debts, newest first; an admin sees every account's", async () => {
    const carol = await api.principalOf("carol");
    const older = await createDebt(carol, { amount: "1.00" });
    const newer = await createDebt(carol, { amount: "2.00" });
    await createDebt(api.bob);

    const mine = await (await api.call(carol, "GET", "/v3/payment-debts")).json();
    expect(mine.data.map((debt: { id: string }) => debt.id)).toEqual([newer.id, older.id]);

    const all = await (await api.call(api.admin, "GET", "/v3/payment-debts?limit=100")).json();
    const accounts = new Set(all.data.map((debt: { account: string }) => debt.account));
    expect(accounts).toEqual(new Set([api.alice.account, api.bob.account, carol.account]));
  });

  it("answers 422 for a limit out of range", async () => {
    const response = await api.call(api.alice, "GET", "/v3/payment-debts?limit=1000");
    expect(response.status).toBe(422);
    expect(await fieldsOf(response)).toEqual(["limit"]);
  });
});
