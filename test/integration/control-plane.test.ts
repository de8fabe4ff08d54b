import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEVELOPMENT_SECRET_KEY } from "../../lib/config/env.ts";
import { createHooklane, startLane } from "../../lib/create-hooklane.ts";
import { openDatabase } from "../../lib/db/client.ts";
import { webhookDispatch } from "../../lib/db/schema.ts";
import type { Hooklane } from "../../lib/hooklane.ts";
import type { Lane } from "../../lib/webhook/transport/postgres/postgres-lane.ts";
import { eventually } from "../support/eventually.ts";
import { HARNESS_START_MS, startHarness, testConfig, type Harness } from "../support/harness.ts";
import { exhaustedDispatches } from "../support/outage-dispatches.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { startReceiver, type TestReceiver } from "../support/receiver.ts";

const OWNER = { account: "acc_pg" };

describe("the control plane on PostgreSQL", () => {
  let databaseUrl: string;
  let drop: () => Promise<void>;
  let harness: Harness;
  let receiver: TestReceiver;
  let second: { hooklane: Hooklane; lane: Lane } | undefined;

  beforeAll(async () => {
    ({ url: databaseUrl, drop } = await createTestDatabase());
    receiver = await startReceiver();
    harness = await startHarness(
      async () => ({ database: await openDatabase({ databaseUrl }), databaseUrl, drop: async () => {} }),
      { env: { WEBHOOK_TIMEOUT_MS: "10000" } },
    );
    await harness.accounts(OWNER.account);
  }, HARNESS_START_MS);
  afterAll(async () => {
    await second?.lane.stop();
    await second?.hooklane.database.close();
    await harness?.close();
    await receiver?.close();
    await drop?.();
  });

  it("keeps no webhook secret in plain text: pg_dump of the database holds none", async () => {
    const secrets: string[] = [];
    const ids: string[] = [];
    for (const scheme of ["hooklane-v1", "standard-webhooks"]) {
      const created = await harness.call("POST", "/v3/webhooks", {
        ...OWNER,
        body: { url: `${receiver.url}/${scheme}`, events: ["*"], scheme },
      });
      expect(created.status).toBe(201);
      ids.push(created.body.id);
      secrets.push(created.body.secret);
      // A rotation leaves the previous secret in the row too, sealed.
      const rotated = await harness.call("POST", `/v3/webhooks/${created.body.id}/rotate-secret`, OWNER);
      secrets.push(rotated.body.secret);
      await harness.call("POST", `/v3/webhooks/${created.body.id}/test`, OWNER);
    }
    await receiver.waitFor(2);
    await eventually(
      () => harness.hooklane.database.rows<{ n: number }>(sql`select count(*)::int as n from webhook_attempt`),
      ([row]) => row!.n === 2,
    );

    const { stdout: dump } = await promisify(execFile)("pg_dump", ["--no-owner", databaseUrl], {
      maxBuffer: 64 * 1024 * 1024,
    });
    // The dump is complete: the webhooks are in it, with their current and previous secrets sealed (JWE).
    for (const id of ids) expect(dump).toContain(id);
    expect(dump.match(/eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0\.\./g)?.length).toBe(4);
    for (const secret of secrets) {
      expect(dump).not.toContain(secret);
      // Nor its key material without the prefix, in base64 or hex.
      const key = secret.slice("whsec_".length);
      expect(dump).not.toContain(key.slice(0, 24));
      expect(dump).not.toContain(Buffer.from(key, "base64").toString("hex").slice(0, 24));
    }
    expect(dump).not.toContain(DEVELOPMENT_SECRET_KEY);
  });

  it("recovers 1,000 exhausted dispatches with two workers' sweepers racing for the job, each requeued once", async () => {
    const config = testConfig({ WEBHOOK_TIMEOUT_MS: "10000" }, databaseUrl);
    const hooklane = await createHooklane(config, { database: await openDatabase({ databaseUrl }) });
    second = { hooklane, lane: await startLane(hooklane, { workerId: "second-worker" }) };

    const hook = await harness.call("POST", "/v3/webhooks", {
      ...OWNER,
      body: { url: `${receiver.url}/recovered`, events: ["*"] },
    });
    await harness.hooklane.database.db
      .insert(webhookDispatch)
      .values(exhaustedDispatches(hook.body.id, OWNER.account, 1_000, 30, "pg"));
    const started = await harness.call("POST", `/v3/webhooks/${hook.body.id}/recover`, {
      ...OWNER,
      body: { since: new Date(Date.now() - 3_600_000).toISOString() },
    });
    expect(started.status).toBe(202);

    const progress = () =>
      harness.call("GET", `/v3/webhooks/${hook.body.id}/recoveries/${started.body.id}`, OWNER).then((r) => r.body);
    const snapshots: Array<{ requeued: number; delivered: number }> = [];
    const done = await eventually(
      async () => {
        const now = await progress();
        snapshots.push({ requeued: now.requeued, delivered: now.delivered });
        return now;
      },
      (now) => now.status === "completed" && now.delivered === 1_000,
      { timeoutMs: 90_000 },
    );
    expect(done).toMatchObject({ total: 1_000, requeued: 1_000, delivered: 1_000, failed: 0 });
    // Counters only grow.
    for (let i = 1; i < snapshots.length; i++) {
      expect(snapshots[i]!.requeued).toBeGreaterThanOrEqual(snapshots[i - 1]!.requeued);
    }
    // Every dispatch was started over exactly once, whichever sweeper took each batch.
    const runs = await harness.hooklane.database.rows<{ run: number; n: number }>(
      sql`select run, count(*)::int as n from webhook_dispatch where webhook_id = ${hook.body.id} group by run`,
    );
    expect(runs).toEqual([{ run: 2, n: 1_000 }]);
    const posts = receiver.posts.filter((post) => post.path === "/recovered");
    expect(new Set(posts.map((post) => post.headers["hooklane-event-id"])).size).toBe(1_000);
  });
});
