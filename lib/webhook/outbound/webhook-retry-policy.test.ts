import { describe, expect, it } from "vitest";
import { parseRetrySchedule } from "../../config/duration.ts";
import { decideRetry, parseRetryAfter, RETRY } from "./webhook-retry-policy.ts";

const now = Date.UTC(2026, 11, 2, 12, 0, 0);
const schedule = parseRetrySchedule(RETRY.defaultSchedule);

describe("decideRetry", () => {
  it("follows the published schedule: 5 s, 30 s, 5 min, 1 h, 24 h, then exhausted", () => {
    const delays = [1, 2, 3, 4, 5].map((attempt) => {
      const decision = decideRetry({ attempt, schedule, random: () => 0.5 });
      if (decision.kind !== "retry") throw new Error("expected a retry");
      return decision.delayMs;
    });
    expect(delays).toEqual([5_000, 30_000, 300_000, 3_600_000, 86_400_000]);
    expect(decideRetry({ attempt: 6, schedule })).toEqual({ kind: "exhausted" });
  });

  it("jitters each delay within ±10 %", () => {
    const at = (random: number) => {
      const decision = decideRetry({ attempt: 2, schedule, random: () => random });
      return decision.kind === "retry" ? decision.delayMs : NaN;
    };
    expect(at(0)).toBe(27_000);
    expect(at(0.999999)).toBeCloseTo(33_000, -1);
  });

  it("never retries before Retry-After, and caps it at 24 h", () => {
    const late = decideRetry({ attempt: 1, schedule, retryAfterMs: 120_000, random: () => 1 });
    expect(late.kind === "retry" && late.delayMs).toBe(120_000);
    const capped = decideRetry({ attempt: 1, schedule, retryAfterMs: 10 * 86_400_000 });
    expect(capped.kind === "retry" && capped.delayMs).toBe(86_400_000);
    const earlier = decideRetry({ attempt: 4, schedule, retryAfterMs: 1_000, random: () => 0.5 });
    expect(earlier.kind === "retry" && earlier.delayMs).toBe(3_600_000);
  });
});

describe("parseRetryAfter", () => {
  it("reads seconds and HTTP dates", () => {
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter(new Date(now + 90_000).toUTCString(), now)).toBe(90_000);
    expect(parseRetryAfter(new Date(now - 90_000).toUTCString(), now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
