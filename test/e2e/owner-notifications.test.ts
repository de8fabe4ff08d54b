import { and, count, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookDispatch, webhookNotification } from "../../lib/db/schema.ts";
import { notifyOwner } from "../../lib/webhook/outbound/webhook-owner-notifier.ts";
import { notifyOwnersTask } from "../../lib/webhook/sweeper/notify-owners.ts";
import { eventually } from "../support/eventually.ts";
import { freePort } from "../support/free-port.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";
import { startSmtpSink, type ReceivedMail, type SmtpSink } from "../support/smtp-sink.ts";

const OWNER = { account: "acc_dead_endpoint" };
const OWNER_EMAIL = "owner@example.com";
const OTHER = { account: "acc_someone_else" };
const OPS_EMAIL = "ops@example.com";
const HOUR_MS = 3_600_000;
const DEBTS = 300;
const SUBSCRIPTIONS = 200;

describe("owner notifications: digests, durable e-mail, the notifications API", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  let smtp: SmtpSink;
  let smtpPort: number;
  const mails: ReceivedMail[] = [];

  beforeAll(async () => {
    smtpPort = await freePort();
    smtp = await startSmtpSink({ port: smtpPort, keep: mails });
    receiver = await startReceiver(() => ({ status: 503 }));
    // Two attempts per dispatch, 10 ms apart: a dead endpoint exhausts them quickly. Digests per hour.
    harness = await startHarness(pgliteFactory, {
      env: {
        SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
        OPS_EMAIL,
        WEBHOOK_NOTIFY_WINDOW: "1h",
        WEBHOOK_RETRY_SCHEDULE: "10ms",
        WEBHOOK_TIMEOUT_MS: "10000",
      },
    });
    await harness.accounts(OTHER.account);
    await harness.call("POST", "/v3/accounts", {
      account: "acc_ops",
      admin: true,
      body: { id: OWNER.account, name: "Owner", email: OWNER_EMAIL },
    });
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
    await smtp?.close();
  });

  /** One sweeper round of the task, on a clock `aheadMs` from now. */
  const sweepAt = (aheadMs: number) =>
    notifyOwnersTask.run({
      hooklane: harness.hooklane,
      workerId: "notify-under-test",
      now: () => new Date(Date.now() + aheadMs),
    });
  const exhausted = (webhookId: string) =>
    harness.hooklane.database.db
      .select({ n: count() })
      .from(webhookDispatch)
      .where(and(eq(webhookDispatch.webhookId, webhookId), eq(webhookDispatch.status, "exhausted")))
      .then(([row]) => row!.n);
  const subscribeDead = async (path: string, events: string[]) =>
    (await harness.call("POST", "/v3/webhooks", { ...OWNER, body: { url: `${receiver.url}${path}`, events } })).body
      .id as string;

  it(
    "sends one digest e-mail for 500 dispatches exhausted in one window, naming types, counts and example resource ids",
    { timeout: 180_000 },
    async () => {
      const hook = await subscribeDead("/dead", ["payment-debt.created", "subscription.created"]);
      const resources = new Set<string>();
      for (let i = 0; i < DEBTS; i++) {
        const debt = await harness.call("POST", "/v3/payment-debts", {
          ...OWNER,
          body: { amount: "1.00", currency: "EUR" },
        });
        resources.add(debt.body.id);
      }
      for (let i = 0; i < SUBSCRIPTIONS; i++) {
        const sub = await harness.call("POST", "/v3/subscriptions", { ...OWNER, body: { plan: "pro" } });
        resources.add(sub.body.id);
      }
      await harness.settled();
      await eventually(
        () => exhausted(hook),
        (n) => n === DEBTS + SUBSCRIPTIONS,
        { timeoutMs: 150_000 },
      );
      // Each exhausted dispatch is on record for its owner, written with its last attempt; nothing mailed yet.
      const items = await harness.hooklane.database.db
        .select({ n: count() })
        .from(webhookNotification)
        .where(and(eq(webhookNotification.webhookId, hook), eq(webhookNotification.kind, "dispatch.exhausted")));
      expect(items[0]!.n).toBe(DEBTS + SUBSCRIPTIONS);
      await sweepAt(0);
      expect(mails).toEqual([]);

      // The window closes: one digest, one e-mail.
      await sweepAt(HOUR_MS + 60_000);
      await sweepAt(HOUR_MS + 120_000);
      expect(mails).toHaveLength(1);
      const [mail] = mails;
      expect(mail!.to).toEqual([OWNER_EMAIL]);
      expect(mail!.subject).toBe(`500 deliveries to webhook ${hook} failed for good`);
      const text = mail!.data.replace(/=\r\n/g, "");
      expect(text).toContain(`payment-debt.created: ${DEBTS} (e.g. `);
      expect(text).toContain(`subscription.created: ${SUBSCRIPTIONS} (e.g. `);
      const examples = [...text.matchAll(/\(e\.g\. ([^)]*)\)/g)].flatMap((match) => match[1]!.split(", "));
      expect(examples).toHaveLength(10);
      for (const example of examples) expect(resources.has(example.trim()), example).toBe(true);

      // The owner reads it; another account cannot.
      const listed = await harness.call("GET", "/v3/notifications?kind=dispatch.exhausted.digest", OWNER);
      expect(listed.body.data).toHaveLength(1);
      const [digest] = listed.body.data;
      expect(digest).toMatchObject({
        object: "notification",
        kind: "dispatch.exhausted.digest",
        webhook: hook,
        account: OWNER.account,
        detail: { total: 500 },
        mail: { status: "sent", attempts: 1 },
      });
      expect(digest.detail.types.map((t: { type: string; count: number }) => [t.type, t.count])).toEqual([
        ["payment-debt.created", DEBTS],
        ["subscription.created", SUBSCRIPTIONS],
      ]);
      expect((await harness.call("GET", `/v3/notifications/${digest.id}`, OWNER)).status).toBe(200);
      expect((await harness.call("GET", `/v3/notifications/${digest.id}`, OTHER)).status).toBe(404);
      expect((await harness.call("GET", "/v3/notifications", OTHER)).body.data).toEqual([]);
      // Every exhausted dispatch points at its digest.
      const item = await harness.call("GET", "/v3/notifications?kind=dispatch.exhausted&limit=1", OWNER);
      expect(item.body.data[0]).toMatchObject({ digest: digest.id, mail: { status: "digest" } });
      await harness.call("DELETE", `/v3/webhooks/${hook}`, OWNER);
    },
  );

  it("keeps a digest written while SMTP is down and mails it once SMTP is back", { timeout: 60_000 }, async () => {
    const hook = await subscribeDead("/dead-again", ["payment-debt.created"]);
    await smtp.close();
    for (let i = 0; i < 3; i++) {
      await harness.call("POST", "/v3/payment-debts", { ...OWNER, body: { amount: "2.00", currency: "EUR" } });
    }
    await harness.settled();
    await eventually(
      () => exhausted(hook),
      (n) => n === 3,
    );
    const before = mails.length;
    await sweepAt(HOUR_MS + 60_000);
    const [pending] = (await harness.call("GET", "/v3/notifications?kind=dispatch.exhausted.digest", OWNER)).body.data;
    expect(pending).toMatchObject({ webhook: hook, mail: { status: "pending", attempts: 1, sent: null } });
    expect(pending.mail.error).toBeTruthy();
    expect(mails.length).toBe(before);

    smtp = await startSmtpSink({ port: smtpPort, keep: mails });
    // Retried after its backoff (30 s), on the sweeper's clock.
    await sweepAt(HOUR_MS + 120_000);
    expect(mails.length).toBe(before + 1);
    expect(mails.at(-1)!.subject).toBe(`3 deliveries to webhook ${hook} failed for good`);
    const [sent] = (await harness.call("GET", "/v3/notifications?kind=dispatch.exhausted.digest", OWNER)).body.data;
    expect(sent).toMatchObject({ id: pending.id, mail: { status: "sent", attempts: 2, error: null } });
  });

  it("mails OPS_EMAIL about a global webhook, and a disable at once rather than in a digest", async () => {
    const global = await harness.call("POST", "/v3/webhooks", {
      account: "acc_ops",
      admin: true,
      body: { url: `${receiver.url}/global`, events: ["payment-debt.created"], scope: "global" },
    });
    await harness.call("PATCH", `/v3/webhooks/${global.body.id}`, {
      account: "acc_ops",
      admin: true,
      body: { status: "paused" },
    });
    await notifyOwner(harness.hooklane.database, {
      webhookId: global.body.id,
      kind: "webhook.disabled",
      detail: { reason: "drill" },
    });
    const before = mails.length;
    await sweepAt(0);
    expect(mails.slice(before).map((mail) => [mail.to, mail.subject])).toEqual([
      [[OPS_EMAIL], `Webhook ${global.body.id} was disabled`],
    ]);
  });
});
