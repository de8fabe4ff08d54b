import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Principal } from "../../../lib/auth/jwt.ts";
import { resourceTestApi, type ResourceTestApi } from "./resource-test-api.ts";

let api: ResourceTestApi;

beforeAll(async () => {
  api = await resourceTestApi();
});
afterAll(() => api.database.close());

async function createAddress(principal: Principal) {
  const response = await api.call(principal, "POST", "/v3/general-addresses", {
    line1: "1 Main St",
    city: "Madrid",
    country: "es",
  });
  expect(response.status).toBe(201);
  return response.json();
}

describe("general addresses", () => {
  it("lets any caller create one and emits general.address.created with its id", async () => {
    const address = await createAddress(api.alice);
    expect(address).toMatchObject({
      id: expect.stringMatching(/^addr_/),
      line1: "1 Main St",
      city: "Madrid",
      country: "ES",
    });
    expect(api.events().at(-1)).toEqual({ type: "general.address.created", id: address.id });
  });

  it("belongs to no account: any caller updates it, emitting general.address.updated", async () => {
    const address = await createAddress(api.alice);
    const response = await api.call(api.bob, "PATCH", `/v3/general-addresses/${address.id}`, { city: "Sevilla" });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: address.id, city: "Sevilla", line1: "1 Main St" });
    expect(api.events().at(-1)).toEqual({ type: "general.address.updated", id: address.id });
  });

  it("deletes one and emits general.address.purged", async () => {
    const address = await createAddress(api.alice);
    const response = await api.call(api.alice, "DELETE", `/v3/general-addresses/${address.id}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: address.id, object: "general.address", deleted: true });
    expect(api.events().at(-1)).toEqual({ type: "general.address.purged", id: address.id });
    expect((await api.call(api.alice, "GET", `/v3/general-addresses/${address.id}`)).status).toBe(404);
  });

  it("answers 404 for an unknown address and emits nothing", async () => {
    const before = api.events().length;
    expect((await api.call(api.alice, "PATCH", "/v3/general-addresses/addr_nope", { city: "X" })).status).toBe(404);
    expect((await api.call(api.alice, "DELETE", "/v3/general-addresses/addr_nope")).status).toBe(404);
    expect(api.events()).toHaveLength(before);
  });

  it.each([
    [{ line1: "1 Main St", city: "Madrid", country: "ESP" }, ["country"]],
    [{ country: "ES" }, ["line1", "city"]],
  ])("answers 422 for %j naming %j", async (body, fields) => {
    const response = await api.call(api.alice, "POST", "/v3/general-addresses", body);
    expect(response.status).toBe(422);
    expect((await response.json()).errors.map((error: { field: string }) => error.field)).toEqual(fields);
  });

  it("answers 422 for an empty change", async () => {
    const address = await createAddress(api.alice);
    expect((await api.call(api.alice, "PATCH", `/v3/general-addresses/${address.id}`, {})).status).toBe(422);
  });
});
