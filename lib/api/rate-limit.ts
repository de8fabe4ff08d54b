import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { HooklaneEnv } from "./hono-env.ts";
import { problem, QuotaExceededError } from "./problem.ts";
import { TokenBuckets, type BucketRule, type BucketVerdict } from "./token-bucket.ts";

/** The two request rates a caller is held to (`API_RATE_LIMIT_*`). */
export interface RateLimitRules {
  subject: BucketRule;
  account: BucketRule;
}

/**
 * Limits authenticated requests by token bucket, per token subject and per
 * account (every token and portal session of an account shares the second);
 * run after `requireAuth`, which put the principal on the context. Each
 * process keeps its own buckets, so N API instances allow up to N times the
 * configured rates between them. Every answer it lets through, and its 429s,
 * carry `RateLimit-Policy` and `RateLimit` as
 * draft-ietf-httpapi-ratelimit-headers-10 writes them: one list item per
 * policy, `q` (the burst) and `w` (seconds to refill it), then `r` (tokens
 * left) and `t` (seconds until full). A refusal is a 429 problem with
 * `Retry-After`: the seconds until one more request would be allowed.
 */
export function rateLimit() {
  // Built from the app's configuration on its first request; `rules` undefined: the limit is off.
  let limiter: { rules: RateLimitRules; subjects: TokenBuckets; accounts: TokenBuckets; policy: string } | undefined;
  let configured = false;
  return createMiddleware<HooklaneEnv>(async (c, next) => {
    if (!configured) {
      const rules = c.get("hooklane").config.rateLimit;
      limiter = rules && {
        rules,
        subjects: new TokenBuckets(rules.subject),
        accounts: new TokenBuckets(rules.account),
        policy: [policyItem("subject", rules.subject), policyItem("account", rules.account)].join(", "),
      };
      configured = true;
    }
    if (!limiter) return next();
    const { rules, subjects, accounts, policy } = limiter;
    const principal = c.get("principal");
    // JSON keeps the pair unambiguous whatever bytes a subject or account holds.
    const bySubject = subjects.take(JSON.stringify([principal.account, principal.sub]));
    // An account's bucket is only charged for what its subject's bucket let through.
    const byAccount = bySubject.allowed ? accounts.take(principal.account) : undefined;
    const state = [stateItem("subject", bySubject), ...(byAccount ? [stateItem("account", byAccount)] : [])].join(", ");
    c.header("ratelimit-policy", policy);
    c.header("ratelimit", state);
    if (!bySubject.allowed) return refuse(c, "subject", rules.subject, bySubject);
    if (byAccount && !byAccount.allowed) return refuse(c, "account", rules.account, byAccount);
    return next();
  });
}

function refuse(c: Context, name: "subject" | "account", rule: BucketRule, verdict: BucketVerdict): Response {
  const who = name === "subject" ? "this token's subject" : "this account";
  const detail = `Too many requests from ${who}: ${rule.perSecond} a second, in bursts of ${rule.burst} at most.`;
  return problem(c, new QuotaExceededError(`${name}-requests`, rule.burst, detail, verdict.retryAfterSeconds));
}

const seconds = (rule: BucketRule) => Math.max(1, Math.ceil(rule.burst / rule.perSecond));
const policyItem = (name: string, rule: BucketRule) => `"${name}";q=${rule.burst};w=${seconds(rule)}`;
const stateItem = (name: string, verdict: BucketVerdict) =>
  `"${name}";r=${verdict.remaining};t=${verdict.fullInSeconds}`;
