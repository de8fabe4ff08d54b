import { createServer, connect, type Server, type Socket } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createVercelRuntime } from "../../app/vercel-runtime.ts";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET, loadConfig } from "../../lib/config/env.ts";
import { openDatabase } from "../../lib/db/client.ts";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { applyMigrations, MIGRATION_LOCK, MIGRATIONS_FOLDER } from "../../lib/db/migrations.ts";
import journal from "../../drizzle/meta/_journal.json" with { type: "json" };
import { createTestDatabase } from "../support/postgres.ts";

/** A TCP proxy to the test server that drops the first `failFirst` connections, as a database waking up does. */
async function flakyProxy(
  target: URL,
  failFirst: number,
): Promise<{ port: number; accepted: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted++;
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    if (accepted <= failFirst) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(target.port || 5432), target.hostname);
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    get accepted() {
      return accepted;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The environment of a Vercel function (not a production deployment, so the development token works). */
const functionEnv = (databaseUrl: string) => ({
  VERCEL: "1",
  NODE_ENV: "test",
  DATABASE_URL: databaseUrl,
  CATALOGUE_AUTO_SYNC: "false",
});

async function apiRequest(): Promise<Request> {
  const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "ops", account: "acc_ops", admin: true });
  return new Request("https://hooklane.test/v3/webhook-event-types", { headers: { authorization: `Bearer ${token}` } });
}

async function migrated(url: string): Promise<void> {
  await (await openDatabase({ databaseUrl: url, schema: "apply" })).close();
}

describe("Vercel functions starting cold", () => {
  let db: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    db = await createTestDatabase();
    await migrated(db.url);
  });
  afterAll(async () => {
    await db.drop();
  });

  it("serve the next request after a start whose first database connection failed", async () => {
    const proxy = await flakyProxy(new URL(db.url), 1);
    const url = new URL(db.url);
    url.host = `127.0.0.1:${proxy.port}`;
    const runtime = createVercelRuntime(() => loadConfig(functionEnv(url.toString())));
    try {
      const first = await runtime.api(await apiRequest());
      expect(first.status).toBe(503);
      expect(first.headers.get("content-type")).toBe("application/problem+json");
      expect(await first.json()).toMatchObject({ status: 503, title: "Service Unavailable" });
      const second = await runtime.api(await apiRequest());
      expect(second.status).toBe(200);
      expect(proxy.accepted).toBeGreaterThan(1);
    } finally {
      await proxy.close();
    }
  });

  it("answer 503 naming the command to run while the schema is one migration behind, and start once it is run", async () => {
    const behind = await createTestDatabase();
    try {
      // Every migration but the newest: what the previous deployment left.
      const previousDeployment = await openDatabase({ databaseUrl: behind.url, schema: "as-is" });
      await applyMigrations(
        previousDeployment,
        readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).slice(0, -1),
      );
      await previousDeployment.close();
      const runtime = createVercelRuntime(() => loadConfig(functionEnv(behind.url)));
      // Before the first migration (the squashed baseline) the database has none.
      const previous = journal.entries.at(-2)?.tag ?? "no migration";
      const needed = journal.entries.at(-1)!.tag;

      for (const handler of [runtime.api, runtime.lane]) {
        const response = await handler(await apiRequest());
        expect(response.status).toBe(503);
        const problem = (await response.json()) as { detail: string };
        expect(problem.detail).toContain(`it has ${previous}, this code needs ${needed}`);
        expect(problem.detail).toContain("Run `npm run db:migrate`");
      }

      await migrated(behind.url);
      expect((await runtime.api(await apiRequest())).status).toBe(200);
    } finally {
      await behind.drop();
    }
  });

  it("take no lock when many start at once: they only read the schema's version", async () => {
    // Held by this session for the whole test: a start that waited for the migration lock would never finish.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    await holder.query("select pg_advisory_lock($1)", [MIGRATION_LOCK]);
    const runtimes = Array.from({ length: 8 }, () => createVercelRuntime(() => loadConfig(functionEnv(db.url))));
    try {
      const answers = await Promise.all(
        runtimes.map(async (runtime) => (await runtime.api(await apiRequest())).status),
      );
      expect(answers).toEqual(Array(8).fill(200));
      const { rows } = await holder.query<{ n: number }>(
        "select count(*)::int as n from pg_locks where locktype = 'advisory' and pid <> pg_backend_pid()" +
          " and database = (select oid from pg_database where datname = current_database())",
      );
      expect(rows[0]!.n).toBe(0);
    } finally {
      await holder.end();
    }
  });
});

describe("self-hosted processes starting together", () => {
  it("migrate once, one after the other, and leave no lock behind", async () => {
    const fresh = await createTestDatabase();
    const opened = await Promise.all(
      Array.from({ length: 6 }, () => openDatabase({ databaseUrl: fresh.url, schema: "apply" })),
    );
    const probe = new pg.Client({ connectionString: fresh.url });
    await probe.connect();
    try {
      const applied = await probe.query<{ n: number }>("select count(*)::int as n from drizzle.__drizzle_migrations");
      expect(applied.rows[0]!.n).toBe(journal.entries.length);
      // Every process still holds its pool open: a session lock taken by any of them would still be here.
      const locks = await probe.query<{ n: number }>(
        "select count(*)::int as n from pg_locks where locktype = 'advisory'" +
          // This database's: other suites' lanes claim on the same server meanwhile.
          " and database = (select oid from pg_database where datname = current_database())",
      );
      expect(locks.rows[0]!.n).toBe(0);
    } finally {
      await probe.end();
      await Promise.all(opened.map((database) => database.close()));
      await fresh.drop();
    }
  });
});
