import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Database } from "../../lib/db/client.ts";
import { functionDrift } from "../../lib/db/function-drift.ts";
import { FUNCTIONS_FOLDER, readFunctionSources } from "../../lib/db/function-sources.ts";
import { postgresFactory } from "../support/postgres.ts";

const run = promisify(execFile);

let database: Database;
let databaseUrl: string;
let drop: () => Promise<void>;

beforeAll(async () => {
  const created = await postgresFactory();
  ({ database, drop } = created);
  databaseUrl = created.databaseUrl!;
}, 60_000);
afterAll(async () => {
  await database?.close();
  await drop?.();
});

/** `npm run db:check` against this database: its exit code and what it printed. */
async function dbCheck(): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run("node", ["scripts/db-check.ts"], {
      env: { ...process.env, DATABASE_URL: databaseUrl },
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

it("finds a migrated database holding exactly the source files' functions, one signature each", async () => {
  const installed = await database.rows<{ signature: string }>(sql`
    select p.oid::regprocedure::text as signature from pg_proc p
    where p.pronamespace = 'public'::regnamespace order by 1
  `);
  const sources = readFunctionSources().map((s) => s.name);
  expect(installed.map((row) => row.signature.replace(/\(.*$/, ""))).toEqual(sources);
  expect(await functionDrift(database)).toEqual([]);
});

it("fails `npm run db:check` on a function edited by hand, naming it and its file", async () => {
  const [{ definition }] = (await database.rows<{ definition: string }>(sql`
    select pg_get_functiondef('hooklane_latency_bucket(integer)'::regprocedure) as definition
  `)) as [{ definition: string }];
  const clean = await dbCheck();
  expect(clean.output).toContain("agree");
  expect(clean.code).toBe(0);
  await database.rows(sql.raw(definition.replace("least(79,", "least(78,")));
  try {
    const edited = await dbCheck();
    expect(edited.code).toBe(1);
    expect(edited.output).toContain(
      "hooklane_latency_bucket is not lib/db/functions/hooklane_latency_bucket.sql: edited by hand",
    );
  } finally {
    await database.rows(sql.raw(definition));
  }
}, 120_000);

it("names a retired overload and a function with no source file", async () => {
  await database.rows(
    sql`create function hooklane_latency_bucket(p_ms bigint) returns integer language sql as $$ select 0 $$`,
  );
  await database.rows(sql`create function hooklane_forgotten() returns integer language sql as $$ select 1 $$`);
  try {
    const problems = await functionDrift(database);
    expect(problems).toEqual([
      expect.stringMatching(/^hooklane_latency_bucket has 2 signatures \(.*\): drop the retired ones/),
      "hooklane_forgotten (hooklane_forgotten()) has no source file: drop it in a migration",
    ]);
  } finally {
    await database.rows(sql`drop function hooklane_latency_bucket(bigint)`);
    await database.rows(sql`drop function hooklane_forgotten()`);
  }
  expect(await functionDrift(database)).toEqual([]);
});

it("names a missing trigger and storage settings that are not the file's", async () => {
  await database.rows(sql`drop trigger webhook_dispatch_gone on webhook_dispatch`);
  await database.rows(sql`alter table webhook_dispatch_open reset (fillfactor)`);
  try {
    expect(await functionDrift(database)).toEqual([
      "trigger webhook_dispatch_gone on webhook_dispatch (running hooklane_dispatch_gone) is missing: run `npm run db:migrate`",
      "webhook_dispatch_open lacks fillfactor=70: run `npm run db:migrate`",
    ]);
  } finally {
    const gone = readFunctionSources().find((s) => s.name === "hooklane_dispatch_gone")!;
    for (const statement of gone.statements) await database.rows(sql.raw(statement));
    await database.rows(sql`alter table webhook_dispatch_open set (fillfactor = 70)`);
  }
  expect(await functionDrift(database)).toEqual([]);
});

it("names a source that no product code calls", async () => {
  const folder = mkdtempSync(join(tmpdir(), "hooklane-functions-"));
  cpSync(FUNCTIONS_FOLDER, folder, { recursive: true });
  writeFileSync(
    join(folder, "hooklane_unused.sql"),
    "-- hooklane_unused: nothing calls it.\nCREATE OR REPLACE FUNCTION hooklane_unused() RETURNS integer\nLANGUAGE sql\nAS $$ SELECT 1 $$;\n",
  );
  const sources = readFunctionSources(folder);
  const unused = sources.find((s) => s.name === "hooklane_unused")!;
  await database.rows(sql.raw(unused.statements[0]!));
  try {
    expect(await functionDrift(database, sources)).toEqual([
      "hooklane_unused is called by nothing: delete its source and drop it in a migration",
    ]);
  } finally {
    await database.rows(sql`drop function hooklane_unused()`);
    rmSync(folder, { recursive: true, force: true });
  }
});
