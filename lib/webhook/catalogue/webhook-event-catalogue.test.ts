import { describe, expect, it } from "vitest";
import { CATALOGUE, catalogueByInternal, catalogueByRoute } from "./webhook-event-catalogue.ts";

describe("webhook event catalogue", () => {
  it("finds the event a method and route template emit", () => {
    expect(catalogueByRoute("POST", "/v3/payment-debts")?.internal).toBe("payment-debt.created");
    expect(catalogueByRoute("DELETE", "/v3/payment-debts/:id")).toMatchObject({
      internal: "payment-debt.purged",
      idFrom: { source: "param", name: "id" },
      owner: { kind: "none" },
    });
    expect(catalogueByRoute("POST", "/v3/subscriptions/:id/history")).toMatchObject({
      internal: "subscription.history.created",
      idFrom: { source: "body", name: "id" },
      owner: { kind: "via", table: "subscription_history", reference: "subscription", parentTable: "subscription" },
    });
  });

  it("finds nothing for a read, an unknown route or a concrete path", () => {
    expect(catalogueByRoute("GET", "/v3/payment-debts/:id")).toBeUndefined();
    expect(catalogueByRoute("POST", "/v3/nothing")).toBeUndefined();
    expect(catalogueByRoute("PATCH", "/v3/payment-debts/pd_123")).toBeUndefined();
  });

  it("finds an event by its internal name", () => {
    expect(catalogueByInternal("account.created")).toMatchObject({
      method: "POST",
      route: "/v3/accounts",
      owner: { kind: "self" },
    });
    expect(catalogueByInternal("account.deleted")).toBeUndefined();
  });

  it("lists every event once, sorted by internal name, each reachable both ways", () => {
    const internals = CATALOGUE.map((entry) => entry.internal);
    expect(internals).toEqual(internals.toSorted());
    expect(new Set(internals).size).toBe(CATALOGUE.length);
    for (const entry of CATALOGUE) {
      expect(catalogueByInternal(entry.internal)).toBe(entry);
      expect(catalogueByRoute(entry.method, entry.route)).toBe(entry);
    }
  });
});
