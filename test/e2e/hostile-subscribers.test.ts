import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { eq, inArray } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { webhookAttempt, webhookDispatch } from "../../lib/db/schema.ts";
import { eventually } from "../support/eventually.ts";
import { pgliteFactory, startHarness, type Harness } from "../support/harness.ts";
import { startReceiver } from "../support/receiver.ts";

const DEADLINE_MS = 3_000;
const MARGIN_MS = 1_000;
const MB = 1024 * 1024;
const ADMIN = { account: "acc_ops", admin: true };

type HostileState = { drippingNow: number; bytesSent: number; canaryHits: number };

/** The hostile subscribers, in a child process (test/support/hostile-subscriber-server.ts). */
async function startHostileSubscribers() {
  const child = fork(fileURLToPath(new URL("../support/hostile-subscriber-server.ts", import.meta.url)), {
    execPath: process.execPath,
  });
  const next = <T>() => new Promise<T>((resolve) => child.once("message", (message) => resolve(message as T)));
  const { urls } = await next<{ urls: Record<"drip" | "huge" | "headers" | "redirect", string> }>();
  return {
    urls,
    async state(): Promise<HostileState> {
      const reply = next<{ state: HostileState }>();
      child.send("state");
      return (await reply).state;
    },
    async close() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.disconnect();
      await exited;
    },
  };
}

describe("hostile subscribers", () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((thing) => thing.close()));
  });

  async function subscribe(harness: Harness, url: string): Promise<string> {
    const response = await harness.call("POST", "/v3/webhooks", {
      ...ADMIN,
      body: { url, events: ["*"], scope: "global" },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body.id;
  }

  it(
    "drip, 50 MB, 1 MB of headers and a redirect each fail within the deadline; memory stays bounded; others are unaffected",
    { timeout: 60_000 },
    async () => {
      const hostile = await startHostileSubscribers();
      const healthy = await startReceiver();
      // One attempt each within the test: the next is an hour away.
      const harness = await startHarness(pgliteFactory, {
        env: { WEBHOOK_TIMEOUT_MS: String(DEADLINE_MS), WEBHOOK_RETRY_SCHEDULE: "1h" },
      });
      open.push(harness, healthy, hostile);
      const hooks = {
        drip: await subscribe(harness, `${hostile.urls.drip}/drip`),
        huge: await subscribe(harness, `${hostile.urls.huge}/huge`),
        headers: await subscribe(harness, `${hostile.urls.headers}/headers`),
        redirect: await subscribe(harness, `${hostile.urls.redirect}/redirect`),
      };
      const healthyHook = await subscribe(harness, `${healthy.url}/ok`);

      // Garbage makes heapUsed swing without a forced GC; resident memory and
      // buffers are where a buffered 50 MB body would show.
      const baseline = process.memoryUsage();
      const peak = { rss: baseline.rss, arrayBuffers: baseline.arrayBuffers };
      const sampler = setInterval(() => {
        const now = process.memoryUsage();
        peak.rss = Math.max(peak.rss, now.rss);
        peak.arrayBuffers = Math.max(peak.arrayBuffers, now.arrayBuffers);
      }, 10);
      open.push({ close: async () => clearInterval(sampler) });

      const events = 5;
      const publishedAt = Date.now();
      for (let i = 0; i < events; i++) {
        const created = await harness.call("POST", "/v3/accounts", {
          ...ADMIN,
          body: { id: `acc_${i}`, name: "Hostile" },
        });
        expect(created.status).toBe(201);
      }
      await harness.settled();

      // The healthy subscriber gets every event while the drips are still holding their connections open.
      const posts = await healthy.waitFor(events);
      const drippingWhenHealthyDone = (await hostile.state()).drippingNow;
      const healthyLatencies = posts.map((post) => post.receivedAt - publishedAt);
      expect(drippingWhenHealthyDone).toBeGreaterThan(0);

      const db = harness.hooklane.database.db;
      const hostileIds = Object.values(hooks);
      const attempts = await eventually(
        () =>
          db
            .select({
              webhookId: webhookDispatch.webhookId,
              errorClass: webhookAttempt.errorClass,
              durationMs: webhookAttempt.durationMs,
              statusCode: webhookAttempt.statusCode,
              excerpt: webhookAttempt.responseExcerpt,
            })
            .from(webhookAttempt)
            .innerJoin(webhookDispatch, eq(webhookDispatch.id, webhookAttempt.dispatchId))
            .where(inArray(webhookDispatch.webhookId, hostileIds)),
        (rows) => rows.length === events * hostileIds.length,
      );
      clearInterval(sampler);

      const expected = {
        drip: "timeout",
        huge: "response_too_large",
        headers: "response_too_large",
        redirect: "redirect",
      };
      for (const [name, id] of Object.entries(hooks)) {
        const mine = attempts.filter((attempt) => attempt.webhookId === id);
        expect(new Set(mine.map((attempt) => attempt.errorClass)), name).toEqual(
          new Set([expected[name as keyof typeof expected]]),
        );
        for (const attempt of mine) expect(attempt.durationMs, name).toBeLessThan(DEADLINE_MS + MARGIN_MS);
      }
      // The 50 MB body was cut after the read cap and logged as a short excerpt.
      const huge = attempts.filter((attempt) => attempt.webhookId === hooks.huge);
      for (const attempt of huge) expect(attempt.excerpt!.length).toBeLessThanOrEqual(1_025);
      const { bytesSent, canaryHits } = await hostile.state();
      expect(bytesSent).toBeLessThan(events * 50 * MB);
      expect(canaryHits).toBe(0);

      const healthyRows = await db.select().from(webhookDispatch).where(eq(webhookDispatch.webhookId, healthyHook));
      expect(healthyRows.map((row) => row.status)).toEqual(Array(events).fill("success"));

      const rssGrowth = (peak.rss - baseline.rss) / MB;
      const buffersGrowth = (peak.arrayBuffers - baseline.arrayBuffers) / MB;
      console.info(
        `hostile subscribers: healthy max latency ${Math.max(...healthyLatencies)} ms with ${drippingWhenHealthyDone} drips open; ` +
          `hostile attempt durations ${attempts
            .map((a) => a.durationMs)
            .sort((a, b) => a - b)
            .join(",")} ms; ` +
          `50 MB bodies: ${(bytesSent / MB).toFixed(1)} MB sent in all; ` +
          `peak growth: rss ${rssGrowth.toFixed(1)} MB, buffers ${buffersGrowth.toFixed(1)} MB`,
      );
      expect(rssGrowth).toBeLessThan(40);
      expect(buffersGrowth).toBeLessThan(20);
    },
  );
});
