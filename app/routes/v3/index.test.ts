import { describe, expect, it } from "vitest";
import { CATALOGUE } from "../../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { resourceRoutes } from "./index.ts";

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

describe("resourceRoutes and the catalogue", () => {
  const registered = resourceRoutes().routes.map((route) => `${route.method} ${route.path}`);
  const catalogued = CATALOGUE.map((entry) => `${entry.method} ${entry.route}`);

  it("registers every route with its full /v3 template", () => {
    expect(registered.length).toBeGreaterThan(0);
    for (const route of registered) expect(route).toMatch(/^[A-Z]+ \/v3\//);
  });

  it("gives every mutating route exactly one catalogue entry", () => {
    const mutating = registered.filter((route) => MUTATING.has(route.split(" ")[0]!));
    const missing = mutating.filter((route) => catalogued.filter((entry) => entry === route).length !== 1);
    expect(missing).toEqual([]);
  });

  it("names a registered route in every catalogue entry", () => {
    expect(catalogued.filter((entry) => !registered.includes(entry))).toEqual([]);
  });
});
