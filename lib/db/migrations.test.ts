import { PGlite } from "@electric-sql/pglite";
import { sql } from "drizzle-orm";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { describe, expect, it } from "vitest";
import { openDatabase } from "./client.ts";
import { applyMigrations, concurrentIndex, MIGRATIONS_FOLDER } from "./migrations.ts";

describe("concurrentIndex", () => {
  it("reads a concurrent index and writes it both ways, safe to run again", () => {
    expect(concurrentIndex('CREATE UNIQUE INDEX CONCURRENTLY "a_b_idx" ON "a" USING btree ("b");')).toEqual({
      name: "a_b_idx",
      concurrent: 'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "a_b_idx" ON "a" USING btree ("b");',
      inTransaction: 'CREATE UNIQUE INDEX IF NOT EXISTS "a_b_idx" ON "a" USING btree ("b");',
    });
    expect(concurrentIndex("-- why\ncreate index concurrently if not exists a_c on a (c)")?.name).toBe("a_c");
  });

  it("leaves every other statement alone", () => {
    expect(concurrentIndex('CREATE INDEX "a_b_idx" ON "a" ("b")')).toBeUndefined();
    expect(concurrentIndex("DROP INDEX CONCURRENTLY a_b_idx")).toBeUndefined();
  });
});

describe("applyMigrations on the embedded database", () => {
  it("builds a concurrent index in the migration's transaction, where nothing writes beside it", async () => {
    const database = await openDatabase({ pglite: await PGlite.create("memory://") });
    try {
      const committed = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
      await applyMigrations(
        database,
        [
          ...committed,
          {
            sql: ['CREATE INDEX CONCURRENTLY "test_dispatch_created_idx" ON "webhook_dispatch" ("created_at")'],
            bps: true,
            folderMillis: committed.at(-1)!.folderMillis + 1,
            hash: "test",
          },
        ],
        { concurrently: false },
      );
      const [row] = await database.rows<{ valid: boolean }>(sql`
        select i.indisvalid as valid from pg_class c join pg_index i on i.indexrelid = c.oid
        where c.relname = 'test_dispatch_created_idx'
      `);
      expect(row).toEqual({ valid: true });
    } finally {
      await database.close();
    }
  });
});
