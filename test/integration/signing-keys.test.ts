import { spawnSync } from "node:child_process";
import { createPublicKey, verify } from "node:crypto";
import { sql } from "drizzle-orm";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../app/app.ts";
import { createHooklane } from "../../lib/create-hooklane.ts";
import type { Hooklane } from "../../lib/hooklane.ts";
import { generateWebhookSecret, signatureHeaders } from "../../lib/webhook/outbound/webhook-signature.ts";
import { createSigningKeyStore } from "../../lib/webhook/outbound/webhook-signing-keys.ts";
import { verifyWebhook, WebhookVerificationError } from "../../lib/webhook/verify/webhook-verify.ts";
import { eventually } from "../support/eventually.ts";
import { startHarness, testConfig, type Harness } from "../support/harness.ts";
import { postgresFactory } from "../support/postgres.ts";
import { startReceiver, type ReceivedPost, type TestReceiver } from "../support/receiver.ts";

interface KeySet {
  keys: Array<{ kty: string; crv: string; kid: string; x: string; alg: string; use: string }>;
}

/** Python's `cryptography`, where installed: an implementation of ed25519 that shares nothing with Node's. */
const python = spawnSync("python3", ["-c", "import cryptography"], { encoding: "utf8" }).status === 0;

/**
 * Standard Webhooks `v1a`: ed25519 signatures a receiver verifies from the
 * account's published key set alone, on PostgreSQL with the lane running.
 */
