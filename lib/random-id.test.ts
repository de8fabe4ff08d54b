import { describe, expect, it } from "vitest";
import { randomBase64url } from "./random-id.ts";

describe("pooled random ids", () => {
  it("never hands the same bytes out twice, across refills of the pool", () => {
    const ids = Array.from({ length: 2_000 }, () => randomBase64url(15));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => /^[A-Za-z0-9_-]{20}$/.test(id))).toBe(true);
  });
});
