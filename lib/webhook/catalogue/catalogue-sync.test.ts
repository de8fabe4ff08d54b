import { eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { pgliteFactory } from "../../../test/support/harness.ts";
import type { Database } from "../../db/client.ts";
import { webhook, webhookEventType } from "../../db/schema.ts";
import type { CatalogueEntry } from "./catalogue-entry.ts";
import { applyCatalogueSync, eventTypeRow, planCatalogueSync, type CatalogueSyncStep } from "./catalogue-sync.ts";
import { formatCatalogueDiff, formatRefusal, summarizeCatalogueSync } from "./catalogue-sync-report.ts";
import { CATALOGUE } from "./webhook-event-catalogue.ts";

// One throwaway database for the file, emptied before each test: cloning one costs more than the tests.
let database: Database;
beforeAll(async () => {
  ({ database } = await pgliteFactory());
});
beforeEach(async () => {
  await database.db.delete(webhook);
  await database.db.delete(webhookEventType);
});
afterAll(() => database.close());

const without = (internal: string) => CATALOGUE.filter((entry) => entry.internal !== internal);
const changing = (internal: string, change: Partial<CatalogueEntry>) =>
  CATALOGUE.map((entry) => (entry.internal === internal ? { ...entry, ...change } : entry));

async function stored(internal: string) {
  const [row] = await database.db.select().from(webhookEventType).where(eq(webhookEventType.internal, internal));
  return row;
}

async function subscribe(events: string[], account: string | null = "acc_alice") {
  const [row] = await database.db
    .insert(webhook)
    .values({ url: "https://example.test/hook", events, account, secretSealed: "sealed", createdBy: "test" })
    .returning();
  return row!;
}

describe("catalogue sync", () => {
  it("adds every event to an empty database, stores what subscribers see, and is idempotent", async () => {
    const plan = await planCatalogueSync(database, CATALOGUE);
    expect(plan.added.map((row) => row.internal)).toEqual(CATALOGUE.map((entry) => entry.internal));
    expect(summarizeCatalogueSync(plan)).toBe(`${CATALOGUE.length} added, 0 changed, 0 deprecated, 0 unchanged`);

    const steps: CatalogueSyncStep[] = [];
    const first = await applyCatalogueSync(database, CATALOGUE, { onStep: (step) => steps.push(step) });
    expect(first.outcome).toBe("applied");
    expect(steps.map((step) => `${step.index}/${step.total} ${step.kind}`)).toEqual(
      CATALOGUE.map((_, index) => `${index + 1}/${CATALOGUE.length} added`),
    );
    const row = await stored("subscription.history.created");
    expect(row).toMatchObject(eventTypeRow(CATALOGUE.find((e) => e.internal === "subscription.history.created")!));
    // The example keeps the body's key order, as a subscriber receives it.
    expect(Object.keys(row!.example)).toEqual(["id", "type", "created", "livemode", "data"]);

    const second = await applyCatalogueSync(database, CATALOGUE);
    expect(second.outcome).toBe("unchanged");
    expect(second.plan.unchanged).toHaveLength(CATALOGUE.length);
  });

  it("reports and applies a change field by field", async () => {
    await applyCatalogueSync(database, CATALOGUE);
    const edited = changing("payment-debt.updated", { description: "A payment debt changed its status." });
    const plan = await planCatalogueSync(database, edited);
    expect(plan.changed).toEqual([
      { fields: ["description"], row: expect.objectContaining({ internal: "payment-debt.updated" }) },
    ]);
    expect((await applyCatalogueSync(database, edited)).outcome).toBe("applied");
    expect((await stored("payment-debt.updated"))?.description).toBe("A payment debt changed its status.");
    expect((await applyCatalogueSync(database, edited)).outcome).toBe("unchanged");
  });

  it("deprecates an event that left the catalogue instead of deleting it, and restores it when it comes back", async () => {
    await applyCatalogueSync(database, CATALOGUE);
    const { outcome, plan } = await applyCatalogueSync(database, without("general.address.purged"));
    expect(outcome).toBe("applied");
    expect(plan.deprecated).toEqual([
      { row: expect.objectContaining({ internal: "general.address.purged", deprecated: true }), subscribers: [] },
    ]);
    expect(await stored("general.address.purged")).toMatchObject({
      deprecated: true,
      route: "/v3/general-addresses/:id",
    });
    expect((await applyCatalogueSync(database, without("general.address.purged"))).outcome).toBe("unchanged");

    const restored = await applyCatalogueSync(database, CATALOGUE);
    expect(restored.plan.changed).toEqual([
      { fields: ["deprecated"], row: expect.objectContaining({ internal: "general.address.purged" }) },
    ]);
    expect((await stored("general.address.purged"))?.deprecated).toBe(false);
  });

  it("treats `deprecated: true` in the catalogue as a deprecation", async () => {
    await applyCatalogueSync(database, CATALOGUE);
    const plan = await planCatalogueSync(database, changing("subscription.purged", { deprecated: true }));
    expect(plan.deprecated.map(({ row }) => row.internal)).toEqual(["subscription.purged"]);
  });

  it("refuses, writing nothing, to deprecate an event webhooks name explicitly, and names them; force deprecates", async () => {
    await applyCatalogueSync(database, CATALOGUE);
    const explicit = await subscribe(["payment-debt.created", "payment-debt.updated"]);
    const global = await subscribe(["payment-debt.created"], null);
    await database.db.update(webhook).set({ status: "paused" }).where(eq(webhook.id, global.id));
    await subscribe(["*"]); // hears everything, names nothing: never blocks a deprecation
    const next = changing("account.updated", { description: "An account's name or e-mail address changed." }).filter(
      (entry) => entry.internal !== "payment-debt.created",
    );

    const refused = await applyCatalogueSync(database, next);
    expect(refused.outcome).toBe("refused");
    const [first, second] = [explicit.id, global.id].sort();
    const named = (id: string) => (id === explicit.id ? `${id} (account acc_alice, active)` : `${id} (global, paused)`);
    expect(formatRefusal(refused.plan)).toEqual([
      `refusing to deprecate payment-debt.created: still subscribed by 2 webhooks: ${named(first!)}, ${named(second!)}`,
    ]);
    expect((await stored("payment-debt.created"))?.deprecated).toBe(false);
    expect((await stored("account.updated"))?.description).not.toContain("e-mail");

    const forced = await applyCatalogueSync(database, next, { force: true });
    expect(forced.outcome).toBe("applied");
    expect((await stored("payment-debt.created"))?.deprecated).toBe(true);
    expect((await stored("account.updated"))?.description).toContain("e-mail");
  });

  it("prints one line per change and counts the rest", async () => {
    await applyCatalogueSync(database, without("subscription.updated"));
    const hook = await subscribe(["general.address.created"]);
    const next = changing("account.created", { since: "2026-12-02" }).filter(
      (entry) => entry.internal !== "general.address.created",
    );
    expect(formatCatalogueDiff(await planCatalogueSync(database, next))).toEqual([
      "  + subscription.updated     added: PATCH /v3/subscriptions/:id",
      "  ~ account.created          changed: since",
      `  - general.address.created  deprecated, still subscribed by 1 webhook: ${hook.id} (account acc_alice, active)`,
      `  = ${CATALOGUE.length - 3} unchanged`,
    ]);
  });
});
