import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import { webhook, webhookEventType } from "../../lib/db/schema.ts";
import { applyCatalogueSync, eventTypeRow } from "../../lib/webhook/catalogue/catalogue-sync.ts";
import { CATALOGUE } from "../../lib/webhook/catalogue/webhook-event-catalogue.ts";
import { createTestDatabase } from "../support/postgres.ts";

const SCRIPT = fileURLToPath(new URL("../../scripts/catalogue-sync.ts", import.meta.url));

/** Runs `npm run catalogue:sync -- <args>` as ops would, against `databaseUrl`, with stdin not a terminal. */
function sync(databaseUrl: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [SCRIPT, ...args],
      { env: { ...process.env, DATABASE_URL: databaseUrl } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

describe("npm run catalogue:sync on PostgreSQL", () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  /** A new database, migrated as `npm run db:migrate` leaves it: a dry run never migrates one itself. */
  async function freshDatabase(): Promise<string> {
    const created = await createTestDatabase();
    cleanup.push(created.drop);
    await (await openDatabase({ databaseUrl: created.url, poolMax: 1 })).close();
    return created.url;
  }

  async function connect(url: string): Promise<Database> {
    const database = await openDatabase({ databaseUrl: url, poolMax: 2 });
    cleanup.push(() => database.close());
    return database;
  }

  it("dry-runs every event as added (exit 1), applies with --yes, then dry-runs clean (exit 0)", async () => {
    const url = await freshDatabase();
    const total = CATALOGUE.length;

    const before = await sync(url, "--dry-run");
    expect(before.code).toBe(1);
    for (const entry of CATALOGUE)
      expect(before.stdout).toMatch(new RegExp(`\\+ ${entry.internal.replaceAll(".", "\\.")} +added`));
    expect(before.stdout).toContain(`diff: ${total} added, 0 changed, 0 deprecated, 0 unchanged`);
    expect(before.stdout).toContain("dry run: nothing changed");

    const unconfirmed = await sync(url);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toContain("pass --yes to apply without a prompt");

    const applied = await sync(url, "--yes");
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain(`[${total}/${total}] added subscription.updated`);
    expect(applied.stdout).toContain(`applied: ${total} added, 0 changed, 0 deprecated, 0 unchanged`);

    const after = await sync(url, "--dry-run");
    expect(after.code).toBe(0);
    expect(after.stdout).toContain(`diff: 0 added, 0 changed, 0 deprecated, ${total} unchanged`);
    expect(after.stdout).toContain("the database matches the catalogue; nothing to do");
  });

  it("refuses to deprecate a type a webhook still names, naming it, until --force", async () => {
    const url = await freshDatabase();
    const database = await connect(url);
    await applyCatalogueSync(database, CATALOGUE);
    // A type an earlier build shipped and this one no longer has.
    const retired = { ...eventTypeRow(CATALOGUE[0]!), internal: "account.merged", route: "/v3/accounts/:id/merge" };
    await database.db.insert(webhookEventType).values(retired);
    const [hook] = await database.db
      .insert(webhook)
      .values({ url: "https://example.test/h", events: ["account.merged"], secretSealed: "x", createdBy: "test" })
      .returning();
    const naming = `refusing to deprecate account.merged: still subscribed by 1 webhook: ${hook!.id} (global, active)`;

    const dryRun = await sync(url, "--dry-run");
    expect(dryRun.code).toBe(1);
    expect(dryRun.stdout).toContain(`- account.merged  deprecated, still subscribed by 1 webhook: ${hook!.id}`);
    expect(dryRun.stderr).toContain(naming);

    const refused = await sync(url, "--yes");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(naming);
    expect(refused.stderr).toContain("run again with --force");
    const stored = async () =>
      (await database.db.select().from(webhookEventType).where(eq(webhookEventType.internal, "account.merged")))[0];
    expect((await stored())?.deprecated).toBe(false);

    const forced = await sync(url, "--yes", "--force");
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain("[1/1] deprecated account.merged");
    expect(forced.stdout).toContain("(1 forced past their subscribers)");
    expect((await stored())?.deprecated).toBe(true);
  });

  it("serialises concurrent syncs: one applies, the other finds nothing to do", async () => {
    const url = await freshDatabase();
    const [a, b] = [await connect(url), await connect(url)];
    const outcomes = await Promise.all([applyCatalogueSync(a, CATALOGUE), applyCatalogueSync(b, CATALOGUE)]);
    expect(outcomes.map((result) => result.outcome).sort()).toEqual(["applied", "unchanged"]);
  });
});
