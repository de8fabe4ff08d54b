import { describe, expect, it } from "vitest";
import { DELIVER_TOPIC, ROUTE_TOPIC } from "../../outbound/webhook-out-queue-registrations.ts";
import { VERCEL_QUEUES } from "./vercel-queue-limits.ts";
import { LANE_CONCURRENCY, laneConcurrency, VERCEL_FUNCTIONS, vercelProjectConfig } from "./vercel-project.ts";

const triggersOf = (config: ReturnType<typeof vercelProjectConfig>, path: string) =>
  config.functions[path]?.experimentalTriggers ?? [];

describe("vercelProjectConfig", () => {
  it("gives each lane topic its own function, one trigger each, with the default concurrency", () => {
    const config = vercelProjectConfig({});
    for (const [stage, topic] of [
      ["route", ROUTE_TOPIC],
      ["deliver", DELIVER_TOPIC],
    ] as const) {
      const triggers = triggersOf(config, VERCEL_FUNCTIONS[stage].path);
      expect(triggers).toHaveLength(VERCEL_QUEUES.triggersPerFunction);
      expect(triggers[0]).toMatchObject({ topic, maxConcurrency: LANE_CONCURRENCY[stage].default });
    }
    expect(config.functions[VERCEL_FUNCTIONS.sweeper.path]).toEqual({
      maxDuration: VERCEL_FUNCTIONS.sweeper.maxDurationSeconds,
    });
    expect(config.crons).toEqual([{ path: "/api/cron/webhook-sweeper", schedule: "* * * * *" }]);
  });

  it("takes each function's concurrency from the build's environment", () => {
    const config = vercelProjectConfig({ WEBHOOK_ROUTE_MAX_CONCURRENCY: "20", WEBHOOK_DELIVER_MAX_CONCURRENCY: "200" });
    expect(triggersOf(config, VERCEL_FUNCTIONS.route.path)[0]!.maxConcurrency).toBe(20);
    expect(triggersOf(config, VERCEL_FUNCTIONS.deliver.path)[0]!.maxConcurrency).toBe(200);
  });

  it.each(["0", "-3", "1.5", "fifty", "10001"])("refuses %j as a concurrency, naming the variable", (value) => {
    expect(() => laneConcurrency({ WEBHOOK_DELIVER_MAX_CONCURRENCY: value })).toThrow(
      /^WEBHOOK_DELIVER_MAX_CONCURRENCY: .* is not a whole number from 1 to 10000$/,
    );
  });
});
