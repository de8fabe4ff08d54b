import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createSecretSealer } from "./webhook-secret-seal.ts";
import { generateWebhookSecret } from "./webhook-signature.ts";

const newKey = () => randomBytes(32).toString("base64url");

describe("createSecretSealer", () => {
  it("round-trips a secret through a fresh sealer with the same key", async () => {
    const key = newKey();
    const secret = generateWebhookSecret();
    const sealed = await createSecretSealer(key).seal(secret);
    expect(await createSecretSealer(key).unseal(sealed)).toBe(secret);
  });

  it("produces a compact dir/A256GCM JWE that does not contain the secret", async () => {
    const secret = generateWebhookSecret();
    const sealer = createSecretSealer(newKey());
    const sealed = await sealer.seal(secret);
    expect(sealed.split(".")).toHaveLength(5);
    const header = JSON.parse(Buffer.from(sealed.split(".")[0]!, "base64url").toString());
    expect(header).toEqual({ alg: "dir", enc: "A256GCM" });
    expect(sealed).not.toContain(secret);
    expect(sealed).not.toContain(secret.slice(6));
    expect(await sealer.seal(secret)).not.toBe(sealed);
  });

  it("fails clearly with the wrong key", async () => {
    const sealed = await createSecretSealer(newKey()).seal(generateWebhookSecret());
    await expect(createSecretSealer(newKey()).unseal(sealed)).rejects.toThrow(/wrong WEBHOOK_SECRET_KEY/);
  });

  it("fails clearly on a corrupted value", async () => {
    await expect(createSecretSealer(newKey()).unseal("not.a.jwe.at.all")).rejects.toThrow(/cannot unseal/);
  });

  it("rejects a key that is not 32 bytes", () => {
    expect(() => createSecretSealer(randomBytes(16).toString("base64url"))).toThrow(/32 bytes/);
  });
});
