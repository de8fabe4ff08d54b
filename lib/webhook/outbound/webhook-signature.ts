import { createHmac, randomBytes, sign } from "node:crypto";

import type { SignatureManifest, SignatureScheme } from "../../db/schema.ts";
import type { Signer } from "./webhook-signing-keys.ts";

export interface SignatureInput {
  scheme: SignatureScheme;
  brand: string;
  eventId: string;
  attempt: number;
  payload: string;
  /** The active secret first, then the previous one while a rotation is in its grace period. */
  secrets: string[];
  /** Unix seconds. */
  timestamp: number;
  /** standard-webhooks only: also sign with this ed25519 key (`v1a`), naming it in `webhook-key-id`. */
  ed25519?: Signer | undefined;
}

const SECRET_PREFIX = "whsec_";

/** A new subscriber secret: `whsec_` + standard base64 (with padding) of 32 random bytes. */
export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/**
 * The signature headers for one attempt, plus the event id and attempt headers both
 * schemes carry. hooklane-v1 is byte-compatible with Stripe (HMAC key = the whole secret
 * string); standard-webhooks keys the HMAC with the base64-decoded part after `whsec_`.
 * Throws when `secrets` is empty. Content-Type and User-Agent are the sender's job.
 */
export function signatureHeaders(input: SignatureInput): {
  headers: Record<string, string>;
  manifest: SignatureManifest;
} {
  const { scheme, brand, eventId, attempt, payload, secrets, timestamp } = input;
  if (secrets.length === 0) throw new Error(`cannot sign event ${eventId}: the webhook has no secret`);
  const headers: Record<string, string> = {
    [`${brand}-Event-Id`]: eventId,
    [`${brand}-Attempt`]: String(attempt),
  };
  if (scheme === "hooklane-v1") {
    const signed = `${timestamp}.${payload}`;
    let value = `t=${timestamp}`;
    for (const secret of secrets) value += `,v1=${hooklaneDigest(secret, signed)}`;
    headers[`${brand}-Signature`] = value;
  } else {
    const signed = `${eventId}.${timestamp}.${payload}`;
    let value = "";
    for (const secret of secrets) {
      const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
      value += `${value ? " " : ""}v1,${createHmac("sha256", key).update(signed).digest("base64")}`;
    }
    if (input.ed25519) {
      // Standard Webhooks' asymmetric version, over the same content; a verifier of v1 alone passes over it.
      value += ` v1a,${sign(null, Buffer.from(signed), input.ed25519.key).toString("base64")}`;
      headers["webhook-key-id"] = input.ed25519.kid;
    }
    headers["webhook-id"] = eventId;
    headers["webhook-timestamp"] = String(timestamp);
    headers["webhook-signature"] = value;
  }
  const asymmetric = scheme === "standard-webhooks" && input.ed25519 ? 1 : 0;
  return { headers, manifest: { timestamp, scheme, signatures: secrets.length + asymmetric } };
}

function hooklaneDigest(secret: string, signed: string): string {
  return createHmac("sha256", secret).update(signed).digest("hex");
}
