import type { SignatureManifest } from "../../db/schema.ts";
import { USER_AGENT } from "../../version.ts";

/** What stands for a signature's value wherever the log shows a request. */
export const REDACTED = "[redacted]";

/**
 * The headers one attempt was sent with, rebuilt from what the ledger keeps
 * (the event id, the attempt number and the signature's manifest), with every
 * signature value redacted: the log shows what was signed and how, never a
 * value someone could replay. Mirrors `signatureHeaders` and `signAttempt`,
 * but for the webhook's own headers: the ledger does not keep those per
 * attempt (a secret one must not be), so the log does not show them.
 */
export function attemptRequestHeaders(input: {
  brand: string;
  eventId: string;
  attempt: number;
  manifest: SignatureManifest;
}): Record<string, string> {
  const { brand, eventId, attempt, manifest } = input;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    [`${brand}-Event-Id`]: eventId,
    [`${brand}-Attempt`]: String(attempt),
  };
  const values = Array.from({ length: manifest.signatures }, () => REDACTED);
  if (manifest.scheme === "hooklane-v1") {
    headers[`${brand}-Signature`] = [`t=${manifest.timestamp}`, ...values.map((v) => `v1=${v}`)].join(",");
  } else {
    headers["webhook-id"] = eventId;
    headers["webhook-timestamp"] = String(manifest.timestamp);
    headers["webhook-signature"] = values.map((v) => `v1,${v}`).join(" ");
  }
  return headers;
}
