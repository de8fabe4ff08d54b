import { describe, expect, it } from "vitest";
import { v3Routes } from "./index.ts";

describe("v3Routes", () => {
  const { app, operations } = v3Routes();
  const registered = app.routes.map((route) => `${route.method} ${route.path}`);

  it("registers every route with its full /v3 template, each one a described operation", () => {
    expect(registered.length).toBeGreaterThan(0);
    for (const route of registered) expect(route).toMatch(/^[A-Z]+ \/v3\//);
    expect(operations.map((spec) => `${spec.method.toUpperCase()} ${spec.path}`)).toEqual(registered);
  });
});
