import { randomBytes } from "node:crypto";

// Cryptographically random bytes drawn from a pool refilled 4 KiB at a time: ids minted on every request
// (request ids, event ids) cost a slice of a buffer rather than a call into the random generator each.
const POOL_BYTES = 4_096;
let pool = Buffer.alloc(0);
let offset = 0;

/** `bytes` fresh random bytes (at most 256) as base64url, never shared with another call. */
export function randomBase64url(bytes: number): string {
  if (bytes > 256) return randomBytes(bytes).toString("base64url");
  if (offset + bytes > pool.length) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  offset += bytes;
  return pool.toString("base64url", offset - bytes, offset);
}
