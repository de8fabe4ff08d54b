import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness, type HarnessAnswer } from "../support/harness.ts";

const A = "acc_rate_a";
const B = "acc_rate_b";

const counts = (answers: HarnessAnswer[]) => {
  const counted: Record<number, number> = {};
  for (const answer of answers) counted[answer.status] = (counted[answer.status] ?? 0) + 1;
  return counted;
};

describe("request rate limits", () => {
  let harness: Harness;

  beforeAll(async () => {
    harness = await startHarness(pgliteFactory, {
      lane: false,
      env: {
        API_RATE_LIMIT: "true",
        API_RATE_LIMIT_PER_SUBJECT: "50",
        API_RATE_LIMIT_PER_SUBJECT_BURST: "100",
        API_RATE_LIMIT_PER_ACCOUNT: "200",
        API_RATE_LIMIT_PER_ACCOUNT_BURST: "300",
      },
    });
    await harness.accounts(A, B);
  }, HARNESS_START_MS);
  afterAll(() => harness?.close());

  it("refuses one token's burst beyond its rate with 429, RateLimit headers and Retry-After; another account is unaffected", async () => {
    const burst = Promise.all(
      Array.from({ length: 2_000 }, () => harness.call("GET", `/v3/accounts/${A}`, { account: A, sub: "burst" })),
    );
    const other = Promise.all(
      Array.from({ length: 50 }, () => harness.call("GET", `/v3/accounts/${B}`, { account: B, sub: "calm" })),
    );
    const [answers, others] = await Promise.all([burst, other]);
    const counted = counts(answers);
    expect(counted[200]).toBeGreaterThanOrEqual(100);
    expect(counted[429]).toBeGreaterThan(1_000);
    expect(counted[200]! + counted[429]!).toBe(2_000);
    const refused = answers.find((a) => a.status === 429)!;
    expect(refused.headers.get("content-type")).toBe("application/problem+json");
    expect(refused.body).toMatchObject({ code: "rate_limited", quota: "subject-requests", limit: 100 });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get("ratelimit-policy")).toBe('"subject";q=100;w=2, "account";q=300;w=2');
    expect(refused.headers.get("ratelimit")).toMatch(/^"subject";r=0;t=\d+$/);
    expect(counts(others)).toEqual({ 200: 50 });
    expect(others[0]!.headers.get("ratelimit")).toMatch(/^"subject";r=\d+;t=\d+, "account";r=\d+;t=\d+$/);
  });

  it("holds an account's many tokens to the account's rate", async () => {
    const answers = await Promise.all(
      Array.from({ length: 1_000 }, (_, i) =>
        harness.call("GET", `/v3/accounts/${B}`, { account: B, sub: `many-${i}` }),
      ),
    );
    const counted = counts(answers);
    expect(counted[429]).toBeGreaterThan(0);
    expect(answers.find((a) => a.status === 429)!.body).toMatchObject({ quota: "account-requests", limit: 300 });
  });

  it("keeps subjects apart whatever bytes they hold", async () => {
    // Control characters are refused with the token; joined naively, (A, `x","y`) and (`acc_rate_a","x`, "y") would collide.
    const odd = await Promise.all(
      Array.from({ length: 150 }, () => harness.call("GET", `/v3/accounts/${A}`, { account: A, sub: 'x","y' })),
    );
    expect(counts(odd), JSON.stringify(odd[0]?.body)).toMatchObject({ 429: expect.any(Number) });
    const twin = await harness.call("GET", `/v3/accounts/${A}`, { account: `${A}","x`, sub: "y" });
    expect(twin.status).not.toBe(429);
    expect(twin.headers.get("ratelimit")).toMatch(/^"subject";r=99;/);
  });

  it("never limits health, readiness or metrics", async () => {
    const answers = await Promise.all(Array.from({ length: 300 }, () => harness.request("GET", "/health")));
    expect(answers.every((a) => a.status !== 429 && !a.headers.has("ratelimit"))).toBe(true);
  });
});
