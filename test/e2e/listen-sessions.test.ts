import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhook, webhookAttempt, webhookDispatch, webhookDispatchOpen } from "../../lib/db/schema.ts";
import { listenDeliverySchema, type ListenDelivery } from "../../lib/webhook/listen/listen-messages.ts";
import { sweepWithin } from "../../lib/webhook/sweeper/webhook-sweeper.ts";
import { LATE_TEST_EVENT_SECONDS } from "../../lib/webhook/outbound/webhook-out-deliver.handler.ts";
import { verifyWebhook } from "../../lib/webhook/verify/webhook-verify.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { listenReport as report, readListenStream, type ListenStreamReader } from "../support/listen-stream.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const CAROL = { account: "acc_carol" };

describe("listen sessions, served in process", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  const streams: ListenStreamReader[] = [];

  beforeAll(async () => {
    receiver = await startReceiver();
    harness = await startHarness(pgliteFactory, {
      // Every test starts a session and keeps its stream open until the end.
      env: {
        WEBHOOK_RETRY_SCHEDULE: "100ms,100ms",
        WEBHOOK_QUOTA_LISTEN_SESSIONS: "20",
        WEBHOOK_QUOTA_LISTEN_STREAMS: "20",
      },
    });
    await harness.call("POST", "/v3/accounts", { ...CAROL, admin: true, body: { id: CAROL.account, name: "Carol" } });
  }, HARNESS_START_MS);
  afterAll(async () => {
    await Promise.all(streams.map((stream) => stream.close().catch(() => {})));
    await harness?.close();
    await receiver?.close();
  });

  async function startSession(body: Record<string, unknown> = {}) {
    const created = await harness.call("POST", "/v3/listen-sessions", {
      ...CAROL,
      body: { forwardTo: `${receiver.url}/local`, ...body },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const response = await harness.request("GET", `/v3/listen-sessions/${created.body.id}/stream`, CAROL);
    expect(response.status).toBe(200);
    const stream = readListenStream(response);
    streams.push(stream);
    expect(JSON.parse(await stream.next("ready"))).toMatchObject({ id: created.body.id, object: "listen-session" });
    return {
      id: created.body.id as string,
      secret: created.body.secret as string,
      stream,
      next: async () => listenDeliverySchema.parse(JSON.parse(await stream.next("delivery"))),
      results: (results: unknown[], id = created.body.id) =>
        harness.call("POST", `/v3/listen-sessions/${id}/results`, { ...CAROL, body: { results } }),
    };
  }

  it("pushes each event signed with the session's secret, records what the receiver answered, and retries", async () => {
    const session = await startSession({ events: ["payment-debt.created"] });
    expect((await harness.call("GET", `/v3/webhooks/${session.id}`, CAROL)).body.status).toBe("listening");

    const debt = await harness.call("POST", "/v3/payment-debts", {
      ...CAROL,
      body: { amount: "9.00", currency: "EUR" },
    });
    expect(debt.status).toBe(201);
    const first = await session.next();
    expect(first).toMatchObject({ attempt: 1, event: { type: "payment-debt.created" } });
    expect(first.lease).toMatch(new RegExp(`^listen/${session.id}/`));
    const verified = await verifyWebhook({
      payload: first.payload,
      headers: first.requests[0]!,
      secret: session.secret,
    });
    expect(verified.event.data).toEqual({ object: "payment-debt", id: debt.body.id, account: CAROL.account });

    // The receiver's 500 (a 410 too: it never ends a session) is the attempt's status, and RETRY follows.
    expect((await session.results([report(first, 410)])).body).toEqual({
      object: "listen-results",
      recorded: [first.dispatch],
      stale: [],
    });
    const second = await session.next();
    expect(second).toMatchObject({ dispatch: first.dispatch, attempt: 2, payload: first.payload });
    expect((await session.results([report(second, 200)])).body.recorded).toEqual([first.dispatch]);

    const detail = await harness.call("GET", `/v3/webhook-dispatches/${first.dispatch}`, CAROL);
    expect(detail.body.status).toBe("success");
    expect(detail.body.attempts.map((a: { statusCode: number; outcome: string }) => [a.statusCode, a.outcome])).toEqual(
      [
        [410, "retry"],
        [200, "success"],
      ],
    );
    const workers = await harness.hooklane.database.db
      .select({ worker: webhookAttempt.worker })
      .from(webhookAttempt)
      .where(eq(webhookAttempt.dispatchId, first.dispatch));
    expect(workers.map((w) => w.worker)).toEqual([first.lease, second.lease]);
    expect((await harness.call("GET", `/v3/webhooks/${session.id}`, CAROL)).body.status).toBe("listening");
    // The lane never took the session's webhook: nothing was POSTed to its URL from here.
    expect(receiver.posts).toHaveLength(0);
  });

  it("records only the current attempt, under its own lease, for its own session", async () => {
    const session = await startSession();
    const other = await startSession();
    expect((await harness.call("POST", `/v3/webhooks/${session.id}/test`, CAROL)).status).toBe(202);
    const delivery = await session.next();
    expect(delivery.event.type).toBe("webhook.test");

    const stale = [
      report(delivery, 200, { attempt: 2 }),
      report(delivery, 200, { lease: `listen/${other.id}/00000000` }),
      report(delivery, 200, { lease: "vm/1/worker" }),
    ];
    expect((await session.results(stale)).body).toEqual({
      object: "listen-results",
      recorded: [],
      stale: stale.map(() => delivery.dispatch),
    });
    // Through another session's route, the dispatch is not there at all.
    expect((await session.results([report(delivery, 200)], other.id)).body.recorded).toEqual([]);
    const [row] = await harness.hooklane.database.db
      .select()
      .from(webhookDispatch)
      .where(eq(webhookDispatch.id, delivery.dispatch));
    expect(row).toMatchObject({ status: "pending", attemptCount: 0 });
    const [open] = await harness.hooklane.database.db
      .select()
      .from(webhookDispatchOpen)
      .where(eq(webhookDispatchOpen.dispatchId, delivery.dispatch));
    expect(open).toMatchObject({ lockedBy: delivery.lease });

    const twice = [report(delivery, 200), report(delivery, 500)];
    expect((await session.results(twice)).body).toEqual({
      object: "listen-results",
      recorded: [delivery.dispatch],
      stale: [delivery.dispatch],
    });
    expect((await session.results([report(delivery, 200)])).body.stale).toEqual([delivery.dispatch]);
  });

  it("carries test modes as the lane sends them", async () => {
    const session = await startSession();
    const send = async (mode: string) => {
      expect((await harness.call("POST", `/v3/webhooks/${session.id}/test`, { ...CAROL, body: { mode } })).status).toBe(
        202,
      );
      return session.next();
    };
    const duplicate = await send("duplicate");
    expect(duplicate.requests).toHaveLength(2);
    expect(duplicate.requests[1]).toEqual(duplicate.requests[0]);
    expect(duplicate.signature.mode).toBe("duplicate");
    const late = await send("late");
    expect(late.signature).toMatchObject({ mode: "late" });
    expect(Date.now() / 1_000 - late.signature.timestamp).toBeGreaterThan(LATE_TEST_EVENT_SECONDS - 5);
    await expect(
      verifyWebhook({ payload: late.payload, headers: late.requests[0]!, secret: session.secret }),
    ).rejects.toMatchObject({ reason: "timestamp-outside-tolerance" });
    const bad = await send("bad-signature");
    await expect(
      verifyWebhook({ payload: bad.payload, headers: bad.requests[0]!, secret: session.secret }),
    ).rejects.toMatchObject({ reason: "no-matching-signature" });
  });

  it("records an attempt it cannot sign as an internal failure, looked at again a minute later", async () => {
    const session = await startSession();
    await harness.hooklane.database.db
      .update(webhook)
      .set({ secretSealed: "not-a-sealed-secret" })
      .where(eq(webhook.id, session.id));
    const queued = await harness.call("POST", `/v3/webhooks/${session.id}/test`, CAROL);
    const detail = await eventually(
      () => harness.call("GET", `/v3/webhook-dispatches/${queued.body.id}`, CAROL),
      (answer) => answer.body.attempts.length === 1,
    );
    const [attempt] = detail.body.attempts;
    expect(attempt).toMatchObject({ outcome: "retry", errorClass: "internal", statusCode: null });
    expect(Date.parse(attempt.nextAttempt) - Date.parse(attempt.started)).toBeGreaterThanOrEqual(59_000);
  });

  it("keeps the lane away: a session's webhook cannot be activated or paused", async () => {
    const session = await startSession();
    for (const status of ["active", "paused"]) {
      const patched = await harness.call("PATCH", `/v3/webhooks/${session.id}`, { ...CAROL, body: { status } });
      expect(patched.status).toBe(409);
    }
    expect((await harness.call("GET", `/v3/webhooks/${session.id}`, CAROL)).body.status).toBe("listening");
  });

  it("ends the stream when the session is deleted; the sweeper deletes sessions past their expiry", async () => {
    const deleted = await startSession();
    expect((await harness.call("DELETE", `/v3/listen-sessions/${deleted.id}`, CAROL)).status).toBe(200);
    expect(await deleted.stream.next("end")).toBe("the session is over");
    expect((await harness.call("DELETE", `/v3/listen-sessions/${deleted.id}`, CAROL)).status).toBe(404);

    const expired = await startSession();
    await expired.stream.close();
    const { db } = harness.hooklane.database;
    await db
      .update(webhook)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(webhook.id, expired.id));
    const live = await harness.call("POST", "/v3/listen-sessions", { ...CAROL, body: { forwardTo: receiver.url } });
    await sweepWithin(harness.hooklane, { workerId: "test-sweeper", budgetMs: 30_000 });
    expect(await db.select().from(webhook).where(eq(webhook.id, expired.id))).toEqual([]);
    expect((await harness.call("GET", `/v3/webhooks/${live.body.id}`, CAROL)).status).toBe(200);
    // An ordinary webhook has no expiry and is never swept.
    const plain = await harness.call("POST", "/v3/webhooks", { ...CAROL, body: { url: receiver.url, events: ["*"] } });
    await sweepWithin(harness.hooklane, { workerId: "test-sweeper", budgetMs: 30_000 });
    expect((await harness.call("GET", `/v3/webhooks/${plain.body.id}`, CAROL)).status).toBe(200);
  });

  it("refuses a session for an unknown event or a target that is not http(s)", async () => {
    const unknown = await harness.call("POST", "/v3/listen-sessions", {
      ...CAROL,
      body: { forwardTo: receiver.url, events: ["nothing.happened"] },
    });
    expect(unknown.status).toBe(422);
    const ftp = await harness.call("POST", "/v3/listen-sessions", { ...CAROL, body: { forwardTo: "ftp://x/y" } });
    expect(ftp.status).toBe(422);
  });
});
