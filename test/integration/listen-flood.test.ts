import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { distribution } from "../../bench/stats.ts";
import { mintToken } from "../../lib/auth/jwt.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { spawnServer, type ServerProcess } from "../support/server-process.ts";

const ATTACKER = "acc_flood_attacker";
const NEIGHBOUR = "acc_flood_neighbour";
const ATTEMPTS = 600;
/** Short windows, alternated: whatever else the machine does falls on both sides alike. */
const ROUNDS = 6;
const WINDOW_MS = 1_500;
/** 40 requests/s: a busy dashboard, inside the default per-token rate (50/s). */
const PACE_MS = 25;

const JWT_SECRET = randomBytes(32).toString("hex");
const token = (claims: { sub: string; account: string; admin?: boolean }) => mintToken(JWT_SECRET, claims);

/**
 * One account opens listen streams, 600 at a time, against a production
 * server on its own PostgreSQL, while another account's requests are timed;
 * and, alternately, with nobody else about. With the caps on, the attempts
 * themselves are the attack (at most 5 open). With them lifted, 600 streams
 * are held open, and what an idle stream costs (it sleeps until its own
 * session has work) is what the neighbour would feel.
 */
describe.each<{ caps: "on" | "lifted"; env: Record<string, string> }>([
  { caps: "on", env: {} },
  { caps: "lifted", env: { WEBHOOK_QUOTA_LISTEN_STREAMS: "1000", API_RATE_LIMIT: "false" } },
])("listen streams, caps and rate limits $caps", ({ caps, env }) => {
  let server: ServerProcess;
  let drop: () => Promise<void>;
  let cwd: string;

  const call = (bearer: string, method: string, path: string, body?: unknown, signal?: AbortSignal) =>
    fetch(`${server.url}${path}`, {
      method,
      signal,
      headers: { authorization: `Bearer ${bearer}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });

  beforeAll(async () => {
    const created = await createTestDatabase();
    drop = created.drop;
    cwd = await mkdtemp(join(tmpdir(), "hooklane-listen-flood-"));
    server = await spawnServer(
      {
        NODE_ENV: "production",
        DATABASE_URL: created.url,
        PORT: "0",
        HOST: "127.0.0.1",
        AUTH_JWT_SECRET: JWT_SECRET,
        WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64url"),
        METRICS_TOKEN: randomBytes(24).toString("base64url"),
        ...env,
      },
      cwd,
    ).started;
    const admin = await token({ sub: "root", account: ATTACKER, admin: true });
    for (const id of [ATTACKER, NEIGHBOUR]) {
      const answer = await call(admin, "POST", "/v3/accounts", { id, name: id });
      expect(answer.status, await answer.text()).toBe(201);
    }
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await drop?.();
    if (cwd) await rm(cwd, { recursive: true, force: true });
  });

  /** The neighbour's requests, one every PACE_MS (within its rate limit), for `ms`: each one's latency. */
  async function neighbourFor(bearer: string, ms: number): Promise<number[]> {
    const latencies: number[] = [];
    const until = performance.now() + ms;
    while (performance.now() < until) {
      const started = performance.now();
      const answer = await call(bearer, "GET", "/v3/webhooks?limit=10");
      await answer.arrayBuffer();
      expect(answer.status).toBe(200);
      latencies.push(performance.now() - started);
      await new Promise((tick) => setTimeout(tick, Math.max(0, PACE_MS - (performance.now() - started))));
    }
    return latencies;
  }

  it(`keeps another account's p95 within 2x of its baseline, ${ATTEMPTS} stream attempts at a time`, async () => {
    // Spread over 20 tokens, so each stays inside its own rate and only the account's rate and the stream cap refuse.
    const attackers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => token({ sub: `cli-${i}`, account: ATTACKER })),
    );
    const neighbour = await token({ sub: "dashboard", account: NEIGHBOUR });
    const session = await call(attackers[0]!, "POST", "/v3/listen-sessions", {
      forwardTo: "http://localhost:4000/hooks",
    });
    expect(session.status).toBe(201);
    const { id } = (await session.json()) as { id: string };

    const baseline: number[] = [];
    const flooded: number[] = [];
    const statuses: Record<string, number> = {};
    for (let round = 0; round < ROUNDS; round++) {
      baseline.push(...(await neighbourFor(neighbour, WINDOW_MS)));
      const hangUp = new AbortController();
      let opened = 0;
      const allOpen = Promise.withResolvers<void>();
      const attempts = Array.from({ length: ATTEMPTS }, async (_, i) => {
        try {
          const path = `/v3/listen-sessions/${id}/stream`;
          const answer = await call(attackers[i % attackers.length]!, "GET", path, undefined, hangUp.signal);
          const why =
            answer.status === 429 ? `429 ${((await answer.json()) as { quota: string }).quota}` : answer.status;
          statuses[why] = (statuses[why] ?? 0) + 1;
          if (answer.status !== 200) {
            if (answer.status !== 429) await answer.body?.cancel();
            return;
          }
          // Open: held until the window ends.
          if (++opened === ATTEMPTS) allOpen.resolve();
          await answer.body?.pipeTo(new WritableStream()).catch(() => {});
        } catch (error) {
          if (!hangUp.signal.aborted) throw error;
        }
      });
      // Capped, the attempts are timed as they come; lifted, the streams once open and settled.
      if (caps === "lifted") {
        await allOpen.promise;
        await new Promise((settle) => setTimeout(settle, 1_000));
      }
      flooded.push(...(await neighbourFor(neighbour, WINDOW_MS)));
      hangUp.abort();
      await Promise.all(attempts);
    }
    const p95 = { baseline: distribution(baseline).p95, flooded: distribution(flooded).p95 };
    console.log(
      `[listen-flood] caps ${caps}: ${ROUNDS} rounds x ${ATTEMPTS} stream attempts → ${JSON.stringify(statuses)}; ` +
        `neighbour p95 ${p95.baseline.toFixed(1)} ms alone (${baseline.length} requests), ` +
        `${p95.flooded.toFixed(1)} ms ${caps === "on" ? "during the attempts" : "with the streams held open"} ` +
        `(${flooded.length}): ${(p95.flooded / p95.baseline).toFixed(2)}x`,
    );
    // Capped: at most 5 open per round, the rest 429 (stream cap or rate limit). Lifted: all open. Never a 5xx.
    if (caps === "on") {
      expect(statuses[200]).toBeLessThanOrEqual(5 * ROUNDS);
      expect(statuses["429 listen-streams"]).toBeGreaterThan(0);
    } else expect(statuses[200]).toBe(ATTEMPTS * ROUNDS);
    const refused = Object.entries(statuses).filter(([why]) => why.startsWith("429 "));
    expect((statuses[200] ?? 0) + refused.reduce((sum, [, n]) => sum + n, 0)).toBe(ATTEMPTS * ROUNDS);
    expect(p95.flooded / p95.baseline).toBeLessThanOrEqual(2);
  }, 180_000);
});
