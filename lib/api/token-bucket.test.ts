import { describe, expect, it } from "vitest";
import { TokenBuckets } from "./token-bucket.ts";

describe("TokenBuckets", () => {
  const clock = () => {
    let now = 1_000;
    return { now: () => now, set: (ms: number) => void (now = ms), advance: (ms: number) => void (now += ms) };
  };

  it("allows a burst, then one request per refilled token, saying when to retry", () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 2, burst: 3 }, { now: time.now });
    expect([1, 2, 3].map(() => buckets.take("a").allowed)).toEqual([true, true, true]);
    const refused = buckets.take("a");
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1, fullInSeconds: 2 });
    expect(buckets.take("b").allowed).toBe(true);
    time.advance(500);
    expect(buckets.take("a")).toMatchObject({ allowed: true, remaining: 0 });
    expect(buckets.take("a").allowed).toBe(false);
  });

  it("rounds a slow refill's wait up to whole seconds", () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 0.1, burst: 1 }, { now: time.now });
    expect(buckets.take("a").allowed).toBe(true);
    expect(buckets.take("a")).toMatchObject({ allowed: false, retryAfterSeconds: 10 });
  });

  it("never grows past its burst, and a clock going backwards refills nothing", () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 10, burst: 2 }, { now: time.now });
    time.advance(3_600_000);
    expect(buckets.take("a").remaining).toBe(1);
    expect(buckets.take("a").remaining).toBe(0);
    time.set(-1_000_000);
    expect(buckets.take("a").allowed).toBe(false);
    // Forward again from the jumped-back time: refills at the rate from there, not all at once.
    time.advance(100);
    expect(buckets.take("a").allowed).toBe(true);
    expect(buckets.take("a").allowed).toBe(false);
  });

  it("keeps at most maxKeys buckets; a dropped one starts over full", () => {
    const time = clock();
    const buckets = new TokenBuckets({ perSecond: 1, burst: 1 }, { now: time.now, maxKeys: 2 });
    expect(buckets.take("a").allowed).toBe(true);
    buckets.take("b");
    buckets.take("c");
    expect(buckets.take("a").allowed).toBe(true);
  });
});
