import { eq, inArray, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgliteFactory } from "../../../test/support/harness.ts";
import type { Database } from "../../db/client.ts";
import { webhook, webhookAttempt, webhookDispatch, webhookDispatchOpen } from "../../db/schema.ts";
import { silentLogger } from "../../log/logger.ts";
import { recordResults, type DeliverConsumerDeps } from "./webhook-out-deliver.consumer.ts";
import type { AttemptResult } from "./webhook-out-deliver.handler.ts";

const WORKER = "worker-under-test";

describe("recordResults", () => {
  let database: Database;
  let deps: DeliverConsumerDeps;
  const ids: string[] = [];

  beforeAll(async () => {
    ({ database } = await pgliteFactory());
    deps = {
      database,
      logger: silentLogger,
      breaker: { threshold: 5, openBaseMs: 1_000, openMaxMs: 10_000, connectionClasses: ["connection_refused"] },
      // Recording never sends anything.
      deliver: {} as DeliverConsumerDeps["deliver"],
    };
    const [hook] = await database.db
      .insert(webhook)
      .values({ url: "https://hooks.example.com/x", events: ["*"], secretSealed: "sealed", createdBy: "test" })
      .returning();
    for (let i = 0; i < 3; i++) {
      const [row] = await database.db
        .insert(webhookDispatch)
        .values({ eventId: `evt_record_${i}0000000`, eventType: "account.created", webhookId: hook!.id, payload: "{}" })
        .returning();
      ids.push(row!.id);
    }
    // Their open rows, leased to this worker.
    await database.rows(sql`
      insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at, locked_by, locked_until)
      select id, webhook_id, next_attempt_at, ${WORKER}, now() + interval '1 minute' from webhook_dispatch
    `);
  });
  afterAll(() => database.close());

  const result = (dispatchId: string, overrides: Partial<AttemptResult> = {}): AttemptResult => ({
    dispatchId,
    webhookId: "",
    account: null,
    eventId: "evt_x",
    attempt: 1,
    status: "error",
    retryInMs: 60_000,
    startedAt: new Date(),
    durationMs: 12,
    outcome: "retry",
    statusCode: 500,
    errorClass: "http_status",
    errorMessage: "HTTP 500",
    responseExcerpt: "nope",
    signature: { timestamp: 1, scheme: "hooklane-v1", signatures: 1 },
    probe: false,
    test: false,
    gone: false,
    ...overrides,
  });

  it("records every result of a batch although the database refuses one of them, that one without its text", async () => {
    const [hook] = await database.db.select().from(webhook);
    const batch = [
      result(ids[0]!, { webhookId: hook!.id }),
      // Text nothing made safe: jsonb refuses NUL, so this row fails the whole statement.
      result(ids[1]!, { webhookId: hook!.id, errorClass: "http_status\u0000" }),
      result(ids[2]!, {
        webhookId: hook!.id,
        status: "success",
        outcome: "success",
        errorClass: null,
        statusCode: 200,
      }),
    ];
    await recordResults(deps, WORKER, batch);

    const attempts = await database.db.select().from(webhookAttempt).where(inArray(webhookAttempt.dispatchId, ids));
    expect(attempts.map((a) => a.dispatchId).sort()).toEqual([...ids].sort());
    const refused = attempts.find((a) => a.dispatchId === ids[1])!;
    expect(refused.errorClass).toBe("internal");
    expect(refused.responseExcerpt).toBeNull();
    expect(refused.errorMessage).toMatch(/record was refused/);
    const [done] = await database.db.select().from(webhookDispatch).where(eq(webhookDispatch.id, ids[2]!));
    expect(done!.status).toBe("success");
    const [retrying] = await database.db.select().from(webhookDispatch).where(eq(webhookDispatch.id, ids[1]!));
    expect(retrying).toMatchObject({ status: "error" });
    const [open] = await database.db
      .select()
      .from(webhookDispatchOpen)
      .where(eq(webhookDispatchOpen.dispatchId, ids[1]!));
    expect(open).toMatchObject({ lockedBy: null, lockedUntil: null });
  });
});