describe("ed25519 signatures and published keys", () => {
  let harness: Harness;
  let other: Hooklane;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    harness = await startHarness(postgresFactory);
    await harness.accounts("acc_alice");
    // Another API process on the same database, with a pool of its own.
    other = await createHooklane(testConfig({}, harness.hooklane.config.databaseUrl));
  });
  afterAll(async () => {
    await other?.database.close();
    await harness?.close();
    await receiver?.close();
  });

  /** The key set as a receiver fetches it: no token. */
  const keySet = async (hooklane: Hooklane, headers: Record<string, string> = {}) =>
    createApp(hooklane).request("/webhook-keys/acc_alice/jwks.json", { headers });
  const touch = async () => {
    const response = await harness.call("PATCH", "/v3/accounts/acc_alice", { admin: true, body: { name: "Alice" } });
    expect(response.status, response.text).toBe(200);
  };
  /** Node's own ed25519 over the Standard Webhooks signed content, with the key the set names. */
  const nodeVerifies = (post: ReceivedPost, keys: KeySet, body = post.body) => {
    const jwk = keys.keys.find((key) => key.kid === post.headers["webhook-key-id"]);
    const signature = String(post.headers["webhook-signature"])
      .split(" ")
      .find((value) => value.startsWith("v1a,"))!
      .slice(4);
    if (!jwk) return false;
    const content = `${post.headers["webhook-id"]}.${post.headers["webhook-timestamp"]}.${body}`;
    return verify(
      null,
      Buffer.from(content),
      createPublicKey({ key: jwk, format: "jwk" }),
      Buffer.from(signature, "base64"),
    );
  };
  const libraryVerifies = async (post: ReceivedPost, keys: KeySet, changes: Record<string, string> = {}) => {
    try {
      const { event } = await verifyWebhook({
        payload: changes.body ?? post.body,
        headers: { ...post.headers, ...(changes.kid ? { "webhook-key-id": changes.kid } : {}) } as Record<
          string,
          string
        >,
        jwks: keys,
      });
      return event.id;
    } catch (error) {
      if (error instanceof WebhookVerificationError) return error.reason;
      throw error;
    }
  };

  it("signs v1a beside v1, verifiable from the key set alone by hooklane/verify, Node and Python; tampering fails", async () => {
    const refused = await harness.call("POST", "/v3/webhooks", {
      account: "acc_alice",
      body: { url: `${receiver.url}/v1a`, events: ["account.updated"], asymmetricSignature: true },
    });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body.errors[0].field).toBe("asymmetricSignature");
    const created = await harness.call("POST", "/v3/webhooks", {
      account: "acc_alice",
      body: {
        url: `${receiver.url}/v1a`,
        events: ["account.updated"],
        scheme: "standard-webhooks",
        asymmetricSignature: true,
      },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.asymmetricSignature).toBe(true);

    await touch();
    const [post] = await receiver.waitFor(1);
    expect(String(post!.headers["webhook-signature"])).toMatch(/^v1,[A-Za-z0-9+/=]+ v1a,[A-Za-z0-9+/=]{86}==$/);
    const answer = await keySet(harness.hooklane);
    const keys = (await answer.json()) as KeySet;
    expect(keys.keys).toEqual([
      {
        kty: "OKP",
        crv: "Ed25519",
        alg: "EdDSA",
        use: "sig",
        kid: post!.headers["webhook-key-id"],
        x: expect.any(String),
      },
    ]);
    const eventId = post!.headers["webhook-id"];
    expect(await libraryVerifies(post!, keys)).toBe(eventId);
    expect(nodeVerifies(post!, keys)).toBe(true);
    // A verifier of v1 alone (the standardwebhooks package) passes over the v1a value.
    expect(
      new StandardWebhook(created.body.secret).verify(post!.body, post!.headers as Record<string, string>),
    ).toMatchObject({
      id: eventId,
    });
    if (python) {
      const jwk = keys.keys[0]!;
      const checked = spawnSync(
        "python3",
        [
          "-c",
          [
            "import base64, sys",
            "from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey",
            "x, sig, content = sys.argv[1:4]",
            "key = Ed25519PublicKey.from_public_bytes(base64.urlsafe_b64decode(x + '=' * (-len(x) % 4)))",
            "key.verify(base64.b64decode(sig), content.encode())",
            "print('verified')",
          ].join("\n"),
          jwk.x,
          String(post!.headers["webhook-signature"]).split(" v1a,")[1]!,
          `${eventId}.${post!.headers["webhook-timestamp"]}.${post!.body}`,
        ],
        { encoding: "utf8" },
      );
      expect(checked.stdout.trim(), checked.stderr).toBe("verified");
    }
    console.log(`[v1a] verified by hooklane/verify, Node crypto.verify${python ? " and Python cryptography" : ""}`);

    // A changed body, a key the set does not name, or another account's key: no.
    const tampered = post!.body.replace('"account.updated"', '"account.created"');
    expect(await libraryVerifies(post!, keys, { body: tampered })).toBe("no-matching-signature");
    expect(nodeVerifies(post!, keys, tampered)).toBe(false);
    expect(await libraryVerifies(post!, keys, { kid: "whk_00000000000000000000000000000000" })).toBe(
      "no-matching-signature",
    );
    expect(await libraryVerifies(post!, { keys: [] })).toBe("no-matching-signature");
  });

  it("answers the same key set, with cache headers, from every API process", async () => {
    const [first, second] = [await keySet(harness.hooklane), await keySet(other)];
    expect(first.headers.get("cache-control")).toBe("public, max-age=300");
    expect(first.headers.get("content-type")).toBe("application/jwk-set+json");
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(second.headers.get("etag")).toBe(etag);
    expect(await second.text()).toBe(await first.text());
    expect((await keySet(other, { "if-none-match": etag })).status).toBe(304);
    // Nothing to tell about an account that does not exist, or a name that is not one.
    for (const name of ["acc_nobody", "../etc"]) {
      const answer = await createApp(other).request(`/webhook-keys/${name}/jwks.json`);
      if (answer.status === 200) expect(await answer.json()).toEqual({ keys: [] });
      else expect(answer.status).toBe(404);
    }
  });

  it("publishes a rotation's key before it signs anything; a key taken out of the set no longer verifies", async () => {
    const before = (await (await keySet(harness.hooklane)).json()) as KeySet;
    const [old] = before.keys;
    const rotated = await harness.call("POST", "/v3/webhook-signing-keys/rotate", { account: "acc_alice" });
    expect(rotated.status, rotated.text).toBe(201);
    const signsIn = Date.parse(rotated.body.signsFrom) - Date.parse(rotated.body.created);
    expect(signsIn).toBe(300_000);
    // In the set at once, beside the one that still signs.
    const during = (await (await keySet(harness.hooklane)).json()) as KeySet;
    expect(during.keys.map((key) => key.kid)).toEqual([old!.kid, rotated.body.id]);
    await touch();
    const posts = await receiver.waitFor(2);
    const signedDuring = posts.at(-1)!;
    expect(signedDuring.headers["webhook-key-id"]).toBe(old!.kid);
    expect(await libraryVerifies(signedDuring, during)).toBe(signedDuring.headers["webhook-id"]);

    // Its time come, the new key signs (a store reading the keys then).
    const store = createSigningKeyStore(harness.hooklane.database, harness.hooklane.secrets);
    expect((await store.signer("acc_alice", new Date())).kid).toBe(old!.kid);
    const later = createSigningKeyStore(harness.hooklane.database, harness.hooklane.secrets);
    expect((await later.signer("acc_alice", new Date(Date.parse(rotated.body.signsFrom) + 1))).kid).toBe(
      rotated.body.id,
    );

    // The old key's overlap over: out of the set, and what it signed no longer verifies.
    await harness.hooklane.database.rows(
      sql`update webhook_signing_key set published_until = now() - interval '1 second' where id = ${old!.kid}`,
    );
    const after = (await (await keySet(harness.hooklane)).json()) as KeySet;
    expect(after.keys.map((key) => key.kid)).toEqual([rotated.body.id]);
    expect(await libraryVerifies(signedDuring, after)).toBe("no-matching-signature");
    // A leak: the new key signs at once and every other leaves the set now.
    const leaked = await harness.call("POST", "/v3/webhook-signing-keys/rotate", {
      account: "acc_alice",
      body: { immediate: true },
    });
    expect(leaked.status, leaked.text).toBe(201);
    expect(leaked.body.signsFrom).toBe(leaked.body.created);
    const afterLeak = (await (await keySet(harness.hooklane)).json()) as KeySet;
    expect(afterLeak.keys.map((key) => key.kid)).toEqual([leaked.body.id]);
    const now = createSigningKeyStore(harness.hooklane.database, harness.hooklane.secrets);
    expect((await now.signer("acc_alice", new Date())).kid).toBe(leaked.body.id);
    // The lane reads keys every few seconds: within that, its deliveries carry the new key.
    const signedAfterLeak = await eventually(
      async () => {
        const seen = receiver.posts.length;
        await touch();
        return (await receiver.waitFor(seen + 1)).at(-1)!;
      },
      (post) => post.headers["webhook-key-id"] === leaked.body.id,
      { timeoutMs: 20_000, everyMs: 1_000 },
    );
    expect(await libraryVerifies(signedAfterLeak, afterLeak)).toBe(signedAfterLeak.headers["webhook-id"]);

    // An account's first key, made by a rotation, signs at once: there is nothing to overlap with.
    await harness.accounts("acc_bob");
    const first = await harness.call("POST", "/v3/webhook-signing-keys/rotate", { account: "acc_bob" });
    expect(first.status, first.text).toBe(201);
    expect(first.body.signsFrom).toBe(first.body.created);
    const audit = await harness.call("GET", "/v3/audit-log?limit=100", { account: "acc_alice" });
    expect(
      (audit.body.data as Array<{ action: string; target: string }>).filter(
        (entry) => entry.action === "webhook-signing-key.rotated" && entry.target === rotated.body.id,
      ),
    ).toHaveLength(1);
  });
  it("keeps the keys a rotation replaces verifying for the grace chosen, and none with grace 0", async () => {
    const list = async () =>
      (await harness.call("GET", "/v3/webhook-signing-keys", { account: "acc_alice" })).body.data as Array<{
        id: string;
        signsFrom: string;
        publishedUntil: string | null;
      }>;
    const [signing] = await list();
    const rotated = await harness.call("POST", "/v3/webhook-signing-keys/rotate", {
      account: "acc_alice",
      body: { grace: 7_200 },
    });
    expect(rotated.status, rotated.text).toBe(201);
    // The state, in the API: the new key signs in 5 minutes; the one it replaces stays 2 h after that.
    const [newest, previous] = await list();
    expect(newest).toMatchObject({ id: rotated.body.id, publishedUntil: null });
    expect(previous!.id).toBe(signing!.id);
    expect(Date.parse(previous!.publishedUntil!) - Date.parse(newest!.signsFrom)).toBe(7_200_000);
    // Both verify from the key set meanwhile: what the old key signs now, and what the new one will sign.
    const keys = (await (await keySet(harness.hooklane)).json()) as KeySet;
    expect(keys.keys.map((key) => key.kid)).toEqual(expect.arrayContaining([signing!.id, rotated.body.id]));
    const store = createSigningKeyStore(harness.hooklane.database, harness.hooklane.secrets);
    const payload = JSON.stringify({ id: "evt_grace", type: "webhook.test" });
    for (const at of [new Date(), new Date(Date.parse(newest!.signsFrom) + 1)]) {
      const signer = await store.signer("acc_alice", at);
      const headers = signatureHeaders({
        scheme: "standard-webhooks",
        brand: "Hooklane",
        eventId: `evt_grace_${signer.kid}`,
        attempt: 1,
        payload,
        secrets: [generateWebhookSecret()],
        timestamp: Math.floor(Date.now() / 1_000),
        ed25519: signer,
      }).headers;
      const verified = await verifyWebhook({ payload, headers, jwks: keys });
      expect(verified.event.id).toBe("evt_grace");
    }

    // Grace 0: the keys it replaces leave the set the moment the new one signs.
    const strict = await harness.call("POST", "/v3/webhook-signing-keys/rotate", {
      account: "acc_alice",
      body: { grace: 0 },
    });
    const [, replaced] = await list();
    expect(replaced!.id).toBe(rotated.body.id);
    expect(replaced!.publishedUntil).toBe(strict.body.signsFrom);
    const audit = await harness.call("GET", "/v3/audit-log?limit=100", { account: "acc_alice" });
    const graces = (audit.body.data as Array<{ action: string; target: string; detail: { graceSeconds: number } }>)
      .filter((entry) => entry.action === "webhook-signing-key.rotated")
      .filter((entry) => entry.target === rotated.body.id || entry.target === strict.body.id)
      .map((entry) => entry.detail.graceSeconds);
    expect(graces.sort()).toEqual([0, 7_200]);
    // A leak while a rotation's key waits to sign, with a grace: the waiting key never signs, the new one does.
    const waiting = await harness.call("POST", "/v3/webhook-signing-keys/rotate", { account: "acc_alice" });
    const leak = await harness.call("POST", "/v3/webhook-signing-keys/rotate", {
      account: "acc_alice",
      body: { immediate: true, grace: 600 },
    });
    expect(leak.status, leak.text).toBe(201);
    const afterWait = createSigningKeyStore(harness.hooklane.database, harness.hooklane.secrets);
    const whenWaitingWouldSign = new Date(Date.parse(waiting.body.signsFrom) + 1_000);
    expect((await afterWait.signer("acc_alice", whenWaitingWouldSign)).kid).toBe(leak.body.id);
    const leakedSet = (await (await keySet(harness.hooklane)).json()) as KeySet;
    expect(leakedSet.keys.map((key) => key.kid)).not.toContain(waiting.body.id);
    const outOfRange = await harness.call("POST", "/v3/webhook-signing-keys/rotate", {
      account: "acc_alice",
      body: { grace: 7 * 86_400 + 1 },
    });
    expect(outOfRange.status).toBe(422);
  });
});
