import { createHash, timingSafeEqual } from "node:crypto";

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest();

/**
 * Whether a shared secret a request carries equals the expected one, in time
 * that depends on neither: both sides are hashed with SHA-256 first, so the
 * comparison is over 32 bytes whatever their lengths, and neither a common
 * prefix nor the expected length shows in how long it takes.
 */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}
