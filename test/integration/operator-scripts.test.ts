import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/postgres.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/**
 * `npm run db:migrate` and `npm run catalogue:sync -- --dry-run` as an
 * operator runs them: from the project, with nothing set but the database
 * URL (no secret of the server's, no `.env`), against a real PostgreSQL.
 */
describe("operator scripts with DATABASE_URL alone", () => {
  let url: string;
  let drop: () => Promise<void>;
  let home: string;

  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase());
    home = await mkdtemp(join(tmpdir(), "hooklane-operator-"));
  });
  afterAll(async () => {
    await drop?.();
    if (home) await rm(home, { recursive: true, force: true });
  });

  const run = (script: string, ...args: string[]) => {
    const ran = spawnSync("npm", ["run", "-s", script, ...(args.length ? ["--", ...args] : [])], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: home, DATABASE_URL: url },
      encoding: "utf8",
      timeout: 120_000,
    });
    return { code: ran.status, output: `${ran.stdout}${ran.stderr}` };
  };

  /** The schema (tables, columns, functions' bodies) and the catalogue's rows, as one text to compare. */
  async function snapshot(): Promise<string> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(`
        select
          (select coalesce(string_agg(table_name || '.' || column_name || ':' || data_type, ',' order by 1), '')
             from information_schema.columns where table_schema = 'public') as columns,
          (select coalesce(string_agg(pg_get_functiondef(p.oid), ';' order by p.proname), '')
             from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public') as functions,
          (select count(*)::int from pg_tables where schemaname = 'public') as tables`);
      const catalogue =
        rows[0].tables > 0 ? (await client.query("select * from webhook_event_type order by 1")).rows : [];
      return JSON.stringify({ ...rows[0], catalogue });
    } finally {
      await client.end();
    }
  }

  it("refuses a dry run on a database the migrations have not reached, and creates nothing", async () => {
    const before = await snapshot();
    const dry = run("catalogue:sync", "--dry-run");
    console.log(`[operator] dry run before db:migrate → exit ${dry.code}: ${dry.output.trim().split("\n").at(-1)}`);
    expect(dry.code).toBe(2);
    expect(dry.output).toContain("the database schema is behind this code");
    expect(dry.output).not.toContain("Invalid configuration");
    expect(await snapshot()).toBe(before);
    expect(JSON.parse(before).tables).toBe(0);
  });

  it("migrates with the URL alone, and a dry run then shows the diff and changes nothing", async () => {
    const migrated = run("db:migrate");
    console.log(`[operator] db:migrate → exit ${migrated.code}: ${migrated.output.trim()}`);
    expect(migrated.code, migrated.output).toBe(0);
    expect(migrated.output).toContain("database is up to date");
    const before = await snapshot();
    expect(JSON.parse(before).tables).toBeGreaterThan(0);

    const dry = run("catalogue:sync", "--dry-run");
    console.log(`[operator] catalogue:sync --dry-run → exit ${dry.code}: ${dry.output.trim().split("\n").at(-2)}`);
    expect(dry.code, dry.output).toBe(1);
    expect(dry.output).toMatch(/diff: \d+ added/);
    expect(dry.output).toContain("dry run: nothing changed");
    expect(await snapshot()).toBe(before);

    // And the real sync, with the URL alone too.
    const synced = run("catalogue:sync", "--yes");
    expect(synced.code, synced.output).toBe(0);
    expect(await snapshot()).not.toBe(before);
  });
});
