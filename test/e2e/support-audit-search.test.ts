import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLog, webhookAttempt, webhookDispatch } from "../../lib/db/schema.ts";
import { notifyOwner } from "../../lib/webhook/outbound/webhook-owner-notifier.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ALICE = { account: "acc_alice", sub: "alice@example.com" };
const BOB = { account: "acc_bob", sub: "bob@example.com" };
const BOB_ADMIN = { account: "acc_bob", admin: true, sub: "bob-admin" };
const CAROL = { account: "acc_carol", sub: "carol@example.com" };
const SUPPORT = { account: "acc_helpdesk", support: true, sub: "agent-7" };

interface Dispatch {
  id: string;
  webhook: string;
  event: { id: string; type: string };
  status: string;
  run: number;
}

describe("support, audit, soft delete, search and resend", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    harness = await startHarness(pgliteFactory, { env: { WEBHOOK_TIMEOUT_MS: "10000" } });
    await harness.accounts(ALICE.account, BOB.account, CAROL.account, SUPPORT.account);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await harness?.close();
    await receiver?.close();
  });

  const webhookOf = async (who: typeof ALICE, path: string, events: string[]) => {
    const created = await harness.call("POST", "/v3/webhooks", {
      ...who,
      body: { url: `${receiver.url}${path}`, events },
    });
    expect(created.status).toBe(201);
    return created.body as { id: string; secret: string };
  };
  const settledLog = (who: object, webhookId: string, count: number) =>
    eventually(
      () =>
        harness
          .call("GET", `/v3/webhooks/${webhookId}/dispatches?limit=100`, who)
          .then((r) => r.body.data as Dispatch[]),
      (rows) => rows.length === count && rows.every((row) => row.status === "success"),
    );
  const auditOf = async (who: object, target?: string) =>
    (await harness.call("GET", `/v3/audit-log?limit=100${target ? `&target=${target}` : ""}`, who)).body.data as Array<{
      action: string;
      target: string;
      account: string | null;
      actor: { sub: string; account: string; role: string | null };
      detail: Record<string, unknown>;
    }>;

  it("lets support read and retry another account's delivery without a secret; an admin of another account cannot; both are audited", async () => {
    const hook = await webhookOf(ALICE, "/alice-support", ["payment-debt.created"]);
    await harness.call("POST", "/v3/payment-debts", { ...ALICE, body: { amount: "5.00", currency: "EUR" } });
    await harness.settled();
    const [dispatch] = await settledLog(ALICE, hook.id, 1);

    for (const path of [`/v3/webhook-dispatches/${dispatch!.id}`, `/v3/webhooks/${hook.id}`]) {
      const read = await harness.call("GET", path, SUPPORT);
      expect(read.status, path).toBe(200);
      expect(read.text).not.toContain(hook.secret);
      expect(read.body).not.toHaveProperty("secret");
    }
    const retried = await harness.call("POST", `/v3/webhook-dispatches/${dispatch!.id}/retry`, SUPPORT);
    expect(retried.status).toBe(202);
    expect(retried.body).toMatchObject({ status: "pending", run: 2 });
    await receiver.waitFor(2, { filter: (post) => post.path === "/alice-support" });

    // An ordinary admin of another account: absent, and nothing it tried is recorded against Alice's objects.
    expect((await harness.call("GET", `/v3/webhook-dispatches/${dispatch!.id}`, BOB_ADMIN)).status).toBe(404);
    expect((await harness.call("POST", `/v3/webhook-dispatches/${dispatch!.id}/retry`, BOB_ADMIN)).status).toBe(404);
    // Support cannot change the webhook or see its secret by rotating it.
    expect((await harness.call("POST", `/v3/webhooks/${hook.id}/rotate-secret`, SUPPORT)).status).toBe(404);
    expect(
      (await harness.call("PATCH", `/v3/webhooks/${hook.id}`, { ...SUPPORT, body: { description: "x" } })).status,
    ).toBe(404);

    const audit = await auditOf(ALICE, dispatch!.id);
    expect(audit.map((entry) => [entry.action, entry.actor])).toEqual([
      ["dispatch.retried", { sub: "agent-7", account: SUPPORT.account, role: "support" }],
      ["dispatch.read", { sub: "agent-7", account: SUPPORT.account, role: "support" }],
    ]);
    // Support reads the same log; Bob's does not show Alice's.
    expect((await auditOf(SUPPORT, dispatch!.id)).length).toBe(2);
    expect((await auditOf(BOB_ADMIN)).some((entry) => entry.target === dispatch!.id)).toBe(false);
  });

  it("records support's reads of another account's audit log under that account, naming support; the account's own add none", async () => {
    const hook = await webhookOf(ALICE, "/alice-audit-read", ["payment-debt.created"]);
    const before = await auditOf(ALICE);
    // Alice reading her own log, however she asks, leaves it as it was.
    for (const query of ["", `&target=${hook.id}`, `&account=${ALICE.account}`]) {
      expect((await harness.call("GET", `/v3/audit-log?limit=100${query}`, ALICE)).status, query).toBe(200);
    }
    expect(await auditOf(ALICE)).toEqual(before);

    // Support reads Alice's log by account, then by one of her objects: two entries, under Alice, naming support.
    const byAccount = await harness.call("GET", `/v3/audit-log?limit=100&account=${ALICE.account}`, SUPPORT);
    expect(byAccount.body.data).toHaveLength(before.length);
    const byTarget = await harness.call("GET", `/v3/audit-log?limit=100&target=${hook.id}`, SUPPORT);
    expect(byTarget.body.data.map((entry: { action: string }) => entry.action)).toEqual(["webhook.created"]);
    const after = await auditOf(ALICE);
    expect(after.slice(2)).toEqual(before);
    const actor = { sub: SUPPORT.sub, account: SUPPORT.account, role: "support" };
    expect(after.slice(0, 2)).toMatchObject([
      {
        action: "audit-log.read",
        target: "audit-log",
        account: ALICE.account,
        actor,
        detail: { target: hook.id, rows: 1 },
      },
      { action: "audit-log.read", target: "audit-log", account: ALICE.account, actor, detail: { rows: before.length } },
    ]);
    // On Alice's record only: Bob's shows none of it.
    expect((await auditOf(BOB)).some((entry) => entry.action === "audit-log.read")).toBe(false);
  });

  it("keeps a deleted webhook's delivery log readable, skips its undelivered events, and records who deleted it", async () => {
    const hook = await webhookOf(ALICE, "/alice-deleted", ["payment-debt.created"]);
    await harness.call("POST", "/v3/payment-debts", { ...ALICE, body: { amount: "6.00", currency: "EUR" } });
    await harness.settled();
    const [delivered] = await settledLog(ALICE, hook.id, 1);
    // One more, held while the webhook is paused: undelivered when it is deleted.
    await harness.call("PATCH", `/v3/webhooks/${hook.id}`, { ...ALICE, body: { status: "paused" } });
    await harness.call("POST", "/v3/payment-debts", { ...ALICE, body: { amount: "7.00", currency: "EUR" } });
    await harness.settled();
    await eventually(
      () => harness.call("GET", `/v3/webhooks/${hook.id}/dispatches`, ALICE).then((r) => r.body.data as Dispatch[]),
      (rows) => rows.length === 2,
    );

    const deleted = await harness.call("DELETE", `/v3/webhooks/${hook.id}`, ALICE);
    expect(deleted.body).toEqual({ id: hook.id, object: "webhook", deleted: true });
    expect((await harness.call("GET", `/v3/webhooks/${hook.id}`, ALICE)).status).toBe(404);
    expect(
      (await harness.call("PATCH", `/v3/webhooks/${hook.id}`, { ...ALICE, body: { status: "active" } })).status,
    ).toBe(404);
    const log = await harness.call("GET", `/v3/webhooks/${hook.id}/dispatches`, ALICE);
    expect(log.status).toBe(200);
    expect(log.body.data.map((row: Dispatch) => row.status)).toEqual(["skipped", "success"]);
    const detail = await harness.call("GET", `/v3/webhook-dispatches/${delivered!.id}`, ALICE);
    expect(detail.status).toBe(200);
    expect(detail.body.attempts).toHaveLength(1);
    // Another account still gets 404 for the deleted webhook's log.
    expect((await harness.call("GET", `/v3/webhooks/${hook.id}/dispatches`, BOB)).status).toBe(404);

    // It hears nothing more.
    await harness.call("POST", "/v3/payment-debts", { ...ALICE, body: { amount: "8.00", currency: "EUR" } });
    await harness.settled();
    const rows = await harness.hooklane.database.db
      .select()
      .from(webhookDispatch)
      .where(eq(webhookDispatch.webhookId, hook.id));
    expect(rows).toHaveLength(2);
    expect(receiver.posts.filter((post) => post.path === "/alice-deleted")).toHaveLength(1);

    const audit = await auditOf(ALICE, hook.id);
    expect(audit[0]).toMatchObject({
      action: "webhook.deleted",
      actor: { sub: ALICE.sub, account: ALICE.account, role: null },
    });
    expect(audit.map((entry) => entry.action)).toEqual(["webhook.deleted", "webhook.updated", "webhook.created"]);
  });

  it("searches by event id, resource id and type across the account's webhooks, and resends a type over a window", async () => {
    const first = await webhookOf(CAROL, "/carol-1", ["payment-debt.created", "subscription.created"]);
    const second = await webhookOf(CAROL, "/carol-2", ["payment-debt.created"]);
    const bobs = await webhookOf(BOB, "/bob", ["payment-debt.created"]);
    const windowStart = new Date().toISOString();
    const debts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const debt = await harness.call("POST", "/v3/payment-debts", {
        ...CAROL,
        body: { amount: "1.00", currency: "EUR" },
      });
      debts.push(debt.body.id);
    }
    await harness.call("POST", "/v3/subscriptions", { ...CAROL, body: { plan: "pro" } });
    await harness.call("POST", "/v3/payment-debts", { ...BOB, body: { amount: "2.00", currency: "EUR" } });
    await harness.settled();
    await settledLog(CAROL, first.id, 4);
    await settledLog(CAROL, second.id, 3);
    await settledLog(BOB, bobs.id, 1);
    const mine = new Set([first.id, second.id]);

    const search = async (query: string, who: object = CAROL) => {
      const answer = await harness.call("GET", `/v3/webhook-dispatches?${query}&limit=100`, who);
      expect(answer.status, `${query}: ${answer.text}`).toBe(200);
      return answer.body.data as Dispatch[];
    };
    const byResource = await search(`resourceId=${debts[1]}`);
    expect(byResource.map((d) => d.webhook).sort()).toEqual([...mine].sort());
    const eventId = byResource[0]!.event.id;
    expect(byResource.every((d) => d.event.id === eventId)).toBe(true);
    expect((await search(`eventId=${eventId}`)).map((d) => d.id).sort()).toEqual(byResource.map((d) => d.id).sort());
    const subscriptions = await search("type=subscription.created");
    expect(subscriptions.map((d) => d.webhook)).toEqual([first.id]);
    const debtsOfCarol = await search(`type=payment-debt.created&since=${windowStart}`);
    expect(debtsOfCarol).toHaveLength(6);
    expect(debtsOfCarol.every((d) => mine.has(d.webhook))).toBe(true);
    // Bob searching Carol's resource finds nothing; asking for nothing to search by is a 422.
    expect(await search(`resourceId=${debts[1]}`, BOB)).toEqual([]);
    expect((await harness.call("GET", "/v3/webhook-dispatches", CAROL)).status).toBe(422);

    // The resend job: the six delivered payment-debt.created dispatches, started over.
    const started = await harness.call("POST", "/v3/webhook-resends", {
      ...CAROL,
      body: { eventType: "payment-debt.created", since: windowStart },
    });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ object: "webhook-resend", status: "pending", account: CAROL.account });
    const progress = () =>
      harness.call("GET", `/v3/webhook-resends/${started.body.id}`, CAROL).then((answer) => answer.body);
    // Bob cannot see it.
    expect((await harness.call("GET", `/v3/webhook-resends/${started.body.id}`, BOB)).status).toBe(404);
    const done = await eventually(progress, (now) => now.status === "completed" && now.delivered === 6);
    expect(done).toMatchObject({ total: 6, requeued: 6, delivered: 6, failed: 0 });
    for (const dispatch of debtsOfCarol) {
      const attempts = await harness.hooklane.database.db
        .select()
        .from(webhookAttempt)
        .where(and(eq(webhookAttempt.dispatchId, dispatch.id), eq(webhookAttempt.run, 2)));
      expect(attempts.length, dispatch.id).toBeGreaterThanOrEqual(1);
    }
    // Delivered a second time; the subscription event and Bob's were not resent.
    expect(receiver.posts.filter((post) => post.path === "/carol-2")).toHaveLength(6);
    expect(receiver.posts.filter((post) => post.path === "/carol-1")).toHaveLength(7);
    expect(receiver.posts.filter((post) => post.path === "/bob")).toHaveLength(1);
  });

  it("records support's list reads and searches under each account whose rows they showed, naming support; the account's own add none", async () => {
    // Newest last, so a page of one shows Alice's only: Bob's webhook, a global one (Bob's admin's), then Alice's.
    const bobs = await webhookOf(BOB, "/bob-listed", ["subscription.created"]);
    const global = await harness.call("POST", "/v3/webhooks", {
      ...BOB_ADMIN,
      body: { url: `${receiver.url}/global-listed`, events: ["payment-debt.created"], scope: "global" },
    });
    expect(global.status).toBe(201);
    const alices = await webhookOf(ALICE, "/alice-listed", ["payment-debt.created"]);
    for (const webhookId of [bobs.id, alices.id]) {
      await notifyOwner(harness.hooklane.database, { webhookId, kind: "webhook.disabled", detail: {} });
    }
    const debt = await harness.call("POST", "/v3/payment-debts", {
      ...ALICE,
      body: { amount: "9.00", currency: "EUR" },
    });
    await harness.settled();
    const search = `/v3/webhook-dispatches?resourceId=${debt.body.id}&limit=100`;
    const found = await eventually(
      () => harness.call("GET", search, ALICE).then((r) => r.body.data as Dispatch[]),
      (rows) => rows.some((row) => row.webhook === alices.id),
    );

    const listed = new Set(["notification.read", "webhook.read", "dispatches.searched"]);
    const listReads = (entries: Awaited<ReturnType<typeof auditOf>>) =>
      entries.filter((entry) => listed.has(entry.action));
    // Alice listing and searching her own: nothing recorded.
    const before = await auditOf(ALICE);
    for (const path of ["/v3/notifications?limit=1", "/v3/webhooks?limit=1", search]) {
      expect((await harness.call("GET", path, ALICE)).status, path).toBe(200);
    }
    expect(await auditOf(ALICE)).toEqual(before);
    const adminBefore = listReads(await auditOf(BOB_ADMIN));

    const notifications = await harness.call("GET", "/v3/notifications?limit=1", SUPPORT);
    expect(notifications.body.data.map((row: { webhook: string }) => row.webhook)).toEqual([alices.id]);
    const webhooks = await harness.call("GET", "/v3/webhooks?limit=1", SUPPORT);
    expect(webhooks.body.data.map((row: { id: string }) => row.id)).toEqual([alices.id]);
    const searched = await harness.call("GET", search, SUPPORT);
    const rows = searched.body.data as Dispatch[];
    expect(rows.filter((row) => row.webhook === global.body.id)).toHaveLength(1);
    expect(rows).toHaveLength(found.length + 1);

    // On Alice's record, one entry a read, naming support and counting only her rows.
    const actor = { sub: SUPPORT.sub, account: SUPPORT.account, role: "support" };
    const after = await auditOf(ALICE);
    expect(after.slice(3)).toEqual(before);
    expect(after.slice(0, 3)).toMatchObject([
      {
        action: "dispatches.searched",
        target: debt.body.id,
        account: ALICE.account,
        actor,
        detail: { resourceId: debt.body.id, rows: found.length },
      },
      { action: "webhook.read", target: "webhooks", account: ALICE.account, actor, detail: { rows: 1 } },
      { action: "notification.read", target: "notifications", account: ALICE.account, actor, detail: { rows: 1 } },
    ]);
    // The global webhook's dispatch: under no account, which admins read.
    const adminAfter = listReads(await auditOf(BOB_ADMIN));
    expect(adminAfter.slice(1)).toEqual(adminBefore);
    expect(adminAfter[0]).toMatchObject({
      action: "dispatches.searched",
      target: debt.body.id,
      account: null,
      actor,
      detail: { rows: 1 },
    });
    // Bob's rows were on no page: nothing on his record. Nor on support's own account's.
    expect(listReads(await auditOf(BOB))).toEqual([]);
    const own = await harness.hooklane.database.db.select().from(auditLog).where(eq(auditLog.account, SUPPORT.account));
    expect(own.filter((entry) => listed.has(entry.action))).toEqual([]);
  });
});
