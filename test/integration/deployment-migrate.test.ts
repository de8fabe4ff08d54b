import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/postgres.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/**
 * A deployment's build migrates its database as `vercel-build` runs it (the
 * step after the bundles, `scripts/deployment-migrate.ts`), against a real
 * PostgreSQL: once per build however many functions Vercel traces, and a
 * preview's only when told the preview has a database of its own.
 */
describe("a deployment's build migrates once, and a preview's only when told", () => {
  let url: string;
  let drop: () => Promise<void>;
  const deployment = `dpl_test${randomBytes(6).toString("hex")}`;
  const marker = join(ROOT, "dist", `.migrated-${deployment}`);

  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase());
  });
  afterAll(async () => {
    rmSync(marker, { force: true });
    await drop?.();
  });

  const build = (env: Record<string, string>) => {
    const ran = spawnSync(process.execPath, ["scripts/deployment-migrate.ts"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        DATABASE_URL: url,
        AUTH_JWT_SECRET: randomBytes(32).toString("base64url"),
        WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64url"),
        METRICS_TOKEN: randomBytes(24).toString("base64url"),
        ...env,
      },
      encoding: "utf8",
      timeout: 120_000,
    });
    return { code: ran.status, output: `${ran.stdout}${ran.stderr}` };
  };

  const tables = async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query("select count(*)::int as n from pg_tables where schemaname = 'public'")).rows[0].n;
    } finally {
      await client.end();
    }
  };

  it("leaves a preview's database alone unless MIGRATE_PREVIEW_DATABASE=true", async () => {
    const preview = build({ VERCEL_ENV: "preview", VERCEL_DEPLOYMENT_ID: `${deployment}p` });
    expect(preview.code, preview.output).toBe(0);
    expect(preview.output).toMatch(/a preview build migrates only a database of its own: nothing migrated/);
    expect(await tables()).toBe(0);
  });

  it("migrates a production build's database once, however often the build step runs", async () => {
    const first = build({ VERCEL_ENV: "production", VERCEL_DEPLOYMENT_ID: deployment });
    expect(first.code, first.output).toBe(0);
    expect(first.output).toMatch(/\[db:migrate\] postgres database is up to date/);
    expect(await tables()).toBeGreaterThan(10);
    expect(existsSync(marker)).toBe(true);
    for (let again = 0; again < 3; again++) {
      const next = build({ VERCEL_ENV: "production", VERCEL_DEPLOYMENT_ID: deployment });
      expect(next.code, next.output).toBe(0);
      expect(next.output).toMatch(new RegExp(`already migrated for ${deployment} in this build`));
      expect(next.output).not.toMatch(/db:migrate/);
    }
  });

  it("migrates a preview's database when told it is the preview's own", async () => {
    const told = build({ VERCEL_ENV: "preview", MIGRATE_PREVIEW_DATABASE: "true" });
    expect(told.code, told.output).toBe(0);
    expect(told.output).toMatch(/\[db:migrate\] postgres database is up to date/);
  });
});
