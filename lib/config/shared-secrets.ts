import { createHash } from "node:crypto";
import { codePoint } from "../code-point.ts";

/** The development WEBHOOK_SECRET_KEY, published in this repository: used in its place outside production only. */
export const DEVELOPMENT_SECRET_KEY = "aG9va2xhbmUtZGV2ZWxvcG1lbnQta2V5LW5vdC1zZWM";
/** The development AUTH_JWT_SECRET, published in this repository: used in its place outside production only. */
export const DEVELOPMENT_JWT_SECRET = "hooklane-development-jwt-secret-not-for-production";

// What may not start or end a secret: whitespace, controls (NUL, DEL, …) and invisible format characters
// (a zero-width space, …); controls may appear nowhere in it.
const EDGE = /[\s\p{Cc}\p{Cf}]/u;
const CONTROL = /\p{Cc}/u;

const named = (char: string) => {
  const kind = /\s/u.test(char) ? "whitespace" : CONTROL.test(char) ? "a control character" : "an invisible character";
  return `${kind} (${codePoint(char)})`;
};

/**
 * Why `text`, a shared secret as the environment or a `.env` file gave it,
 * cannot be used as it is; `undefined` when it can. Whitespace, a NUL or a
 * byte-order mark around a secret is what a copy, an `echo` or an editor left
 * there: used as given it would be another secret than the one its owner
 * meant (and one the other side never sends), so it is refused rather than
 * trimmed. The message names the character, never the secret.
 */
export function secretTextProblem(text: string): string | undefined {
  if (text === "") return undefined; // the variable's length rule speaks for it
  if (!text.isWellFormed()) return "is not valid Unicode (it holds a lone surrogate): set it again";
  const first = String.fromCodePoint(text.codePointAt(0)!);
  if (EDGE.test(first)) return `starts with ${named(first)}: remove it`;
  const last = Array.from(text.slice(-2)).at(-1)!;
  if (EDGE.test(last)) return `ends with ${named(last)}: remove it`;
  const control = CONTROL.exec(text);
  if (control) {
    const at = Array.from(text.slice(0, control.index)).length + 1;
    return `contains ${named(control[0])} at character ${at}: remove it`;
  }
  return undefined;
}

const developmentKeyBytes = Buffer.from(DEVELOPMENT_SECRET_KEY, "base64url");

/**
 * Whether a WEBHOOK_SECRET_KEY decodes to the published development key's 32
 * bytes, however it is spelled: base64url or base64, padded or not, or with
 * the low bits of its last character (which no byte keeps) changed.
 */
export function isDevelopmentSecretKey(key: string): boolean {
  // Node's decoder reads both alphabets and skips padding: every spelling that reaches the same bytes is caught.
  return Buffer.from(key, "base64url").equals(developmentKeyBytes);
}

// HS256 is HMAC-SHA256, whose key is padded with zero bytes to its 64-byte block (or hashed first when longer).
const HMAC_BLOCK = 64;
const hmacKey = (secret: string) => {
  const bytes = Buffer.from(secret, "utf8");
  const key = bytes.length > HMAC_BLOCK ? createHash("sha256").update(bytes).digest() : bytes;
  return Buffer.concat([key, Buffer.alloc(HMAC_BLOCK - key.length)]);
};
const developmentJwtKey = hmacKey(DEVELOPMENT_JWT_SECRET);

/**
 * Whether an AUTH_JWT_SECRET signs HS256 tokens exactly as the published
 * development secret does: the same secret, or one that differs only by
 * trailing NUL bytes, which HMAC's zero padding makes the same key.
 */
export function isDevelopmentJwtSecret(secret: string): boolean {
  return hmacKey(secret).equals(developmentJwtKey);
}
