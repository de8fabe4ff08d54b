import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../lib/db/client.ts";
import { IDEMPOTENCY_LOCK_SPACE } from "../../lib/db/sql/idempotency-keys.ts";
import { HARNESS_START_MS, startHarness, type Harness } from "../support/harness.ts";
import { describeIdempotencyCallers } from "../support/idempotency-callers-contract.ts";
import { describeIdempotency } from "../support/idempotency-contract.ts";
import { createTestDatabase, postgresFactory } from "../support/postgres.ts";

describeIdempotency("PostgreSQL", postgresFactory);
describeIdempotencyCallers("PostgreSQL", postgresFactory);

describe("a request whose key another request holds, on PostgreSQL", () => {
  let harness: Harness;
  let url: string;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase());
    harness = await startHarness(
      async () => ({ database: await openDatabase({ databaseUrl: url }), databaseUrl: url, drop: async () => {} }),
      { lane: false },
    );
    await harness.call("POST", "/v3/accounts", {
      account: "acc_ops",
      admin: true,
      body: { id: "acc_alice", name: "A" },
    });
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await drop?.();
  });

  it("answers 409 while the key's lock is held, runs nothing, and runs once the lock is free", async () => {
    const key = randomUUID();
    const send = () =>
      harness.call("POST", "/v3/payment-debts", {
        account: "acc_alice",
        body: { amount: "1.00", currency: "EUR" },
        headers: { "idempotency-key": key },
      });
    const debts = async () =>
      (await harness.hooklane.database.rows<{ n: number }>(sql`select count(*)::int as n from payment_debt`))[0]!.n;
    // What a request in flight holds, taken by another session: the same lock `lockIdempotencyKey` takes.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query("begin");
      const [{ locked }] = (
        await holder.query("select pg_try_advisory_xact_lock($1, hashtext($2 || ' ' || $3)) as locked", [
          IDEMPOTENCY_LOCK_SPACE,
          "acc_alice",
          key,
        ])
      ).rows;
      expect(locked).toBe(true);
      const busy = await send();
      expect(busy.status).toBe(409);
      expect(busy.headers.get("content-type")).toBe("application/problem+json");
      expect(busy.body.detail).toContain("still in progress");
      expect(await debts()).toBe(0);
      await holder.query("rollback");
    } finally {
      await holder.end();
    }
    const first = await send();
    expect(first.status).toBe(201);
    const again = await send();
    expect(again.text).toBe(first.text);
    expect(await debts()).toBe(1);
  });
});
