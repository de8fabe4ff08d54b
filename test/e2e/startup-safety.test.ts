import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEVELOPMENT_JWT_SECRET, DEVELOPMENT_SECRET_KEY } from "../../lib/config/env.ts";
import { spawnServer } from "../support/server-process.ts";

const DEV_TOKEN = fileURLToPath(new URL("../../scripts/dev-token.ts", import.meta.url));

// Each case starts the real server in its own process and empty working directory.
describe("starting the server: secure unless it is the local quickstart", { timeout: 120_000 }, () => {
  let cwd: string;
  let database: Server;
  let connections = 0;
  let databaseUrl: string;

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), "hooklane-start-"));
    // Stands in for PostgreSQL: it only counts who connects.
    database = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => database.listen(0, "127.0.0.1", resolve));
    databaseUrl = `postgres://hooklane@127.0.0.1:${(database.address() as { port: number }).port}/hooklane`;
  });
  afterAll(async () => {
    await new Promise((resolve) => database?.close(resolve));
    await rm(cwd, { recursive: true, force: true });
  });

  it("refuses, before connecting anywhere, a DATABASE_URL without NODE_ENV and without secrets", async () => {
    const { code, output } = await spawnServer({ DATABASE_URL: databaseUrl, PORT: "0" }, cwd).exited;
    console.log(`[startup] NODE_ENV unset + DATABASE_URL, no secrets → exit ${code}:\n${output.trim()}`);
    expect(code).toBe(1);
    expect(output).toMatch(
      /WEBHOOK_SECRET_KEY: is required outside development \(NODE_ENV is unset and DATABASE_URL is set/,
    );
    expect(output).toMatch(/AUTH_JWKS_URL: AUTH_JWKS_URL or AUTH_JWT_SECRET is required/);
    expect(output).not.toContain("hooklane API on");
    expect(connections).toBe(0);
  });

  it("refuses the published development secret and key in production", async () => {
    const env = {
      NODE_ENV: "production",
      DATABASE_URL: databaseUrl,
      WEBHOOK_SECRET_KEY: DEVELOPMENT_SECRET_KEY,
      AUTH_JWT_SECRET: DEVELOPMENT_JWT_SECRET,
      PORT: "0",
    };
    const { code, output } = await spawnServer(env, cwd).exited;
    console.log(`[startup] production with the published values → exit ${code}:\n${output.trim()}`);
    expect(code).toBe(1);
    expect(output).toContain("WEBHOOK_SECRET_KEY: is the published development key");
    expect(output).toContain("AUTH_JWT_SECRET: is the published development secret");
    expect(output).toContain("METRICS_TOKEN: is required outside development while metrics are on");
    expect(connections).toBe(0);
  });

  it("refuses, from a .env file, secrets with a NUL or a space left on, and the published key spelled otherwise", async () => {
    const dir = await mkdtemp(join(tmpdir(), "hooklane-start-env-"));
    const start = async (values: Record<string, string>) => {
      const lines = Object.entries({ NODE_ENV: "production", DATABASE_URL: databaseUrl, PORT: "0", ...values });
      await writeFile(join(dir, ".env"), lines.map(([name, value]) => `${name}=${value}\n`).join(""));
      return spawnServer({}, dir).exited;
    };
    try {
      const leftOn = await start({
        WEBHOOK_SECRET_KEY: "k".repeat(43),
        // HMAC pads its key with NULs: as given, this would sign exactly as the published secret.
        AUTH_JWT_SECRET: `${DEVELOPMENT_JWT_SECRET}\0`,
        METRICS_TOKEN: `"${"m".repeat(24)} "`,
      });
      console.log(
        `[startup] production, a .env with a NUL and a space left on → exit ${leftOn.code}:\n${leftOn.output.trim()}`,
      );
      expect(leftOn.code).toBe(1);
      expect(leftOn.output).toContain("AUTH_JWT_SECRET: ends with a control character (U+0000): remove it");
      expect(leftOn.output).toContain("METRICS_TOKEN: ends with whitespace (U+0020): remove it");
      expect(leftOn.output).not.toContain(DEVELOPMENT_JWT_SECRET);
      expect(leftOn.output).not.toContain("m".repeat(24));

      const respelt = await start({
        // The same 32 bytes: the last character's low bits belong to no byte.
        WEBHOOK_SECRET_KEY: `${DEVELOPMENT_SECRET_KEY.slice(0, -1)}P`,
        AUTH_JWT_SECRET: "s".repeat(40),
        METRICS_TOKEN: "m".repeat(24),
      });
      console.log(`[startup] production, the published key respelt → exit ${respelt.code}:\n${respelt.output.trim()}`);
      expect(respelt.code).toBe(1);
      expect(respelt.output).toContain("WEBHOOK_SECRET_KEY: is the published development key");
      expect(connections).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("runs the quickstart unchanged: embedded database, loopback only, a loud warning, and npm run token works", async () => {
    const server = await spawnServer({ PORT: "0" }, cwd).started;
    try {
      const warning = server
        .output()
        .split("\n")
        .find((line) => line.includes("published development"));
      console.log(`[startup] quickstart listening on ${server.url}; warning: ${warning?.trim()}`);
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(warning).toMatch(
        /WARN.*development mode with the published development AUTH_JWT_SECRET and WEBHOOK_SECRET_KEY/,
      );
      expect(server.output()).toContain(`embedded PGlite in .hooklane/pglite`);
      expect(await (await fetch(`${server.url}/health`)).json()).toMatchObject({ status: "ok", database: "pglite" });

      // The README's next steps: a development token, an account, a webhook on the sample receiver.
      const { stdout } = await promisify(execFile)(process.execPath, [DEV_TOKEN, "--account", "acc_demo", "--admin"], {
        cwd,
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
      });
      const api = (path: string, body: unknown) =>
        fetch(`${server.url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${stdout.trim()}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      expect((await api("/v3/accounts", { id: "acc_demo", name: "Demo" })).status).toBe(201);
      const hook = await api("/v3/webhooks", { url: "http://localhost:4000/hooks", events: ["payment-debt.created"] });
      expect(hook.status).toBe(201);
    } finally {
      await server.stop();
    }
  });
});
