import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ConfigError, envVariables, loadConfig } from "./env.ts";

describe("loadConfig", () => {
  it("starts with nothing set: embedded database, published schedule, localhost allowed", () => {
    const config = loadConfig({});
    expect(config.databaseUrl).toBeUndefined();
    expect(config.retrySchedule).toEqual([5_000, 30_000, 300_000, 3_600_000, 86_400_000]);
    expect(config.timeoutMs).toBe(10_000);
    expect(config.allowedHosts).toEqual(["localhost"]);
    expect(config.brand).toBe("Hooklane");
    expect(config.publishEnabled).toBe(true);
  });

  it("reads a compressed schedule and a host list", () => {
    const config = loadConfig({
      WEBHOOK_RETRY_SCHEDULE: "1s,2s,250ms",
      WEBHOOK_ALLOWED_HOSTS: "Example.test, localhost",
    });
    expect(config.retrySchedule).toEqual([1_000, 2_000, 250]);
    expect(config.allowedHosts).toEqual(["example.test", "localhost"]);
  });

  it("names every bad variable", () => {
    const attempt = () =>
      loadConfig({
        WEBHOOK_RETRY_SCHEDULE: "5 parsecs",
        PORT: "http",
        DATABASE_URL: "mysql://x",
        ENABLE_API_EVENT_QUEUE: "yes",
      });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(/WEBHOOK_RETRY_SCHEDULE: "5 parsecs" is not a duration/);
    expect(attempt).toThrow(/PORT:/);
    expect(attempt).toThrow(/DATABASE_URL: must be a postgres/);
    expect(attempt).toThrow(/ENABLE_API_EVENT_QUEUE:/);
  });

  it("refuses production without its own keys, and allows no host there by default", () => {
    expect(() => loadConfig({ NODE_ENV: "production" })).toThrow(/WEBHOOK_SECRET_KEY: is required in production/);
    const config = loadConfig({
      NODE_ENV: "production",
      WEBHOOK_SECRET_KEY: "a".repeat(43),
      AUTH_JWKS_URL: "https://auth.example.com/jwks.json",
    });
    expect(config.allowedHosts).toEqual([]);
    expect(config.jwtSecret).toBeUndefined();
  });
});

describe("on Vercel (VERCEL=1)", () => {
  const deployed = {
    VERCEL: "1",
    DATABASE_URL: "postgres://app@pooler.example.com/hooklane",
    WEBHOOK_SECRET_KEY: "a".repeat(43),
    AUTH_JWKS_URL: "https://auth.example.com/jwks.json",
    CRON_SECRET: "c".repeat(32),
  };

  it("refuses the postgres driver, whose queue nothing consumes there, and defaults to vercel", () => {
    expect(() => loadConfig({ ...deployed, WEBHOOK_QUEUE_DRIVER: "postgres" })).toThrow(
      /WEBHOOK_QUEUE_DRIVER: must be vercel on Vercel/,
    );
    expect(loadConfig(deployed)).toMatchObject({ onVercel: true, queueDriver: "vercel" });
    expect(loadConfig({}).queueDriver).toBe("postgres");
  });

  it("applies production rules on production and preview deployments, whatever NODE_ENV says", () => {
    for (const VERCEL_ENV of ["production", "preview"]) {
      expect(() => loadConfig({ VERCEL: "1", VERCEL_ENV, NODE_ENV: "development" })).toThrow(
        /WEBHOOK_SECRET_KEY: is required in production/,
      );
      const config = loadConfig({ ...deployed, VERCEL_ENV, NODE_ENV: "development" });
      expect(config.production).toBe(true);
      expect(config.jwtSecret).toBeUndefined();
      expect(config.allowedHosts).toEqual([]);
    }
    expect(loadConfig({ ...deployed, VERCEL_ENV: "development" }).production).toBe(false);
  });

  it("requires a server database, and in production the cron's secret", () => {
    expect(() => loadConfig({ ...deployed, DATABASE_URL: undefined })).toThrow(/DATABASE_URL: is required on Vercel/);
    expect(() => loadConfig({ ...deployed, VERCEL_ENV: "production", CRON_SECRET: undefined })).toThrow(
      /CRON_SECRET: is required on Vercel production/,
    );
    expect(loadConfig({ ...deployed, VERCEL_ENV: "preview", CRON_SECRET: undefined }).cronSecret).toBeUndefined();
  });

  it("migrates over the direct connection when one is given", () => {
    expect(loadConfig(deployed).migrationDatabaseUrl).toBe(deployed.DATABASE_URL);
    const direct = "postgres://app@direct.example.com/hooklane";
    expect(loadConfig({ ...deployed, DATABASE_URL_UNPOOLED: direct }).migrationDatabaseUrl).toBe(direct);
  });
});

describe(".env.example", () => {
  it("documents every variable the configuration reads", () => {
    const example = readFileSync(new URL("../../.env.example", import.meta.url), "utf8");
    const documented = new Set([...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]+)=/gm)].map((match) => match[1]));
    expect(Object.keys(envVariables.shape).filter((name) => !documented.has(name))).toEqual([]);
  });
});
