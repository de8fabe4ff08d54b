import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_START_MS, startHarness, type Harness, type HarnessAnswer } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";

const A = "acc_listen_cap_a";
const B = "acc_listen_cap_b";
const CAP = 5;

const counts = (answers: HarnessAnswer[]) => {
  const counted: Record<number, number> = {};
  for (const answer of answers) counted[answer.status] = (counted[answer.status] ?? 0) + 1;
  return counted;
};

/** Listen sessions and streams are capped per account, exactly, on a real server. */
describe("listen session and stream caps, on PostgreSQL", () => {
  let harness: Harness;
  const streams: Response[] = [];

  beforeAll(async () => {
    harness = await startHarness(postgresFactory, { lane: false });
    await harness.accounts(A, B);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await Promise.all(streams.map((s) => s.body?.cancel().catch(() => {})));
    await harness?.close();
  });

  const create = (account: string, sub = "cli") =>
    harness.call("POST", "/v3/listen-sessions", {
      account,
      sub,
      body: { forwardTo: "http://localhost:4000/hooks" },
    });
  const live = async (account: string) =>
    (
      await harness.hooklane.database.rows<{ n: number }>(
        sql`select count(*)::int as n from webhook where account = ${account} and status = 'listening'`,
      )
    )[0]!.n;

  it("accepts at most the cap of 100 parallel creates from many tokens, the rest 429 with Retry-After", async () => {
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => create(A, `cli-${i}`)));
    expect(counts(answers)).toEqual({ 201: CAP, 429: 100 - CAP });
    const refused = answers.find((a) => a.status === 429)!;
    expect(refused.body).toMatchObject({ code: "rate_limited", quota: "listen-sessions", limit: CAP });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await live(A)).toBe(CAP);
    // Another account has its own cap.
    expect((await create(B)).status).toBe(201);
  });

  it("makes room when a session ends", async () => {
    const [session] = await harness.hooklane.database.rows<{ id: string }>(
      sql`select id from webhook where account = ${A} and status = 'listening' limit 1`,
    );
    expect((await harness.call("DELETE", `/v3/listen-sessions/${session!.id}`, { account: A })).status).toBe(200);
    expect((await create(A)).status).toBe(201);
    expect((await create(A)).status).toBe(429);
  });

  it("refuses a session for an account that does not exist, naming the account", async () => {
    const answer = await create("acc_nobody");
    expect(answer.status).toBe(422);
    expect(answer.headers.get("content-type")).toBe("application/problem+json");
    expect(answer.body.errors).toEqual([{ field: "account", message: "no such account" }]);
    expect(await live("acc_nobody")).toBe(0);
  });

  it("serves at most the cap of open streams per account; a closed one makes room", async () => {
    const [session] = await harness.hooklane.database.rows<{ id: string }>(
      sql`select id from webhook where account = ${B} and status = 'listening' limit 1`,
    );
    const open = () => harness.request("GET", `/v3/listen-sessions/${session!.id}/stream`, { account: B });
    for (let i = 0; i < CAP; i++) {
      const response = await open();
      expect(response.status).toBe(200);
      streams.push(response);
    }
    const refused = await open();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBeTruthy();
    expect(await refused.json()).toMatchObject({ quota: "listen-streams", limit: CAP });
    await streams.pop()!.body!.cancel();
    await expect.poll(async () => (await open().then((r) => (streams.push(r), r))).status).toBe(200);
  });
});
