import { randomBytes } from "node:crypto";
import pg from "pg";
import { openDatabase } from "../../lib/db/client.ts";
import type { DatabaseFactory } from "./harness.ts";

/** The server integration suites run against (CI sets it). */
export function testDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error("TEST_DATABASE_URL is not set");
  return url;
}

/** Creates a throwaway database on the test server; each suite gets its own, so suites run in parallel. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = new URL(testDatabaseUrl());
  const name = `hooklane_test_${randomBytes(6).toString("hex")}`;
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query(`create database ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: admin.toString() });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

export const postgresFactory: DatabaseFactory = async () => {
  const created = await createTestDatabase();
  const database = await openDatabase({ databaseUrl: created.url });
  return { database, databaseUrl: created.url, drop: created.drop };
};
