import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApp } from "../../app/app.ts";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../lib/config/env.ts";
import { createHooklane } from "../../lib/create-hooklane.ts";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import { capturedLogs } from "../support/captured-logs.ts";
import { eventually } from "../support/eventually.ts";
import { testConfig } from "../support/harness.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";

// Everything goes through a proxy the tests can cut or take away: PostgreSQL itself stays up for the other suites.
let proxy: TcpProxy;
let database: Database;
let drop: () => Promise<void>;
// Every line the database and the API log, parsed.
const { logger, lines } = capturedLogs();

beforeAll(async () => {
  const created = await createTestDatabase();
  drop = created.drop;
  const target = new URL(created.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  database = await openDatabase({ databaseUrl: proxy.via(created.url), logger, poolMax: 4 });
});

afterAll(async () => {
  await database?.close();
  await proxy?.close();
  await drop?.();
});

it("fails a transaction whose connection is cut between two statements, and not the process", async () => {
  let uncaught: unknown;
  const onUncaught = (error: unknown) => void (uncaught = error);
  process.on("uncaughtException", onUncaught);
  try {
    const attempt = database.transaction(async (tx) => {
      await tx.rows(sql`select 1`);
      proxy.cut();
      // The client hears of the cut while no statement of its runs.
      await eventually(
        async () => database.outage.down,
        (down) => down,
      );
      await tx.rows(sql`select 2`);
    });
    await expect(attempt).rejects.toThrow();
    expect(uncaught).toBeUndefined();
    // The pool dropped the broken client: the next statement gets a fresh connection.
    expect(await database.rows<{ n: number }>(sql`select 3 as n`)).toEqual([{ n: 3 }]);
    // And the outage the cut began ends when the tracker's probe gets an answer.
    await database.outage.recovered();
    expect(database.outage.down).toBe(false);
  } finally {
    process.off("uncaughtException", onUncaught);
  }
});

it("heals its LISTEN session after the connection is lost, and then wakes the subscriber once", async () => {
  const heard: string[] = [];
  const stop = await database.listen("outage_test", (payload) => heard.push(payload));
  const reconnects = database.listenerHealth.reconnects;
  proxy.cut();
  await eventually(
    async () => database.listenerHealth,
    (health) => health.up && health.reconnects === reconnects + 1,
  );
  expect(heard).toEqual([""]);
  await database.rows(sql`select pg_notify('outage_test', 'after')`);
  await eventually(
    async () => heard,
    (payloads) => payloads.includes("after"),
  );
  await stop();
});

it("answers 503 while the database is down and logs the outage, not each request", async () => {
  const app = createApp(await createHooklane(testConfig(), { database, logger }));
  const token = await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "tester", account: "acc_ops", admin: true });
  const post = async (id: string) =>
    await app.request("/v3/accounts", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ id, name: id }),
    });
  expect((await post("acc_before")).status).toBe(201);

  // Cutting connections in the tests above may have begun an outage of its own: start from none.
  await database.outage.recovered();
  const mark = lines.length;
  await proxy.down();
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(`acc_during_${i}`)));
  expect(answers.map((a) => a.status)).toEqual(Array(20).fill(503));
  expect(answers[0]!.headers.get("retry-after")).toBe("5");
  await proxy.up();
  await eventually(
    () => post(`acc_after_${Date.now()}`).then((a) => a.status),
    (status) => status === 201,
    {
      everyMs: 200,
    },
  );
  await eventually(async () => lines.slice(mark).some((l) => l.msg === "database reachable again"), Boolean);

  const during = lines.slice(mark);
  expect(during.filter((l) => l.msg === "request failed")).toEqual([]);
  expect(during.filter((l) => l.msg === "database unreachable; retrying quietly").length).toBe(1);
  expect(during.filter((l) => l.level >= 40).length).toBeLessThanOrEqual(3);
});
