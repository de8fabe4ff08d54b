import { randomUUID } from "node:crypto";
import { and, count, eq, isNull } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../app/app.ts";
import { consolePrincipalBindings } from "../../lib/auth/console-principal.ts";
import { mintToken } from "../../lib/auth/jwt.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../lib/config/env.ts";
import { idempotencyKey, webhook, webhookRecovery } from "../../lib/db/schema.ts";
import {
  HARNESS_START_MS,
  startHarness,
  type CallOptions,
  type DatabaseFactory,
  type Harness,
  type HarnessAnswer,
} from "./harness.ts";

const ADMIN = { account: "acc_alice", sub: "alice-admin", admin: true };
const USER = { account: "acc_alice", sub: "alice-user" };
const SUPPORT = { account: "acc_helpdesk", sub: "agent-7", support: true };
const HELPDESK_USER = { account: "acc_helpdesk", sub: "helpdesk-user" };

/**
 * `Idempotency-Key` replays its stored answer to the caller that got it
 * first, and to nobody else: a replay runs before the route's role and
 * tenancy checks, so another caller of the same account (another subject,
 * or the same one with another role) is refused with 422 and sees nothing
 * of the answer. Written once and run against every database the product
 * supports.
 */
export function describeIdempotencyCallers(name: string, factory: DatabaseFactory): void {
  describe(`Idempotency-Key callers on ${name}`, () => {
    let harness: Harness;

    beforeAll(async () => {
      harness = await startHarness(factory, { lane: false });
      await harness.accounts("acc_alice", "acc_bob", "acc_helpdesk");
    }, HARNESS_START_MS);
    afterAll(async () => {
      await harness?.close();
    });

    const send = (who: CallOptions, path: string, body: unknown, key?: string) =>
      harness.call("POST", path, { ...who, body, headers: key ? { "idempotency-key": key } : {} });
    /** The first answer again, byte for byte, marked as a replay. */
    const expectReplay = (answer: HarnessAnswer, first: HarnessAnswer) => {
      expect(answer.status).toBe(first.status);
      expect(answer.headers.get("idempotent-replayed")).toBe("true");
      expect(answer.headers.get("content-type")).toBe(first.headers.get("content-type"));
      expect(answer.text).toBe(first.text);
    };
    /** 422 naming the header, with none of `shown` (what the first answer showed) in it. */
    const expectRefused = (answer: HarnessAnswer, shown: string[]) => {
      expect(answer.status).toBe(422);
      expect(answer.headers.get("content-type")).toBe("application/problem+json");
      expect(answer.headers.get("idempotent-replayed")).toBeNull();
      expect(answer.body.errors).toEqual([
        {
          field: "Idempotency-Key",
          message: "was already used by another caller (another subject or role) in the last 24 h; use a new key",
        },
      ]);
      for (const value of shown) expect(answer.text).not.toContain(value);
    };
    const globalWebhooks = async () =>
      (await harness.hooklane.database.db.select({ n: count() }).from(webhook).where(isNull(webhook.account)))[0]!.n;

    it("never replays an admin's global webhook, or its secret, to a role-less user of the account", async () => {
      const key = randomUUID();
      const body = { scope: "global", url: "http://127.0.0.1:8080/global", events: ["account.updated"] };
      expect((await send(USER, "/v3/webhooks", body)).status).toBe(403);
      const first = await send(ADMIN, "/v3/webhooks", body, key);
      expect(first.status).toBe(201);
      expect(first.body.secret).toBeTruthy();

      expectRefused(await send(USER, "/v3/webhooks", body, key), [first.body.secret, first.body.id]);
      // With another body the refusal is the same: it tells another caller nothing of the first request.
      const guess = { ...body, url: "http://127.0.0.1:8080/guess" };
      expectRefused(await send(USER, "/v3/webhooks", guess, key), [first.body.secret, first.body.id]);
      expectReplay(await send(ADMIN, "/v3/webhooks", body, key), first);
      expect(await globalWebhooks()).toBe(1);
    });

    it("never replays an admin's portal session for another account to a role-less user", async () => {
      const key = randomUUID();
      const body = { account: "acc_bob", frameAncestors: ["https://app.example.com"] };
      // Without the key the user gets a portal of its own account, whatever it names.
      const own = await send(USER, "/v3/portal-sessions", body);
      expect(own.status).toBe(201);
      expect(own.body.account).toBe(USER.account);
      const first = await send(ADMIN, "/v3/portal-sessions", body, key);
      expect(first.status).toBe(201);
      expect(first.body.account).toBe("acc_bob");

      const token = new URL(first.body.url).pathname.split("/").at(-1)!;
      expectRefused(await send(USER, "/v3/portal-sessions", body, key), [
        first.body.url,
        token,
        first.body.id,
        "acc_bob",
      ]);
      expectReplay(await send(ADMIN, "/v3/portal-sessions", body, key), first);
    });

    it("never replays a support engineer's resend for another account to an ordinary user of its account", async () => {
      const key = randomUUID();
      const body = {
        eventType: "payment-debt.created",
        since: new Date(Date.now() - 3_600_000).toISOString(),
        account: "acc_bob",
      };
      expect((await send(HELPDESK_USER, "/v3/webhook-resends", body)).status).toBe(404);
      const first = await send(SUPPORT, "/v3/webhook-resends", body, key);
      expect(first.status).toBe(202);
      expect(first.body.account).toBe("acc_bob");

      expectRefused(await send(HELPDESK_USER, "/v3/webhook-resends", body, key), [first.body.id, "acc_bob"]);
      expectReplay(await send(SUPPORT, "/v3/webhook-resends", body, key), first);
      const resends = await harness.hooklane.database.db
        .select({ n: count() })
        .from(webhookRecovery)
        .where(eq(webhookRecovery.account, "acc_bob"));
      expect(resends[0]!.n).toBe(1);
    });

    it("binds the answer to the claims, not the token: a role change, another role or a console principal is refused", async () => {
      const key = randomUUID();
      const body = { scope: "global", url: "http://127.0.0.1:8080/shapes", events: ["account.updated"] };
      const first = await send(ADMIN, "/v3/webhooks", body, key);
      expect(first.status).toBe(201);
      const shown = [first.body.secret, first.body.id];
      const before = await globalWebhooks();

      // The same subject after losing its role, or holding another one.
      expectRefused(await send({ ...ADMIN, admin: false }, "/v3/webhooks", body, key), shown);
      expectRefused(await send({ ...ADMIN, admin: false, support: true }, "/v3/webhooks", body, key), shown);
      // Support of the same account: it may act across accounts, but this answer is not its own.
      expectRefused(
        await send({ ...ADMIN, sub: "agent-8", admin: false, support: true }, "/v3/webhooks", body, key),
        shown,
      );
      // A principal the console hands the API in-process (a portal session's), not a bearer token.
      const portal = { sub: "portal:ps_test", account: ADMIN.account, admin: false, support: false };
      const handed = await createApp(harness.hooklane).request(
        "/v3/webhooks",
        {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key },
          body: JSON.stringify(body),
        },
        consolePrincipalBindings(portal),
      );
      const text = await handed.text();
      expectRefused({ status: handed.status, headers: handed.headers, text, body: JSON.parse(text) }, shown);

      // Another token for the same subject, account and role is the same caller.
      const fresh = await mintToken(DEVELOPMENT_JWT_SECRET, ADMIN, { expiresIn: "1h" });
      const again = await harness.call("POST", "/v3/webhooks", {
        body,
        headers: { authorization: `Bearer ${fresh}`, "idempotency-key": key },
      });
      expectReplay(again, first);
      expect(await globalWebhooks()).toBe(before);
    });

    it("replays an answer stored before callers were bound to nobody, its first caller included", async () => {
      const key = randomUUID();
      const body = { scope: "global", url: "http://127.0.0.1:8080/unbound", events: ["account.updated"] };
      const first = await send(ADMIN, "/v3/webhooks", body, key);
      expect(first.status).toBe(201);
      await harness.hooklane.database.db
        .update(idempotencyKey)
        .set({ principal: null })
        .where(and(eq(idempotencyKey.account, ADMIN.account), eq(idempotencyKey.key, key)));
      const before = await globalWebhooks();

      expectRefused(await send(ADMIN, "/v3/webhooks", body, key), [first.body.secret, first.body.id]);
      expectRefused(await send(USER, "/v3/webhooks", body, key), [first.body.secret, first.body.id]);
      expect(await globalWebhooks()).toBe(before);
    });
  });
}
