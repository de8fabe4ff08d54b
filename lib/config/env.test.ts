import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ConfigError, DEVELOPMENT_JWT_SECRET, DEVELOPMENT_SECRET_KEY, envVariables, loadConfig } from "./env.ts";

const OWN_KEY = "k".repeat(43);
const OWN_SECRET = "s".repeat(40);
const OWN_TOKEN = "t".repeat(24);
/** Production with secrets of its own: each test changes one thing. */
const PRODUCTION = {
  NODE_ENV: "production",
  WEBHOOK_SECRET_KEY: OWN_KEY,
  AUTH_JWT_SECRET: OWN_SECRET,
  CRON_SECRET: "c".repeat(32),
  METRICS_TOKEN: OWN_TOKEN,
};

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

  it("traces only with an OTLP endpoint: <endpoint>/v1/traces, or the traces endpoint as given", () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318/" }).tracing).toEqual({
      url: "http://127.0.0.1:4318/v1/traces",
      serviceName: "hooklane",
    });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector.example.com/traces",
        OTEL_SERVICE_NAME: "hooklane-api",
      }).tracing,
    ).toEqual({ url: "https://collector.example.com/traces", serviceName: "hooklane-api" });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" }).tracing,
    ).toBeUndefined();
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "grpc://127.0.0.1:4317" })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
  });

  it("refuses production without its own keys, and allows no host there by default", () => {
    expect(() => loadConfig({ NODE_ENV: "production" })).toThrow(/WEBHOOK_SECRET_KEY: is required outside development/);
    const config = loadConfig({
      NODE_ENV: "production",
      WEBHOOK_SECRET_KEY: "a".repeat(43),
      METRICS_TOKEN: OWN_TOKEN,
      AUTH_JWKS_URL: "https://auth.example.com/jwks.json",
      AUTH_JWT_ISSUER: "https://auth.example.com/",
      AUTH_JWT_AUDIENCE: "hooklane",
    });
    expect(config.allowedHosts).toEqual([]);
    expect(config.jwtSecret).toBeUndefined();
  });
});

