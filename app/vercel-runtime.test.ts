import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig, type Config } from "../lib/config/env.ts";
import { HARNESS_START_MS } from "../test/support/harness.ts";
import { createVercelRuntime } from "./vercel-runtime.ts";

const CRON_SECRET = "cron-secret-0123456789abcdef";

describe("the sweeper cron's secret", () => {
  let dataDir: string;
  let settings: Config;
  let loads = 0;
  let runtime: ReturnType<typeof createVercelRuntime>;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "hooklane-cron-"));
    settings = loadConfig({
      NODE_ENV: "test",
      WEBHOOK_QUEUE_DRIVER: "vercel",
      PGLITE_DATA_DIR: dataDir,
      CATALOGUE_AUTO_SYNC: "false",
      CRON_SECRET,
    });
    runtime = createVercelRuntime(() => {
      loads++;
      return settings;
    });
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  const sweep = (authorization?: string) =>
    runtime.sweep(
      new Request(
        "https://hooklane.test/api/cron/webhook-sweeper",
        authorization ? { headers: { authorization } } : {},
      ),
    );

  it("refuses a missing, wrong, shorter or longer secret before anything starts", async () => {
    for (const authorization of [
      undefined,
      "",
      CRON_SECRET,
      `Bearer ${CRON_SECRET.slice(0, -1)}`,
      `Bearer ${CRON_SECRET}x`,
      `Bearer ${CRON_SECRET}\t0`,
      `Bearer ${CRON_SECRET.toUpperCase()}`,
      `Basic ${CRON_SECRET}`,
      "Bearer ",
      `Bearer ${"x".repeat(10_000)}`,
    ]) {
      const answer = await sweep(authorization);
      expect(answer.status, JSON.stringify(authorization)).toBe(401);
    }
    // Only the secret was read: no instance was started for an anonymous caller.
    expect(loads).toBe(10);
  });

  it(
    "runs the sweep for the right secret",
    async () => {
      const answer = await sweep(`Bearer ${CRON_SECRET}`);
      expect(answer.status, await answer.clone().text()).toBe(200);
      expect(await answer.json()).toMatchObject({ phases: expect.any(Object) });
    },
    HARNESS_START_MS,
  );

  it("refuses every request when no secret is configured", async () => {
    const none = createVercelRuntime(() => ({ ...settings, cronSecret: undefined }));
    for (const authorization of [undefined, "Bearer ", "Bearer undefined"]) {
      const request = new Request("https://hooklane.test/", authorization ? { headers: { authorization } } : {});
      expect((await none.sweep(request)).status, JSON.stringify(authorization)).toBe(401);
    }
  });
});
