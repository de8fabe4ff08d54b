import { describe, expect, it } from "vitest";
import { JSON_DEPTH_LIMIT, nestsDeeperThan } from "./json-depth.ts";

const nested = (depth: number, open = "[", close = "]") => `${open.repeat(depth)}${close.repeat(depth)}`;

describe("nestsDeeperThan", () => {
  it("counts arrays and objects alike, up to the limit and one past it", () => {
    expect(nestsDeeperThan(nested(JSON_DEPTH_LIMIT), JSON_DEPTH_LIMIT)).toBe(false);
    expect(nestsDeeperThan(nested(JSON_DEPTH_LIMIT + 1), JSON_DEPTH_LIMIT)).toBe(true);
    expect(nestsDeeperThan(`${'{"a":'.repeat(3)}1}}}`, 3)).toBe(false);
    expect(nestsDeeperThan(`${'{"a":['.repeat(2)}1]}]}`, 3)).toBe(true);
    // Siblings do not add up.
    expect(nestsDeeperThan(`[${Array.from({ length: 1_000 }, () => nested(3)).join(",")}]`, 4)).toBe(false);
  });

  it("ignores brackets inside strings, escaped quotes and backslashes included", () => {
    expect(nestsDeeperThan(JSON.stringify({ note: "[[[[{{{{".repeat(100) }), 2)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify(['say "[[[[" now', "\\", '\\"[[[[']), 1)).toBe(false);
    expect(nestsDeeperThan(`["\\\\", [[["x"]]]]`, 3)).toBe(true);
    expect(nestsDeeperThan(`["\\"", [["x"]]]`, 3)).toBe(false);
  });

  it("stops at the first level too deep of a document far deeper than the stack", () => {
    expect(nestsDeeperThan("[".repeat(10_000_000), JSON_DEPTH_LIMIT)).toBe(true);
    expect(nestsDeeperThan(`"${"[".repeat(1_000)}`, 1)).toBe(false);
  });
});
