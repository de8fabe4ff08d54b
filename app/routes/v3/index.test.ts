import { describe, expect, it } from "vitest";
import { resourceRoutes } from "./index.ts";

describe("resourceRoutes", () => {
  const registered = resourceRoutes().routes.map((route) => `${route.method} ${route.path}`);

  it("registers every route with its full /v3 template", () => {
    expect(registered.length).toBeGreaterThan(0);
    for (const route of registered) expect(route).toMatch(/^[A-Z]+ \/v3\//);
  });
});
