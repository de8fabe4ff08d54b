import { describe, expect, it } from "vitest";
import { sameSecret } from "./same-secret.ts";

const SECRET = "Bearer cron-secret-0123456789abcdef";

describe("sameSecret", () => {
  it("accepts the expected secret and nothing else", () => {
    expect(sameSecret(SECRET, SECRET)).toBe(true);
    for (const given of [
      "",
      SECRET.slice(0, -1),
      `${SECRET}x`,
      `${SECRET}\0`,
      `${SECRET} `,
      SECRET.toUpperCase(),
      SECRET.replace("0", "1"),
      `${SECRET}${"x".repeat(100_000)}`,
      "Bearer cron-secret-0123456789abcdeƒ",
    ]) {
      expect(sameSecret(given, SECRET), JSON.stringify(given.slice(0, 50))).toBe(false);
    }
  });

  it("compares the text as it is: no Unicode normalisation, no trimming", () => {
    expect(sameSecret("caf\u00e9", "cafe\u0301")).toBe(false);
    expect(sameSecret(" a", "a")).toBe(false);
    expect(sameSecret("", "")).toBe(true);
  });
});
