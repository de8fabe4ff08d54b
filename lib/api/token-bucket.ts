import { LRUCache } from "lru-cache";

/** A bucket's size: `burst` tokens, refilled at `perSecond`. */
export interface BucketRule {
  perSecond: number;
  burst: number;
}

/** What one take found: whether it was allowed, and the bucket's state after it. */
export interface BucketVerdict {
  allowed: boolean;
  /** Whole tokens left after this take. */
  remaining: number;
  /** Seconds until the bucket is full again. */
  fullInSeconds: number;
  /** Seconds until a refused take would be allowed (0 when allowed). */
  retryAfterSeconds: number;
}

/**
 * Token buckets by key, in this process's memory. A key's bucket starts full
 * and refills continuously; each take costs one token. Time is
 * `performance.now()` by default: monotonic, so a wall-clock jump neither
 * refills every bucket nor freezes them. A bucket untouched long enough to be
 * full again is forgotten (`ttl`), and at most `maxKeys` are kept, the least
 * recently used dropped first: a dropped bucket starts over full, which
 * errs on the caller's side and keeps memory bounded whatever keys arrive.
 */
export class TokenBuckets {
  readonly #rule: BucketRule;
  readonly #now: () => number;
  readonly #buckets: LRUCache<string, { tokens: number; at: number }>;

  constructor(rule: BucketRule, options: { maxKeys?: number; now?: () => number } = {}) {
    this.#rule = rule;
    this.#now = options.now ?? (() => performance.now());
    const fullAfterMs = Math.ceil((rule.burst / rule.perSecond) * 1_000);
    this.#buckets = new LRUCache({
      max: options.maxKeys ?? 50_000,
      ttl: Math.max(1, fullAfterMs),
      ttlResolution: 0,
      perf: { now: this.#now },
    });
  }

  /** Takes one token from `key`'s bucket, if it has one. */
  take(key: string): BucketVerdict {
    const { perSecond, burst } = this.#rule;
    const now = this.#now();
    const bucket = this.#buckets.get(key) ?? { tokens: burst, at: now };
    // A clock that went backwards (an injected one) refills nothing rather than draining the bucket.
    const elapsedSeconds = Math.max(0, now - bucket.at) / 1_000;
    bucket.tokens = Math.min(burst, bucket.tokens + elapsedSeconds * perSecond);
    bucket.at = now;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    this.#buckets.set(key, bucket);
    return {
      allowed,
      remaining: Math.floor(bucket.tokens),
      fullInSeconds: Math.ceil((burst - bucket.tokens) / perSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond)),
    };
  }
}
