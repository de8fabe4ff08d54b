import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../config/env.ts";
import {
  deliverDelaySeconds,
  LANE_ATTEMPT_OVERHEAD_MS,
  LANE_QUEUE,
  lookAgainPlan,
  sweepBudgetMs,
  VERCEL_QUEUES,
  vercelLaneTimings,
} from "./vercel-queue-limits.ts";
import { LANE_MAX_DURATION_SECONDS, VERCEL_FUNCTIONS } from "./vercel-project.ts";

const HOUR = 3_600_000;

describe("the lane's queue settings", () => {
  it("stay within the service's documented limits", () => {
    const { retentionSeconds, visibilitySeconds, maxDelaySeconds } = VERCEL_QUEUES;
    expect(LANE_QUEUE.retentionSeconds).toBeLessThanOrEqual(retentionSeconds.max);
    expect(LANE_QUEUE.retentionSeconds).toBeGreaterThanOrEqual(retentionSeconds.min);
    expect(LANE_QUEUE.maxDelaySeconds).toBeLessThanOrEqual(Math.min(maxDelaySeconds, LANE_QUEUE.retentionSeconds));
    expect(LANE_QUEUE.maxLookAgainSeconds).toBeLessThanOrEqual(visibilitySeconds.max);
    // The longest delay the published schedule asks for (+24 h, +10 %) and Retry-After's cap fit in one message.
    expect(LANE_QUEUE.maxDelaySeconds).toBeGreaterThan(86_400 * 1.1);
  });
});

describe("deliverDelaySeconds", () => {
  it("asks for the whole wait in seconds, never less, and cuts it at the lane's maximum", () => {
    expect(deliverDelaySeconds(-5_000)).toBe(0);
    expect(deliverDelaySeconds(1)).toBe(1);
    expect(deliverDelaySeconds(26.4 * HOUR)).toBe(95_040);
    expect(deliverDelaySeconds(10 * 24 * HOUR)).toBe(LANE_QUEUE.maxDelaySeconds);
  });
});

describe("lookAgainPlan", () => {
  const now = Date.parse("2026-12-01T00:00:00Z");
  const expiresIn = (ms: number) => ({ expiresAt: new Date(now + ms) });

  it("puts a message back for what is left, at most the service's longest visibility change", () => {
    expect(lookAgainPlan(1_500, expiresIn(48 * HOUR), now)).toEqual({ afterSeconds: 2 });
    expect(lookAgainPlan(0, expiresIn(48 * HOUR), now)).toEqual({ afterSeconds: 1 });
    expect(lookAgainPlan(3 * HOUR, expiresIn(48 * HOUR), now)).toEqual({ afterSeconds: 3_600 });
  });

  it("replaces a message that would come back too close to its expiry", () => {
    expect(lookAgainPlan(3 * HOUR, expiresIn(90 * 60_000), now)).toEqual({ replace: true });
    expect(lookAgainPlan(10_000, expiresIn(60 * 60_000), now)).toEqual({ replace: true });
  });
});

describe("vercelLaneTimings", () => {
  it("leases a dispatch as long as the lane's function may live, with the same visibility", () => {
    expect(vercelLaneTimings({ timeoutMs: 10_000 })).toEqual({
      visibilitySeconds: LANE_MAX_DURATION_SECONDS,
      leaseMs: LANE_MAX_DURATION_SECONDS * 1_000,
      continueWithinMs: LANE_MAX_DURATION_SECONDS * 1_000 - 10_000 - LANE_ATTEMPT_OVERHEAD_MS,
    });
  });

  it("refuses a delivery deadline that leaves the lane no room within its maxDuration", () => {
    const timeoutMs = LANE_MAX_DURATION_SECONDS * 1_000;
    expect(() => vercelLaneTimings({ timeoutMs })).toThrow(ConfigError);
    expect(() => vercelLaneTimings({ timeoutMs })).toThrow(/WEBHOOK_TIMEOUT_MS: 60000 ms leaves no room/);
  });
});

describe("sweepBudgetMs", () => {
  it("stops short of the sweeper's maxDuration, and of a nearer invocation deadline", () => {
    const full = sweepBudgetMs(undefined, 0);
    expect(full).toBeLessThan(VERCEL_FUNCTIONS.sweeper.maxDurationSeconds * 1_000);
    expect(full).toBeGreaterThan(0);
    expect(sweepBudgetMs(new Date(30_000), 0)).toBeLessThan(30_000);
    expect(sweepBudgetMs(new Date(1_000), 0)).toBe(0);
  });
});
