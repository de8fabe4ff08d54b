import { readMigrationFiles, type MigrationMeta } from "drizzle-orm/migrator";
import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../lib/db/client.ts";
import { openDatabase } from "../../lib/db/client.ts";
import { applyMigrations, MIGRATIONS_FOLDER } from "../../lib/db/migrations.ts";
import { createTestDatabase } from "../support/postgres.ts";

/**
 * A migration's `CREATE INDEX CONCURRENTLY` on real PostgreSQL: built
 * outside the migration's transaction (PostgreSQL refuses it inside one),
 * and, when a build fails and leaves the index invalid, built again by the
 * next migrator once the cause is gone.
 */
describe("concurrent index migrations, on PostgreSQL", () => {
  let database: Database;
  let drop: () => Promise<void>;
  const committed = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
  const next = (n: number, statements: string[]): MigrationMeta => ({
    sql: statements,
    bps: true,
    folderMillis: committed.at(-1)!.folderMillis + n,
    hash: `test-${n}`,
  });

  beforeAll(async () => {
    const created = await createTestDatabase();
    drop = created.drop;
    database = await openDatabase({ databaseUrl: created.url, schema: "apply" });
  });
  afterAll(async () => {
    await database?.close();
    await drop?.();
  });

  const index = async (name: string) =>
    (
      await database.rows<{ valid: boolean }>(sql`
        select i.indisvalid as valid from pg_class c join pg_index i on i.indexrelid = c.oid where c.relname = ${name}
      `)
    )[0];

  it("builds the index outside the migration's transaction and records the migration", async () => {
    await applyMigrations(database, [
      ...committed,
      next(1, [
        'CREATE INDEX CONCURRENTLY "test_dispatch_created_idx" ON "webhook_dispatch" USING btree ("created_at")',
      ]),
    ]);
    expect(await index("test_dispatch_created_idx")).toEqual({ valid: true });
    const [recorded] = await database.rows<{ n: number }>(
      sql`select count(*)::int as n from drizzle.__drizzle_migrations where hash = 'test-1'`,
    );
    expect(recorded!.n).toBe(1);
  });

  it("builds again an index a failed build left invalid, once the cause is gone", async () => {
    const migrations = [
      ...committed,
      next(1, [
        'CREATE INDEX CONCURRENTLY "test_dispatch_created_idx" ON "webhook_dispatch" USING btree ("created_at")',
      ]),
      next(2, [
        "CREATE TABLE test_pair (x integer)",
        "INSERT INTO test_pair VALUES (1), (1)",
        'CREATE UNIQUE INDEX CONCURRENTLY "test_pair_x_idx" ON "test_pair" ("x")',
      ]),
    ];
    // The duplicate makes the unique build fail: PostgreSQL leaves the index behind, invalid.
    await expect(applyMigrations(database, migrations)).rejects.toThrow(/CREATE UNIQUE INDEX CONCURRENTLY/);
    expect(await index("test_pair_x_idx")).toEqual({ valid: false });
    await database.rows(sql`delete from test_pair where ctid = (select max(ctid) from test_pair)`);
    await applyMigrations(database, migrations);
    expect(await index("test_pair_x_idx")).toEqual({ valid: true });
    // Run once more: nothing left to do, nothing rebuilt.
    const [before] = await database.rows<{ oid: number }>(sql`select 'test_pair_x_idx'::regclass::oid::int as oid`);
    await applyMigrations(database, migrations);
    const [after] = await database.rows<{ oid: number }>(sql`select 'test_pair_x_idx'::regclass::oid::int as oid`);
    expect(after).toEqual(before);
  });

  it("lets migrators starting together meet an invalid index: one builds it again, the others wait and build nothing", async () => {
    const migrations = [
      ...committed,
      next(3, [
        "CREATE TABLE test_triple (x integer)",
        "INSERT INTO test_triple VALUES (1), (1)",
        'CREATE UNIQUE INDEX CONCURRENTLY "test_triple_x_idx" ON "test_triple" ("x")',
        'CREATE INDEX CONCURRENTLY "test_triple_y_idx" ON "test_triple" (abs("x"))',
      ]),
    ];
    await expect(applyMigrations(database, migrations)).rejects.toThrow(/CREATE UNIQUE INDEX CONCURRENTLY/);
    expect(await index("test_triple_x_idx")).toEqual({ valid: false });
    await database.rows(sql`delete from test_triple where ctid = (select max(ctid) from test_triple)`);
    // Each on a pool of its own, as processes are: every one of them sees the invalid index at first.
    const url = (database.db as unknown as { $client: { options: { connectionString: string } } }).$client.options
      .connectionString;
    const migrators = await Promise.all(
      Array.from({ length: 6 }, () => openDatabase({ databaseUrl: url, schema: "as-is" })),
    );
    // A reader holds the table meanwhile: the first drop waits for it, and every migrator has looked by then.
    const reader = new pg.Client({ connectionString: url });
    await reader.connect();
    try {
      await reader.query("begin");
      await reader.query("select count(*) from test_triple");
      const migrated = Promise.allSettled(migrators.map((migrator) => applyMigrations(migrator, migrations)));
      await new Promise((resolve) => setTimeout(resolve, 500));
      await reader.query("commit");
      const failed = (await migrated).filter((outcome) => outcome.status === "rejected");
      expect(failed.map((outcome) => String(outcome.reason?.cause ?? outcome.reason))).toEqual([]);
    } finally {
      await reader.end();
      await Promise.all(migrators.map((migrator) => migrator.close()));
    }
    expect(await index("test_triple_x_idx")).toEqual({ valid: true });
    expect(await index("test_triple_y_idx")).toEqual({ valid: true });
    const [locks] = await database.rows<{ n: number }>(sql`
      select count(*)::int as n from pg_locks
      where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())
    `);
    expect(locks!.n).toBe(0);
  });
});
