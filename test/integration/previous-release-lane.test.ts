import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stopChild } from "../../bench/rpc.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, startHarness, type Harness } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();

/** The release before the newest migration: the commit that added the migration before it (as `db:check` reads it). */
function previousRelease(): { commit: string; migration: string } {
  const migrations = git("ls-files", "drizzle/*.sql").split("\n").filter(Boolean).sort();
  const before = migrations.at(-2);
  if (!before) throw new Error("there is no migration before the newest: no previous release to run");
  const commit = git("log", "--diff-filter=A", "--format=%H", "-1", "--", before);
  if (!commit) throw new Error(`git has no history of ${before}: clone the repository in full to run this test`);
  return { commit, migration: migrations.at(-1)! };
}

/**
 * Migrations only add, so a deployment still serving — an older worker, an
 * older Vercel deployment consuming its pinned retries — keeps working on
 * the schema the new release migrated. Proved by running it: the previous
 * release's own lane worker, from git, against a database `db:migrate`d by
 * this one, routes, claims, delivers, retries and records what this
 * release's API publishes.
 */
describe("the previous release's lane on the new schema, on PostgreSQL", () => {
  let harness: Harness;
  let receiver: TestReceiver;
  let release: { commit: string; migration: string };
  let worker: ChildProcess;
  let exited: Promise<{ code: number | null }>;
  let output = "";
  let tree: string;

  beforeAll(async () => {
    release = previousRelease();
    tree = mkdtempSync(join(tmpdir(), "hooklane-previous-release-"));
    execFileSync("sh", ["-c", `git archive --format=tar ${release.commit} | tar -x -C "${tree}"`], { cwd: ROOT });
    symlinkSync(join(ROOT, "node_modules"), join(tree, "node_modules"));
    let first = true;
    receiver = await startReceiver((post) => {
      // The first POST of the flaky endpoint fails: the old worker records a retry and makes it.
      if (post.path === "/flaky" && first) {
        first = false;
        return { status: 500 };
      }
      return {};
    });
    // This release's API, on a database it migrated; no lane of its own.
    harness = await startHarness(postgresFactory, { lane: false });
    const env = {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      NODE_ENV: "test",
      DATABASE_URL: harness.hooklane.config.databaseUrl!,
      WEBHOOK_ALLOWED_HOSTS: "127.0.0.1,localhost",
      WEBHOOK_RETRY_SCHEDULE: "100ms,100ms,100ms,100ms,100ms",
      WEBHOOK_TIMEOUT_MS: "2000",
      METRICS_ENABLED: "false",
      LOG_LEVEL: "info",
    };
    worker = spawn(process.execPath, ["app/worker.ts"], { cwd: tree, env, stdio: ["ignore", "pipe", "pipe"] });
    worker.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    worker.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    exited = new Promise((resolve) => worker.once("exit", (code) => resolve({ code })));
    await eventually(
      async () => output,
      (text) => /lane worker \S+ started/.test(text) || worker.exitCode !== null,
      { timeoutMs: 60_000, everyMs: 100 },
    );
    if (worker.exitCode !== null) throw new Error(`the previous release's worker exited:\n${output}`);
  }, HARNESS_START_MS);
  afterAll(async () => {
    if (worker) await stopChild(worker, exited, 10_000);
    await harness?.close();
    await receiver?.close();
    if (tree) rmSync(tree, { recursive: true, force: true });
  });

  it("routes, delivers, retries and records what the new release publishes", async () => {
    await harness.accounts("acc_alice");
    for (const path of ["/steady", "/flaky"]) {
      const hook = await harness.call("POST", "/v3/webhooks", {
        account: "acc_alice",
        body: { url: `${receiver.url}${path}`, events: ["payment-debt.created"] },
      });
      expect(hook.status).toBe(201);
    }
    const EVENTS = 10;
    for (let i = 0; i < EVENTS; i++) {
      const debt = await harness.call("POST", "/v3/payment-debts", {
        account: "acc_alice",
        body: { amount: "1.00", currency: "eur" },
      });
      expect(debt.status).toBe(201);
    }
    await harness.settled();
    await receiver.waitFor(2 * EVENTS + 1, { timeoutMs: 60_000 });
    const rows = await eventually(
      () =>
        harness.hooklane.database.rows<{ status: string; attempts: number; n: number }>(sql`
          select d.status, d.attempt_count as attempts, count(*)::int as n
          from webhook_dispatch d group by 1, 2 order by 1, 2
        `),
      (found) => found.length > 0 && found.every((r) => r.status === "success"),
      { timeoutMs: 30_000 },
    );
    const [attempts] = await harness.hooklane.database.rows<{ n: number }>(
      sql`select count(*)::int as n from webhook_attempt`,
    );
    console.info(
      `[previous release] ${release.commit.slice(0, 7)}'s worker on the schema through ${release.migration}: ` +
        `${JSON.stringify(rows)}, ${attempts!.n} attempts recorded`,
    );
    expect(rows).toEqual([
      { status: "success", attempts: 1, n: 2 * EVENTS - 1 },
      { status: "success", attempts: 2, n: 1 },
    ]);
    expect(attempts!.n).toBe(2 * EVENTS + 1);
    expect(output).not.toMatch(/"level":(50|60)/);
  });

  it("and its Vercel lane, in a function of the previous release, consumes what this one sends", async () => {
    // The previous release's code, loaded from its tree: its configuration, its hooklane, its Vercel lane.
    const load = (path: string) => import(join(tree, path));
    const [{ loadConfig }, { createHooklane }, { createVercelLane }] = await Promise.all([
      load("lib/config/env.ts"),
      load("lib/create-hooklane.ts"),
      load("lib/create-vercel-lane.ts"),
    ]);
    const vercel = await startHarness(postgresFactory, { driver: "vercel", lane: false });
    const queue = vercel.queue!;
    const old = await createHooklane(
      loadConfig({
        NODE_ENV: "test",
        DATABASE_URL: vercel.hooklane.config.databaseUrl,
        WEBHOOK_QUEUE_DRIVER: "vercel",
        WEBHOOK_ALLOWED_HOSTS: "127.0.0.1,localhost",
        WEBHOOK_RETRY_SCHEDULE: "100ms,100ms,100ms,100ms,100ms",
        WEBHOOK_TIMEOUT_MS: "2000",
        LOG_LEVEL: "warn",
      }),
      { queue: queue.client },
    );
    try {
      // The platform's part for a deployment of the previous release: its one function takes both topics.
      queue.consume(["webhook-out-*"], createVercelLane(old, { now: () => queue.now() }).handler, {
        maxConcurrency: 50,
      });
      await vercel.accounts("acc_alice");
      const hook = await vercel.call("POST", "/v3/webhooks", {
        account: "acc_alice",
        body: { url: `${receiver.url}/vercel`, events: ["payment-debt.created"] },
      });
      expect(hook.status).toBe(201);
      const EVENTS = 10;
      for (let i = 0; i < EVENTS; i++) {
        const debt = await vercel.call("POST", "/v3/payment-debts", {
          account: "acc_alice",
          body: { amount: "1.00", currency: "eur" },
        });
        expect(debt.status).toBe(201);
      }
      await vercel.settled();
      await receiver.waitFor(EVENTS, { filter: (p) => p.path === "/vercel", timeoutMs: 60_000 });
      const rows = await eventually(
        () =>
          vercel.hooklane.database.rows<{ status: string; n: number }>(
            sql`select status, count(*)::int as n from webhook_dispatch group by 1`,
          ),
        (found) => found.length === 1 && found[0]!.status === "success",
        { timeoutMs: 30_000 },
      );
      // This release's sweep over what the previous one left: nothing stranded, nothing sent again.
      const report = await vercel.sweepReport({ clock: () => queue.now() });
      console.info(
        `[previous release] ${release.commit.slice(0, 7)}'s Vercel lane on the schema through ${release.migration}: ` +
          `${JSON.stringify(rows)}; this release's sweep after it sent ${report.phases.stranded!.items} deliver messages`,
      );
      expect(rows).toEqual([{ status: "success", n: EVENTS }]);
      expect(report.phases.stranded!.items).toBe(0);
      expect(queue.refusals).toEqual([]);
    } finally {
      await queue.close();
      await old.database.close();
      await vercel.close();
    }
  });
});
