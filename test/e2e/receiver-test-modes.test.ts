import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSampleReceiver } from "../../scripts/sample-receiver.ts";
import { webhookDispatch, type SignatureScheme } from "../../lib/db/schema.ts";
import { verifyWebhook } from "../../lib/webhook/verify/webhook-verify.ts";
import { LATE_TEST_EVENT_SECONDS } from "../../lib/webhook/outbound/webhook-out-deliver.handler.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ALICE = { account: "acc_alice" };

/** The sample receiver behind a webhook of `scheme`: its printed lines and the events it processed. */
interface Subscriber {
  webhookId: string;
  secret: string;
  lines: string[];
  processed: string[];
  close(): Promise<void>;
}

describe("receiver test modes, through the real lane to the sample receiver", () => {
  let harness: Harness;
  let raw: TestReceiver;
  const subscribers = new Map<SignatureScheme, Subscriber>();

  beforeAll(async () => {
    raw = await startReceiver();
    // One attempt per test event is enough to judge it: a normal one's next would come in an hour.
    harness = await startHarness(pgliteFactory, {
      env: { WEBHOOK_RETRY_SCHEDULE: "1h", WEBHOOK_TIMEOUT_MS: "10000" },
    });
    await harness.accounts(ALICE.account);
    for (const scheme of ["hooklane-v1", "standard-webhooks"] as const) {
      const created = await harness.call("POST", "/v3/webhooks", {
        ...ALICE,
        body: { url: "http://127.0.0.1/not-yet", events: ["payment-debt.created"], scheme },
      });
      const lines: string[] = [];
      const processed: string[] = [];
      const receiver = await startSampleReceiver({
        port: 0,
        secret: created.body.secret,
        log: (line) => lines.push(line),
        handleEvent: (event) => void processed.push(event.id),
      });
      const moved = await harness.call("PATCH", `/v3/webhooks/${created.body.id}`, {
        ...ALICE,
        body: { url: `http://127.0.0.1:${receiver.port}/hooks` },
      });
      expect(moved.status).toBe(200);
      subscribers.set(scheme, {
        webhookId: created.body.id,
        secret: created.body.secret,
        lines,
        processed,
        close: receiver.close,
      });
    }
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await Promise.all([...subscribers.values()].map((s) => s.close()));
    await raw?.close();
  });

  /** Sends a test event in `mode` and waits for its first attempt's record. */
  async function sendTest(webhookId: string, body: unknown) {
    const queued = await harness.call("POST", `/v3/webhooks/${webhookId}/test`, { ...ALICE, body });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    const detail = await eventually(
      () => harness.call("GET", `/v3/webhook-dispatches/${queued.body.id}`, ALICE),
      (answer) => answer.body.attempts.length === 1,
    );
    return { eventId: queued.body.event.id as string, dispatch: detail.body, attempt: detail.body.attempts[0] };
  }

  for (const scheme of ["hooklane-v1", "standard-webhooks"] as const) {
    describe(scheme, () => {
      it("normal: verified, acknowledged and processed once", async () => {
        const subscriber = subscribers.get(scheme)!;
        const { eventId, dispatch, attempt } = await sendTest(subscriber.webhookId, { mode: "normal" });
        expect(dispatch.status).toBe("success");
        expect(attempt).toMatchObject({ statusCode: 200, signature: { scheme, signatures: 1 } });
        expect(attempt.signature).not.toHaveProperty("mode");
        await eventually(
          async () => subscriber.processed.filter((id) => id === eventId).length,
          (n) => n === 1,
        );
        expect(subscriber.lines).toContain(`✔ ${eventId} webhook.test attempt 1 (verified ${scheme}) → 200`);
      });

      it("duplicate: the same event twice; the receiver acknowledges both and processes it once", async () => {
        const subscriber = subscribers.get(scheme)!;
        const { eventId, dispatch, attempt } = await sendTest(subscriber.webhookId, { mode: "duplicate" });
        expect(dispatch.status).toBe("success");
        expect(attempt).toMatchObject({ statusCode: 200, signature: { scheme, mode: "duplicate" } });
        expect(subscriber.lines.filter((line) => line.includes(eventId))).toEqual([
          `✔ ${eventId} webhook.test attempt 1 (verified ${scheme}) → 200`,
          `↺ duplicate ${eventId} webhook.test attempt 1 (verified ${scheme}): already received, acknowledged, not processed again → 200`,
        ]);
        await eventually(
          async () => subscriber.processed.filter((id) => id === eventId).length,
          (n) => n === 1,
        );
      });

      it("late: signed genuinely but beyond the tolerance; the receiver rejects it with 400", async () => {
        const subscriber = subscribers.get(scheme)!;
        const before = subscriber.lines.length;
        const { eventId, dispatch, attempt } = await sendTest(subscriber.webhookId, { mode: "late" });
        // Meant to be rejected: not retried, and no notification for it.
        expect(dispatch.status).toBe("exhausted");
        expect(attempt).toMatchObject({
          statusCode: 400,
          errorClass: "http_status",
          signature: { scheme, mode: "late", signatures: 1 },
        });
        const age = Date.parse(attempt.started) / 1_000 - attempt.signature.timestamp;
        expect(age).toBeGreaterThanOrEqual(LATE_TEST_EVENT_SECONDS - 1);
        expect(subscriber.lines.slice(before)).toEqual([
          "✘ rejected attempt 1: the signature is genuine but its timestamp is too far from now (replayed or late) → 400",
        ]);
        expect(subscriber.processed).not.toContain(eventId);
      });

      it("bad-signature: signed with another secret; the receiver rejects it with 400", async () => {
        const subscriber = subscribers.get(scheme)!;
        const before = subscriber.lines.length;
        const { eventId, dispatch, attempt } = await sendTest(subscriber.webhookId, { mode: "bad-signature" });
        expect(dispatch.status).toBe("exhausted");
        expect(attempt).toMatchObject({ statusCode: 400, signature: { scheme, mode: "bad-signature" } });
        expect(subscriber.lines.slice(before)).toEqual([
          "✘ rejected attempt 1: no signature matches the body and the secret → 400",
        ]);
        expect(subscriber.processed).not.toContain(eventId);
      });
    });
  }

  it("sends each mode as it says, byte for byte, to a plain recorder", async () => {
    const created = await harness.call("POST", "/v3/webhooks", {
      ...ALICE,
      body: { url: `${raw.url}/modes`, events: ["payment-debt.created"] },
    });
    const secret: string = created.body.secret;
    const posts = async (mode: string) => {
      const { eventId } = await sendTest(created.body.id, { mode });
      return raw.posts.filter((post) => post.headers["hooklane-event-id"] === eventId);
    };
    const verify = (post: (typeof raw.posts)[number], tolerance?: number) =>
      verifyWebhook({
        payload: post.body,
        headers: post.headers as Record<string, string>,
        secret,
        ...(tolerance ? { toleranceSeconds: tolerance } : {}),
      });

    const duplicate = await posts("duplicate");
    expect(duplicate).toHaveLength(2);
    expect(duplicate[1]!.body).toBe(duplicate[0]!.body);
    expect(duplicate[1]!.headers["hooklane-signature"]).toBe(duplicate[0]!.headers["hooklane-signature"]);
    expect((await verify(duplicate[1]!)).event.type).toBe("webhook.test");

    const [late] = await posts("late");
    await expect(verify(late!)).rejects.toMatchObject({ reason: "timestamp-outside-tolerance" });
    // The signature itself is genuine: only its age is wrong.
    expect((await verify(late!, LATE_TEST_EVENT_SECONDS + 60)).event.type).toBe("webhook.test");

    const [bad] = await posts("bad-signature");
    await expect(verify(bad!)).rejects.toMatchObject({ reason: "no-matching-signature" });
  });

  it("exists for test events only: the API refuses another type, and so does the database", async () => {
    const { webhookId } = subscribers.get("hooklane-v1")!;
    const typed = await harness.call("POST", `/v3/webhooks/${webhookId}/test`, {
      ...ALICE,
      body: { mode: "late", type: "payment-debt.created" },
    });
    expect(typed.status).toBe(422);
    expect(
      (await harness.call("POST", `/v3/webhooks/${webhookId}/test`, { ...ALICE, body: { mode: "x" } })).status,
    ).toBe(422);
    const insert = harness.hooklane.database.db.insert(webhookDispatch).values({
      eventId: "evt_real",
      eventType: "payment-debt.created",
      webhookId,
      account: ALICE.account,
      payload: "{}",
      testMode: "late",
    });
    await expect(insert).rejects.toThrow();
    const [row] = await harness.hooklane.database.db
      .select()
      .from(webhookDispatch)
      .where(eq(webhookDispatch.eventId, "evt_real"));
    expect(row).toBeUndefined();
  });
});
