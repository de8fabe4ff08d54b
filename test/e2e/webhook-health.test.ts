import { and, asc, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLane } from "../../lib/create-hooklane.ts";
import { webhook, webhookDispatch, webhookNotification, type WebhookStatus } from "../../lib/db/schema.ts";
import { disableFailingWebhooksTask } from "../../lib/webhook/sweeper/disable-failing-webhooks.ts";
import { wakeSweepers } from "../../lib/webhook/sweeper/webhook-sweeper.ts";
import type { Lane } from "../../lib/webhook/transport/postgres/postgres-lane.ts";
import { eventToOneWebhook } from "../support/event-to-one-webhook.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink.ts";

const OWNER = { account: "acc_owner" };
const OWNER_EMAIL = "owner@hooklane.test";
const DAY_MS = 86_400_000;
describe("endpoint health: 410 Gone, the 7-day rule, owner notifications by e-mail", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  let smtp: SmtpSink;
  let lane: Lane;
  /** The sweeper's clock: real time until a test moves it. */
  let fakeNow: Date | undefined;
  const answers = new Map<string, number>();

  beforeAll(async () => {
    smtp = await startSmtpSink();
    receiver = await startReceiver((post) => ({ status: answers.get(post.path) ?? 200 }));
    // One retry 50 ms after the first attempt: failures exhaust quickly.
    harness = await startHarness(pgliteFactory, {
      lane: false,
      env: { SMTP_URL: smtp.url, WEBHOOK_RETRY_SCHEDULE: "50ms", WEBHOOK_TIMEOUT_MS: "10000" },
    });
    lane = await startLane(harness.hooklane, { sweeperNow: () => fakeNow ?? new Date() });
    const account = await harness.call("POST", "/v3/accounts", {
      account: "acc_ops",
      admin: true,
      body: { id: OWNER.account, name: "Owner", email: OWNER_EMAIL },
    });
    expect(account.status).toBe(201);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await lane?.stop();
    await harness?.close();
    await receiver?.close();
    await smtp?.close();
  });

  const subscribe = async (path: string) => {
    const created = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}${path}`, events: ["*"] },
    });
    return created.body.id as string;
  };
  // Real events, one webhook's each: a test event never disables a webhook or tells its owner.
  const sendEvent = (id: string) => eventToOneWebhook(harness, id);
  const statusOf = async (id: string) =>
    (await harness.hooklane.database.db.select().from(webhook).where(eq(webhook.id, id)))[0]!;
  const dispatchesOf = (id: string) =>
    harness.hooklane.database.db
      .select()
      .from(webhookDispatch)
      .where(eq(webhookDispatch.webhookId, id))
      .orderBy(asc(webhookDispatch.createdAt));
  const settledDispatches = (id: string, count: number) =>
    eventually(
      () => dispatchesOf(id),
      (rows) => rows.length === count && rows.every((row) => row.status === "success" || row.status === "exhausted"),
    );
  const disabledNotes = (id: string) =>
    harness.hooklane.database.db
      .select()
      .from(webhookNotification)
      .where(and(eq(webhookNotification.webhookId, id), eq(webhookNotification.kind, "webhook.disabled")));
  const mailWith = (subject: string) =>
    eventually(
      async () => smtp.mails.filter((mail) => mail.subject === subject),
      (mails) => mails.length > 0,
    );
  const waitForStatus = (id: string, status: WebhookStatus) =>
    eventually(
      () => statusOf(id),
      (row) => row.status === status,
    );

  it("disables a webhook that answers 410, notifies its owner by row and e-mail, and delivers the kept event once re-enabled", async () => {
    answers.set("/gone", 410);
    const id = await subscribe("/gone");
    const event = await sendEvent(id);
    const row = await waitForStatus(id, "disabled");
    expect(row.disabledReason).toBe("endpoint answered 410 Gone");
    expect((await disabledNotes(id)).map((note) => note.detail)).toEqual([
      { reason: "endpoint answered 410 Gone", dispatchId: event.id },
    ]);
    const [mail] = await mailWith(`Webhook ${id} was disabled`);
    expect(mail!.to).toEqual([OWNER_EMAIL]);
    expect(mail!.data).toContain("410 Gone");

    // The endpoint is back; re-enabling delivers the event that waited.
    answers.set("/gone", 200);
    const enabled = await harness.call("PATCH", `/v3/webhooks/${id}`, { ...OWNER, body: { status: "active" } });
    expect(enabled.body).toMatchObject({ status: "active", disabledReason: null });
    await settledDispatches(id, 1);
    expect((await dispatchesOf(id))[0]).toMatchObject({ id: event.id, status: "success", attemptCount: 2 });
  });

  it("disables a webhook whose every delivery failed for 7 days, judged on an injected clock, and e-mails its owner", async () => {
    answers.set("/down", 500);
    const failing = await subscribe("/down");
    const healthy = await subscribe("/up");
    // Two rounds of events, the second after the first has failed for good.
    for (let round = 1; round <= 2; round++) {
      await sendEvent(failing);
      await sendEvent(healthy);
      await settledDispatches(failing, round);
      await settledDispatches(healthy, round);
    }
    const [first, second] = await dispatchesOf(failing);
    expect([first!.status, second!.status]).toEqual(["exhausted", "exhausted"]);
    // A moment between the two failures, seven days on: the failures span the whole window.
    const sevenDaysOn = new Date((first!.createdAt.getTime() + second!.createdAt.getTime()) / 2 + 7 * DAY_MS);

    // One day short, the window starts before the webhook existed: nothing is disabled.
    const context = { hooklane: harness.hooklane, workerId: "probe" };
    await disableFailingWebhooksTask.run({ ...context, now: () => new Date(sevenDaysOn.getTime() - DAY_MS) });
    expect((await statusOf(failing)).status).toBe("active");

    fakeNow = sevenDaysOn;
    await wakeSweepers(harness.hooklane.database);
    const row = await waitForStatus(failing, "disabled");
    expect(row.disabledReason).toBe("every delivery failed for 7 days");
    expect((await statusOf(healthy)).status).toBe("active");
    expect((await disabledNotes(failing)).map((note) => note.detail)).toEqual([
      { reason: "every delivery failed for 7 days" },
    ]);
    const [mail] = await mailWith(`Webhook ${failing} was disabled`);
    expect(mail!.to).toEqual([OWNER_EMAIL]);
    // Its two exhausted dispatches were told to the owner as well, in one digest once their window closed.
    const [digest] = await mailWith(`2 deliveries to webhook ${failing} failed for good`);
    expect(digest!.to).toEqual([OWNER_EMAIL]);

    // Sweeping again changes nothing: one disable, one notification.
    await disableFailingWebhooksTask.run({ ...context, now: () => sevenDaysOn });
    expect(await disabledNotes(failing)).toHaveLength(1);
  });
});
