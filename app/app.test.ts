import { describe, expect, it } from "vitest";
import type { Hooklane } from "../lib/hooklane.ts";
import { CATALOGUE_EXCLUSIONS } from "../lib/webhook/catalogue/catalogue-exclusions.ts";
import { CATALOGUE } from "../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { createApp } from "./app.ts";

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

describe("the app's routes and the catalogue", () => {
  // Routes are registered up front; the services are only read per request.
  const routes = createApp({} as Hooklane).routes;
  const mutating = [
    ...new Set(
      routes.filter((r) => MUTATING.has(r.method) && r.path.startsWith("/v3/")).map((r) => `${r.method} ${r.path}`),
    ),
  ];
  const catalogued = CATALOGUE.map((entry) => `${entry.method} ${entry.route}`);
  const excluded = CATALOGUE_EXCLUSIONS.map((entry) => `${entry.method} ${entry.route}`);

  it("gives every mutating v3 route exactly one catalogue entry or an explicit exclusion", () => {
    const uncovered = mutating.filter(
      (route) =>
        catalogued.filter((entry) => entry === route).length + excluded.filter((entry) => entry === route).length !== 1,
    );
    expect(uncovered).toEqual([]);
  });

  it("names only routes the app has, in entries and exclusions alike", () => {
    expect([...catalogued, ...excluded].filter((route) => !mutating.includes(route))).toEqual([]);
  });
});