describe("secure by default", () => {
  it("treats an unset NODE_ENV without DATABASE_URL as the local quickstart: development rules, loopback, warned", () => {
    const quickstart = loadConfig({});
    expect(quickstart).toMatchObject({ mode: "development", production: false, host: "127.0.0.1" });
    expect(quickstart.jwtSecret).toBe(DEVELOPMENT_JWT_SECRET);
    expect(quickstart.developmentSecrets).toEqual(["AUTH_JWT_SECRET", "WEBHOOK_SECRET_KEY"]);
    expect(loadConfig({ AUTH_JWT_SECRET: OWN_SECRET, WEBHOOK_SECRET_KEY: OWN_KEY }).developmentSecrets).toEqual([]);
    expect(loadConfig({ HOST: "0.0.0.0" }).host).toBe("0.0.0.0");
  });

  it("treats an unset NODE_ENV with a DATABASE_URL as production, saying so in the refusal", () => {
    const attempt = () => loadConfig({ DATABASE_URL: "postgres://db.internal:5432/hooklane" });
    expect(attempt).toThrow(
      /WEBHOOK_SECRET_KEY: is required outside development \(NODE_ENV is unset and DATABASE_URL is set/,
    );
    expect(attempt).toThrow(/AUTH_JWKS_URL: AUTH_JWKS_URL or AUTH_JWT_SECRET is required/);
    const deployed = loadConfig({
      DATABASE_URL: "postgres://db.internal:5432/hooklane",
      WEBHOOK_SECRET_KEY: OWN_KEY,
      AUTH_JWT_SECRET: OWN_SECRET,
      METRICS_TOKEN: OWN_TOKEN,
    });
    expect(deployed).toMatchObject({ mode: "production", production: true, host: undefined, developmentSecrets: [] });
    expect(deployed.allowedHosts).toEqual([]);
    // Explicitly development: a developer's own PostgreSQL keeps the development defaults.
    expect(loadConfig({ NODE_ENV: "development", DATABASE_URL: "postgres://127.0.0.1/dev" }).mode).toBe("development");
  });

  it("refuses the published development values outside development and test", () => {
    const attempt = () =>
      loadConfig({
        NODE_ENV: "production",
        WEBHOOK_SECRET_KEY: DEVELOPMENT_SECRET_KEY,
        AUTH_JWT_SECRET: DEVELOPMENT_JWT_SECRET,
      });
    expect(attempt).toThrow(/WEBHOOK_SECRET_KEY: is the published development key/);
    expect(attempt).toThrow(/AUTH_JWT_SECRET: is the published development secret/);
    for (const NODE_ENV of ["development", "test"]) {
      const config = loadConfig({
        NODE_ENV,
        WEBHOOK_SECRET_KEY: DEVELOPMENT_SECRET_KEY,
        AUTH_JWT_SECRET: DEVELOPMENT_JWT_SECRET,
      });
      expect(config.developmentSecrets).toEqual(["AUTH_JWT_SECRET", "WEBHOOK_SECRET_KEY"]);
    }
  });

  it("refuses every other spelling of the published key, and the published secret with NUL padding, in production", () => {
    const keyBytes = Buffer.from(DEVELOPMENT_SECRET_KEY, "base64url");
    // The last character keeps 2 bits no byte holds: M, N, O and P end the same 32 bytes.
    for (const key of ["N", "O", "P"].map((last) => DEVELOPMENT_SECRET_KEY.slice(0, -1) + last)) {
      expect(() => loadConfig({ ...PRODUCTION, WEBHOOK_SECRET_KEY: key }), key).toThrow(
        /WEBHOOK_SECRET_KEY: is the published development key/,
      );
    }
    // Other alphabets, padding and whitespace never reach the comparison: the variable takes 43 base64url characters.
    for (const key of [
      keyBytes.toString("base64"),
      `${DEVELOPMENT_SECRET_KEY}=`,
      `${DEVELOPMENT_SECRET_KEY}==`,
      ` ${DEVELOPMENT_SECRET_KEY}`,
      `${DEVELOPMENT_SECRET_KEY}\n`,
      `${DEVELOPMENT_SECRET_KEY}\0`,
      `\uFEFF${DEVELOPMENT_SECRET_KEY}`,
    ]) {
      expect(() => loadConfig({ ...PRODUCTION, WEBHOOK_SECRET_KEY: key }), JSON.stringify(key)).toThrow(
        /WEBHOOK_SECRET_KEY: (must be 32 random bytes|starts with|ends with)/,
      );
    }
    for (const secret of [`${DEVELOPMENT_JWT_SECRET}\0`, `${DEVELOPMENT_JWT_SECRET} `, `\t${DEVELOPMENT_JWT_SECRET}`]) {
      expect(() => loadConfig({ ...PRODUCTION, AUTH_JWT_SECRET: secret }), JSON.stringify(secret)).toThrow(
        /AUTH_JWT_SECRET: (starts|ends) with/,
      );
    }
    // A key of one's own is not refused for sharing a prefix with the published one.
    expect(
      loadConfig({ ...PRODUCTION, WEBHOOK_SECRET_KEY: `${DEVELOPMENT_SECRET_KEY.slice(0, -1)}Q` }).production,
    ).toBe(true);
  });

  it("refuses a shared secret with whitespace or a control character, naming the variable, in every mode", () => {
    for (const name of ["WEBHOOK_SECRET_KEY", "AUTH_JWT_SECRET", "CRON_SECRET", "METRICS_TOKEN"]) {
      const own = { WEBHOOK_SECRET_KEY: OWN_KEY, AUTH_JWT_SECRET: OWN_SECRET }[name] ?? OWN_TOKEN;
      for (const NODE_ENV of ["production", "development"]) {
        const attempt = (value: string) => () => loadConfig({ ...PRODUCTION, NODE_ENV, [name]: value });
        expect(attempt(`${own}\0`)).toThrow(new RegExp(`${name}: ends with a control character \\(U\\+0000\\)`));
        expect(attempt(`${own}\r\n`)).toThrow(new RegExp(`${name}: ends with whitespace`));
        expect(attempt(` ${own}`)).toThrow(new RegExp(`${name}: starts with whitespace`));
        expect(attempt(`${own.slice(0, 8)}\0${own.slice(8)}`)).toThrow(
          new RegExp(`${name}: contains a control character \\(U\\+0000\\) at character 9`),
        );
        expect(attempt(`${own.slice(0, 8)}\uD800${own.slice(8)}`)).toThrow(new RegExp(`${name}: is not valid Unicode`));
        expect(loadConfig({ ...PRODUCTION, NODE_ENV, [name]: own }).mode).toBe(NODE_ENV);
      }
    }
    // The message names the character, never the secret.
    const attempt = () => loadConfig({ ...PRODUCTION, AUTH_JWT_SECRET: `${OWN_SECRET}\0` });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).not.toThrow(OWN_SECRET);
  });

  it("takes bearer secrets (CRON_SECRET, METRICS_TOKEN) in printable ASCII only, as a header carries them", () => {
    for (const name of ["CRON_SECRET", "METRICS_TOKEN"]) {
      expect(() => loadConfig({ ...PRODUCTION, [name]: "tökentökentökentöken" })).toThrow(
        new RegExp(`${name}: must be printable ASCII`),
      );
      expect(() => loadConfig({ ...PRODUCTION, [name]: "" })).toThrow(new RegExp(`${name}: must be at least 16`));
      expect(loadConfig({ ...PRODUCTION, [name]: "a passphrase with spaces" }).production).toBe(true);
      expect(loadConfig({ ...PRODUCTION, [name]: "x".repeat(100_000) }).production).toBe(true);
    }
    // The JWT secret is bytes to HMAC, never a header: any well-formed text will do.
    expect(loadConfig({ ...PRODUCTION, AUTH_JWT_SECRET: "pässwörd-😀-秘密-".repeat(4) }).jwtSecret).toMatch(
      /^pässwörd/,
    );
  });

  it("requires a metrics token in production unless metrics are public by name or off", () => {
    const attempt = () => loadConfig({ ...PRODUCTION, METRICS_TOKEN: undefined });
    expect(attempt).toThrow(/METRICS_TOKEN: is required outside development while metrics are on/);
    expect(attempt).toThrow(/METRICS_PUBLIC=true/);
    expect(loadConfig(PRODUCTION)).toMatchObject({ metricsToken: OWN_TOKEN, metricsPublic: false });
    expect(loadConfig({ ...PRODUCTION, METRICS_TOKEN: undefined, METRICS_PUBLIC: "true" })).toMatchObject({
      metricsToken: undefined,
      metricsPublic: true,
    });
    expect(loadConfig({ ...PRODUCTION, METRICS_TOKEN: undefined, METRICS_ENABLED: "false" }).metricsEnabled).toBe(
      false,
    );
    // A token always wins: METRICS_PUBLIC does not open a route that has one.
    expect(loadConfig({ ...PRODUCTION, METRICS_PUBLIC: "true" }).metricsPublic).toBe(false);
    // Development and tests serve metrics without a token, unless one is set.
    expect(loadConfig({}).metricsPublic).toBe(true);
    expect(loadConfig({ NODE_ENV: "test" }).metricsPublic).toBe(true);
    expect(loadConfig({ METRICS_TOKEN: OWN_TOKEN }).metricsPublic).toBe(false);
  });

  it("requires an https: JWKS with an issuer and an audience in production", () => {
    const production = { NODE_ENV: "production", WEBHOOK_SECRET_KEY: OWN_KEY, METRICS_TOKEN: OWN_TOKEN };
    const attempt = () => loadConfig({ ...production, AUTH_JWKS_URL: "http://idp.example.com/jwks.json" });
    expect(attempt).toThrow(/AUTH_JWKS_URL: must be an https: URL/);
    expect(attempt).toThrow(/AUTH_JWT_ISSUER: is required with AUTH_JWKS_URL/);
    expect(attempt).toThrow(/AUTH_JWT_AUDIENCE: is required with AUTH_JWKS_URL/);
    expect(() => loadConfig({ AUTH_JWKS_URL: "file:///etc/jwks.json" })).toThrow(/AUTH_JWKS_URL/);
    const config = loadConfig({
      ...production,
      AUTH_JWKS_URL: "https://idp.example.com/jwks.json",
      AUTH_JWT_ISSUER: "https://idp.example.com/",
      AUTH_JWT_AUDIENCE: "hooklane",
      AUTH_JWT_MAX_LIFETIME: "1h",
    });
    expect(config).toMatchObject({
      jwtIssuer: "https://idp.example.com/",
      jwtAudience: "hooklane",
      jwtMaxLifetimeMs: 3_600_000,
    });
  });

  it("bounds request bodies: 1 MiB by default, in bytes, kb or mb", () => {
    expect(loadConfig({}).bodyLimitBytes).toBe(1_048_576);
    expect(loadConfig({ HTTP_BODY_LIMIT: "256kb" }).bodyLimitBytes).toBe(262_144);
    expect(loadConfig({ HTTP_BODY_LIMIT: "2MB" }).bodyLimitBytes).toBe(2_097_152);
    expect(loadConfig({ HTTP_BODY_LIMIT: "4096" }).bodyLimitBytes).toBe(4_096);
    expect(() => loadConfig({ HTTP_BODY_LIMIT: "lots" })).toThrow(/HTTP_BODY_LIMIT: "lots" is not a size/);
    expect(() => loadConfig({ HTTP_BODY_LIMIT: "10" })).toThrow(/HTTP_BODY_LIMIT: must be at least 1kb/);
  });
});

describe("on Vercel (VERCEL=1)", () => {
  const deployed = {
    VERCEL: "1",
    DATABASE_URL: "postgres://app@pooler.example.com/hooklane",
    WEBHOOK_SECRET_KEY: "a".repeat(43),
    AUTH_JWKS_URL: "https://auth.example.com/jwks.json",
    AUTH_JWT_ISSUER: "https://auth.example.com/",
    AUTH_JWT_AUDIENCE: "hooklane",
    CRON_SECRET: "c".repeat(32),
    METRICS_TOKEN: OWN_TOKEN,
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
        /WEBHOOK_SECRET_KEY: is required/,
      );
      const config = loadConfig({ ...deployed, VERCEL_ENV, NODE_ENV: "development" });
      expect(config.production).toBe(true);
      expect(config.jwtSecret).toBeUndefined();
      expect(config.allowedHosts).toEqual([]);
    }
    // `vercel dev` on a laptop: development rules when asked for by name.
    expect(loadConfig({ ...deployed, VERCEL_ENV: "development", NODE_ENV: "development" }).production).toBe(false);
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
