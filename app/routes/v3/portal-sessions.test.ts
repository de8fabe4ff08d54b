import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { portalSession } from "../../../lib/db/schema.ts";
import { sealPortalSession } from "../../../lib/webhook/portal/portal-session.ts";
import { pruneSessionsTask } from "../../../lib/webhook/sweeper/prune-sessions.ts";
import { HARNESS_START_MS, pgliteFactory, startHarness, type Harness } from "../../../test/support/harness.ts";

const A = { account: "acc_portal_a" };
const B = { account: "acc_portal_b" };
let harness: Harness;

beforeAll(async () => {
  harness = await startHarness(pgliteFactory, { lane: false });
  await harness.accounts(A.account, B.account);
}, HARNESS_START_MS);
afterAll(() => harness?.close());

const open = async (who: { account: string; admin?: boolean }, body: Record<string, unknown> = {}) => {
  const answer = await harness.call("POST", "/v3/portal-sessions", {
    ...who,
    body: { frameAncestors: ["https://app.example.com"], ...body },
  });
  expect(answer.status, answer.text).toBe(201);
  return answer.body as { id: string; url: string; account: string };
};
const portalPage = async (url: string) => {
  const response = await harness.request("GET", new URL(url).pathname);
  return { status: response.status, html: await response.text() };
};
const listed = async (who: { account: string; admin?: boolean }, query = "") =>
  (await harness.call("GET", `/v3/portal-sessions${query}`, who)).body.data.map((s: { id: string }) => s.id);

describe("portal sessions: listed and revoked", () => {
  it("lists the account's live sessions without their URLs, and revoking one ends its pages with a 401", async () => {
    const first = await open(A);
    const second = await open(A);
    const list = await harness.call("GET", "/v3/portal-sessions", A);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ object: "list", nextCursor: null });
    // Newest first; two made in the same second come in either order.
    expect(list.body.data.map((s: { id: string }) => s.id).sort()).toEqual([second.id, first.id].sort());
    expect(list.body.data.find((s: { id: string }) => s.id === second.id)).toEqual({
      id: second.id,
      object: "portal-session",
      account: A.account,
      frameAncestors: ["https://app.example.com"],
      expires: expect.any(String),
      created: expect.any(String),
    });
    expect(JSON.stringify(list.body)).not.toContain("/console/portal/");

    expect((await portalPage(first.url)).status).toBe(200);
    const revoked = await harness.call("DELETE", `/v3/portal-sessions/${first.id}`, A);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ id: first.id, object: "portal-session", deleted: true });
    const ended = await portalPage(first.url);
    expect(ended.status).toBe(401);
    expect(ended.html).toContain("This webhooks portal session has ended");
    // Revoking again answers the same; the other session lives on.
    expect((await harness.call("DELETE", `/v3/portal-sessions/${first.id}`, A)).status).toBe(200);
    expect(await listed(A)).toEqual([second.id]);
    expect((await portalPage(second.url)).status).toBe(200);
  });

  it("revokes every session of the account at once, and no other account's", async () => {
    const mine = [await open(A), await open(A)];
    const theirs = await open(B);
    const answer = await harness.call("POST", "/v3/portal-sessions/revoke-all", A);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ object: "portal-session-revocation", account: A.account, revoked: 3 });
    for (const session of mine) expect((await portalPage(session.url)).status).toBe(401);
    expect(await listed(A)).toEqual([]);
    expect(await listed(B)).toEqual([theirs.id]);
    expect((await portalPage(theirs.url)).status).toBe(200);
    // Naming another account is for admins: anyone else revokes their own.
    const named = await harness.call("POST", "/v3/portal-sessions/revoke-all", { ...A, body: { account: B.account } });
    expect(named.body).toEqual({ object: "portal-session-revocation", account: A.account, revoked: 0 });
    expect((await portalPage(theirs.url)).status).toBe(200);
  });

  it("keeps each account to its own sessions: another account's id is 404; an admin names the account", async () => {
    const theirs = await open(B);
    for (const who of [A, { ...A, admin: true }]) {
      const answer = await harness.call("DELETE", `/v3/portal-sessions/${theirs.id}`, who);
      expect(answer.status).toBe(404);
      expect(JSON.stringify(answer.body)).not.toContain(B.account);
      expect(await listed(who)).not.toContain(theirs.id);
    }
    expect(await listed(A, `?account=${B.account}`)).toEqual([]);
    expect((await portalPage(theirs.url)).status).toBe(200);
    const admin = { ...A, admin: true };
    expect(await listed(admin, `?account=${B.account}`)).toContain(theirs.id);
    const byAdmin = await harness.call("DELETE", `/v3/portal-sessions/${theirs.id}?account=${B.account}`, admin);
    expect(byAdmin.status).toBe(200);
    expect((await portalPage(theirs.url)).status).toBe(401);
    expect((await harness.call("DELETE", "/v3/portal-sessions/ps_nothing", A)).status).toBe(404);
  });

  it("puts every creation and revocation on the account's audit log, naming who did it", async () => {
    const admin = { account: A.account, admin: true, sub: "ops-admin" };
    const made = await open(admin, { account: B.account });
    expect(made.account).toBe(B.account);
    const one = await harness.call("DELETE", `/v3/portal-sessions/${made.id}?account=${B.account}`, admin);
    expect(one.status).toBe(200);
    const all = await harness.call("POST", "/v3/portal-sessions/revoke-all", {
      ...admin,
      body: { account: B.account },
    });
    expect(all.status).toBe(200);
    const log = await harness.call("GET", "/v3/audit-log?limit=100", B);
    const mine = (log.body.data as Array<{ action: string; target: string; actor: { sub: string }; detail: object }>)
      .filter((entry) => entry.actor.sub === "ops-admin")
      .map((entry) => [entry.action, entry.target, entry.actor.sub]);
    expect(mine).toEqual([
      ["portal-sessions.revoked", B.account, "ops-admin"],
      ["portal-session.revoked", made.id, "ops-admin"],
      ["portal-session.created", made.id, "ops-admin"],
    ]);
    // Another account's log has none of it.
    const theirs = await harness.call("GET", "/v3/audit-log?limit=100", A);
    expect(JSON.stringify(theirs.body.data)).not.toContain(made.id);
  });

  it("refuses a URL sealed before sessions were stored (no row), and a URL whose row is gone", async () => {
    const { token } = await sealPortalSession(harness.hooklane.config.secretKey, {
      account: A.account,
      frameAncestors: ["https://app.example.com"],
      ttlSeconds: 60,
    });
    expect((await portalPage(`http://localhost/console/portal/${token}`)).status).toBe(401);
    const expired = await open(A);
    await harness.hooklane.database.db
      .update(portalSession)
      .set({ expiresAt: new Date(Date.now() - 1_000) })
      .where(eq(portalSession.id, expired.id));
    expect((await portalPage(expired.url)).status).toBe(401);
    expect(await listed(A)).not.toContain(expired.id);
    expect((await harness.call("DELETE", `/v3/portal-sessions/${expired.id}`, A)).status).toBe(404);
    await pruneSessionsTask.run({ hooklane: harness.hooklane, workerId: "test", now: () => new Date() });
    const rows = await harness.hooklane.database.db
      .select()
      .from(portalSession)
      .where(eq(portalSession.id, expired.id));
    expect(rows).toEqual([]);
    expect((await portalPage(expired.url)).status).toBe(401);
  });
});
