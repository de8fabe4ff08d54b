import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../lib/config/env.ts";
import { spawnServer, type ServerProcess } from "../support/server-process.ts";

/**
 * `npm start` as a newcomer runs it, twice by mistake or on a busy port: one
 * clear line and nothing touched, never a stack trace or a second process
 * quietly writing to the same embedded database.
 */
describe("npm start on a first run", () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function folder(): Promise<string> {
    const cwd = await mkdtemp(join(tmpdir(), "hooklane-first-run-"));
    cleanup.push(() => rm(cwd, { recursive: true, force: true }));
    return cwd;
  }

  it("says in one line that the port is in use, before migrating anything", async () => {
    const busy: Server = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    cleanup.push(() => new Promise((resolve) => busy.close(() => resolve())));
    const port = (busy.address() as { port: number }).port;
    const cwd = await folder();
    const started = Date.now();
    const { code, output } = await spawnServer({ PORT: String(port), HOST: "127.0.0.1" }, cwd).exited;
    console.info(`[first run] port in use: exit ${code} after ${Date.now() - started} ms: ${output.trim()}`);
    expect(code).toBe(1);
    expect(output).toMatch(new RegExp(`PORT: ${port} is in use .*set PORT to a free one`));
    expect(output).not.toMatch(/\n\s+at /); // no stack trace
    expect(output.trim().split("\n")).toHaveLength(1);
    // Nothing migrated: the embedded database was never created.
    expect(existsSync(join(cwd, ".hooklane"))).toBe(false);
  });

  it("refuses a second process on the same embedded database, and the first keeps all its data", async () => {
    const cwd = await folder();
    const first: ServerProcess = await spawnServer({ PORT: "0", HOST: "127.0.0.1" }, cwd).started;
    cleanup.push(() => first.stop());
    const token = await devToken();
    const create = (id: string) =>
      fetch(`${first.url}/v3/accounts`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ id, name: id }),
      });
    expect((await create("acc_before")).status).toBe(201);

    const { code, output } = await spawnServer({ PORT: "0", HOST: "127.0.0.1" }, cwd).exited;
    console.info(`[first run] second start on the same folder: exit ${code}: ${output.trim()}`);
    expect(code).toBe(1);
    expect(output).toMatch(/FATAL: PGLITE_DATA_DIR: the embedded database in \S+ is in use by process \d+/);
    // The refusal is one line (beside the development mode's usual warning), with no stack trace.
    expect(
      output
        .trim()
        .split("\n")
        .filter((line) => !/WARN: development mode/.test(line)),
    ).toHaveLength(1);

    expect((await create("acc_after")).status).toBe(201);
    for (const id of ["acc_before", "acc_after"]) {
      const read = await fetch(`${first.url}/v3/accounts/${id}`, { headers: { authorization: `Bearer ${token}` } });
      expect(read.status, id).toBe(200);
    }
  });
});

/** An admin token signed with the development server's published secret, as `npm run token` makes one. */
const devToken = () =>
  mintToken(DEVELOPMENT_JWT_SECRET, { sub: "first-run", account: "acc_ops", admin: true }, { expiresIn: "5m" });
