import { randomBytes } from "node:crypto";
import type { Database } from "../../db/client.ts";
import { recordConsentAnswer, type ConsentSubject } from "../../db/sql/endpoint-consent.ts";
import type { ConsentState } from "../../db/schema.ts";
import { USER_AGENT } from "../../version.ts";
import type { DeliveryOutcome } from "./webhook-delivery-outcome.ts";
import { createSender, type HttpSender } from "./webhook-http-sender.ts";
import { createSigningKeyStore } from "./webhook-signing-keys.ts";
import type { SecretSealer } from "./webhook-secret-seal.ts";
import type { SigningDeps } from "./webhook-out-deliver.handler.ts";
import { openHeaders } from "./webhook-custom-headers.ts";
import { signatureHeaders } from "./webhook-signature.ts";

/**
 * After the nth consent request that got no consent, the next is due this much later; after the last, none goes on
 * its own (about two days in all) and the owner asks again (`POST /v3/webhooks/:id/request-consent`).
 */
export const CONSENT_SCHEDULE_MS: readonly number[] = [
  60_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  6 * 3_600_000,
  12 * 3_600_000,
  24 * 3_600_000,
];

/** How long a taken request holds its webhook before another sweeper may send it: longer than a request can take. */
export const CONSENT_LEASE_MS = 60_000;

/** The answer headers the consent request reads. */
export const ALLOWED_ORIGIN = "webhook-allowed-origin";
const ALLOWED_RATE = "webhook-allowed-rate";

export interface ConsentDeps extends SigningDeps {
  database: Database;
  sender: HttpSender;
  /** The sender's name the request gives (`WebHook-Request-Origin`) and the answer must allow. */
  origin: string;
}

/** What asking for consent is made with: a process's database, sealer and configuration. */
export interface ConsentSource {
  database: Database;
  secrets: SecretSealer;
  config: {
    brand: string;
    timeoutMs: number;
    allowedHosts: readonly string[];
    consent: { origin: string };
  };
}

/**
 * Runs `ask` with what consent requests need: a sender of their own (one socket per origin, the lane's deadline and
 * address checks), closed after, and the accounts' signing keys for webhooks that sign `v1a`.
 */
export async function withConsentDeps<T>(source: ConsentSource, ask: (deps: ConsentDeps) => Promise<T>): Promise<T> {
  const { database, secrets, config } = source;
  const sender = createSender({ ...config, connectionsPerOrigin: 1 });
  try {
    return await ask({
      database,
      sender,
      secrets,
      brand: config.brand,
      origin: config.consent.origin,
      signingKeys: createSigningKeyStore(database, secrets),
    });
  } finally {
    await sender.close();
  }
}

/**
 * The consent request, after the CloudEvents HTTP webhook spec's abuse protection: an `OPTIONS` to the URL with
 * `WebHook-Request-Origin: <origin>`, signed as a delivery with an empty body is (the webhook's scheme and secrets,
 * `v1a` too when it signs so; the id is `consent_…`), with the webhook's own headers. Throws when a secret does not
 * unseal.
 */
export async function consentRequestHeaders(
  deps: ConsentDeps,
  subject: ConsentSubject,
  at: Date,
): Promise<Record<string, string>> {
  const secrets = [await deps.secrets.unseal(subject.secretSealed)];
  if (subject.previousSecretSealed && subject.previousSecretExpiresAt && subject.previousSecretExpiresAt > at) {
    secrets.push(await deps.secrets.unseal(subject.previousSecretSealed));
  }
  const signed = signatureHeaders({
    scheme: subject.scheme,
    brand: deps.brand,
    eventId: `consent_${randomBytes(12).toString("hex")}`,
    attempt: subject.attempts + 1,
    payload: "",
    secrets,
    timestamp: Math.floor(at.getTime() / 1_000),
    ed25519:
      subject.asymmetricSignature && subject.scheme === "standard-webhooks" && deps.signingKeys
        ? await deps.signingKeys.signer(subject.account, at)
        : undefined,
  });
  const own = await openHeaders(subject.headers, deps.secrets, deps.brand);
  return {
    ...own.headers,
    "user-agent": USER_AGENT,
    ...signed.headers,
    "webhook-request-origin": deps.origin,
  };
}

/**
 * Whether an answer to the consent request consents: a 2xx whose `WebHook-Allowed-Origin` is `origin` (in any case)
 * or `*`. Otherwise why not, in words the console shows.
 */
export function judgeConsent(
  outcome: DeliveryOutcome,
  headers: Readonly<Record<string, string>>,
  origin: string,
): { granted: true } | { granted: false; error: string } {
  if (outcome.kind === "failure") {
    const why = outcome.statusCode === null ? outcome.message : `answered HTTP ${outcome.statusCode}`;
    return { granted: false, error: `${why}: not the consent answer` };
  }
  const allowed = headers[ALLOWED_ORIGIN];
  if (allowed === undefined) {
    return { granted: false, error: `answered HTTP ${outcome.statusCode} without WebHook-Allowed-Origin` };
  }
  const names = allowed.split(",").map((name) => name.trim().toLowerCase());
  if (names.includes("*") || names.includes(origin.toLowerCase())) return { granted: true };
  return {
    granted: false,
    error: `answered WebHook-Allowed-Origin: ${allowed.slice(0, 200)}, which does not allow ${origin}`,
  };
}

/** When the next request is due after `attempts` requests that got no consent; null: none on its own. */
export function nextConsentRequest(attempts: number, at: Date): Date | null {
  const wait = CONSENT_SCHEDULE_MS[attempts - 1];
  return wait === undefined ? null : new Date(at.getTime() + wait);
}

/**
 * Sends one consent request for `subject` and records the answer: the state it left (`granted`, `pending`), or
 * undefined when the webhook moved on meanwhile (a new URL, released). A secret that does not unseal is recorded
 * as the reason, like any other.
 */
export async function askConsent(
  deps: ConsentDeps,
  subject: ConsentSubject,
): Promise<{ state: ConsentState | undefined; error: string | null }> {
  const sentAt = new Date();
  let judged: ReturnType<typeof judgeConsent>;
  try {
    const headers = await consentRequestHeaders(deps, subject, sentAt);
    const answer = await deps.sender.options(subject.url, headers, [ALLOWED_ORIGIN, ALLOWED_RATE]);
    judged = judgeConsent(answer.outcome, answer.headers, deps.origin);
  } catch (error) {
    judged = { granted: false, error: `the request could not be signed: ${(error as Error).message}` };
  }
  const error = judged.granted ? null : judged.error;
  const state = await recordConsentAnswer(deps.database, {
    webhookId: subject.id,
    url: subject.url,
    sentAt,
    granted: judged.granted,
    error,
    nextAt: nextConsentRequest(subject.attempts + 1, new Date()),
  });
  return { state, error };
}
