import { base64url, CompactEncrypt, compactDecrypt } from "jose";

export interface SecretSealer {
  /** Encrypts a webhook secret for storage (compact JWE, dir + A256GCM). */
  seal(secret: string): Promise<string>;
  /** Decrypts a stored secret. Throws when the key is wrong or the value is corrupted. */
  unseal(sealed: string): Promise<string>;
}

// The deliver stage unseals on every POST; a bounded cache keeps that off the hot path.
const CACHE_LIMIT = 10_000;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Builds a sealer from `WEBHOOK_SECRET_KEY` (32 bytes in base64url). Throws at once when the
 * key is not 32 bytes, so a bad key fails start-up rather than the first delivery.
 */
export function createSecretSealer(keyBase64url: string): SecretSealer {
  let key: Uint8Array;
  try {
    key = base64url.decode(keyBase64url);
  } catch (cause) {
    throw new Error("WEBHOOK_SECRET_KEY is not valid base64url", { cause });
  }
  if (key.length !== 32) {
    throw new Error(`WEBHOOK_SECRET_KEY must decode to 32 bytes, got ${key.length}`);
  }
  const cache = new Map<string, string>();
  const remember = (sealed: string, secret: string) => {
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(sealed, secret);
  };

  return {
    async seal(secret) {
      const sealed = await new CompactEncrypt(encoder.encode(secret))
        .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
        .encrypt(key);
      remember(sealed, secret);
      return sealed;
    },
    async unseal(sealed) {
      const cached = cache.get(sealed);
      if (cached !== undefined) return cached;
      let plaintext: Uint8Array;
      try {
        ({ plaintext } = await compactDecrypt(sealed, key, {
          keyManagementAlgorithms: ["dir"],
          contentEncryptionAlgorithms: ["A256GCM"],
        }));
      } catch (cause) {
        throw new Error("cannot unseal webhook secret: wrong WEBHOOK_SECRET_KEY or corrupted value", { cause });
      }
      const secret = decoder.decode(plaintext);
      remember(sealed, secret);
      return secret;
    },
  };
}
