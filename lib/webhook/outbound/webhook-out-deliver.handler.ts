import type { ClaimedDispatch } from "../../db/sql/claim-dispatches.ts";
import type { AttemptRecord } from "../../db/sql/record-attempts.ts";
import { TEST_EVENT_TYPE, type SignatureManifest } from "../../db/schema.ts";
import { USER_AGENT } from "../../version.ts";
import { callbackUrlRefusal } from "./webhook-callback-url.ts";
import { openHeaders } from "./webhook-custom-headers.ts";
import { REDACTED } from "./webhook-request-headers.ts";
import type { DeliveryOutcome } from "./webhook-delivery-outcome.ts";
import type { HttpSender } from "./webhook-http-sender.ts";
import { decideRetry } from "./webhook-retry-policy.ts";
import type { SecretSealer } from "./webhook-secret-seal.ts";
import { endSpan, SpanKind, traceIdOf, type Tracing } from "../../observability/tracing.ts";
import { generateWebhookSecret, signatureHeaders } from "./webhook-signature.ts";
import type { SigningKeyStore } from "./webhook-signing-keys.ts";

/** What signing an attempt needs. */
export interface SigningDeps {
  brand: string;
  secrets: SecretSealer;
  /** The accounts' ed25519 keys, for webhooks that also sign `v1a`. */
  signingKeys?: SigningKeyStore | undefined;
}

/** What deciding an attempt's consequence needs. */
export interface RetryDeps {
  retrySchedule: readonly number[];
  random?: () => number;
}

export interface DeliverDeps extends SigningDeps, RetryDeps {
  allowedHosts: readonly string[];
  /** `RUNTIME_OUTBOUND_ENABLED`: when false nothing is sent and every attempt is recorded as blocked. */
  outboundEnabled: boolean;
  sender: HttpSender;
  /** With tracing on: each attempt is a span in its event's trace, and its POST carries that span's `traceparent`. */
  tracing?: Tracing | undefined;
}

/** An attempt's record plus what it means for the webhook. */
export interface AttemptResult extends AttemptRecord {
  account: string | null;
  eventId: string;
  /** Its webhook orders events per resource: once it finishes, the next event of its resource may go. */
  ordered?: boolean;
  /** The subscriber answered 410 Gone: disable the webhook. */
  gone: boolean;
  /** With tracing on: the trace the attempt's span belongs to, for its log line. */
  traceId?: string;
}

/** One attempt, signed: the headers of each POST it makes (two for a `duplicate` test event), in order. */
export interface SignedAttempt {
  requests: Array<Record<string, string>>;
  manifest: SignatureManifest;
  /** The webhook's secret header values the requests carry: redacted from what the subscriber answers. */
  secretHeaders: string[];
}

/** The dispatch an attempt was made for, as far as its result is concerned. */
export type AttemptSubject = Pick<
  ClaimedDispatch,
  "id" | "webhookId" | "account" | "eventId" | "eventType" | "testMode" | "attempt" | "probe" | "ordered"
>;

/** A `late` test event's timestamp is this far in the past: twice the 300 s receivers are told to accept. */
export const LATE_TEST_EVENT_SECONDS = 600;

/**
 * The `webhook-out-deliver` consumer for one leased dispatch: signs the stored
 * body with the webhook's current secret (and the previous one during a
 * rotation), POSTs it once, and decides success, retry or exhaustion from
 * RETRY. The URL is checked again first (a refused URL, or outbound calls
 * switched off, is a `blocked` attempt that follows the schedule like any
 * failure). Never throws for a subscriber's failure; throws when the attempt
 * cannot be made at all (a secret that does not unseal): see attemptClaimed.
 */
export async function attemptDispatch(deps: DeliverDeps, dispatch: ClaimedDispatch): Promise<AttemptResult> {
  const startedAt = new Date();
  const span = deps.tracing?.start(`attempt ${dispatch.eventType}`, dispatch.traceparent, {
    kind: SpanKind.CLIENT,
    attributes: {
      "hooklane.webhook.id": dispatch.webhookId,
      "hooklane.event.type": dispatch.eventType,
      "hooklane.event.id": dispatch.eventId,
      "hooklane.dispatch.id": dispatch.id,
      "hooklane.attempt": dispatch.attempt,
    },
  });
  try {
    const signed = await signAttempt(deps, dispatch, startedAt);
    // The subscriber's own tracing continues from this attempt (never signed: it only links traces).
    const requests = span
      ? signed.requests.map((headers) => ({ ...headers, traceparent: deps.tracing!.traceparentOf(span) }))
      : signed.requests;
    const outcome = deps.outboundEnabled
      ? withoutSecrets(await send(deps, dispatch, requests), signed.secretHeaders)
      : blocked("outbound calls are switched off (RUNTIME_OUTBOUND_ENABLED=false)");
    const result = attemptResult(deps, dispatch, {
      startedAt,
      durationMs: Date.now() - startedAt.getTime(),
      outcome,
      signature: signed.manifest,
    });
    if (!span) return result;
    span.setAttribute("hooklane.outcome", result.outcome);
    if (result.statusCode !== null) span.setAttribute("http.response.status_code", result.statusCode);
    endSpan(span, result.errorClass);
    return { ...result, traceId: traceIdOf(span) };
  } catch (error) {
    if (span) endSpan(span, "internal");
    throw error;
  }
}

/**
 * Signs one attempt as every transport sends it: the stored body, the
 * webhook's scheme, its current secret and, during a rotation, the previous
 * one; Content-Type, User-Agent, event id and attempt headers. A test event's
 * mode changes only this: `late` backdates the timestamp, `bad-signature`
 * signs with a throwaway secret, `duplicate` asks for the same request twice;
 * the manifest names the mode. The webhook's own headers go on every request.
 * Throws when a secret (or a secret header) does not unseal.
 */
export async function signAttempt(deps: SigningDeps, dispatch: ClaimedDispatch, at: Date): Promise<SignedAttempt> {
  const mode = dispatch.testMode;
  const now = Math.floor(at.getTime() / 1_000);
  const signed = signatureHeaders({
    scheme: dispatch.scheme,
    brand: deps.brand,
    eventId: dispatch.eventId,
    attempt: dispatch.attempt,
    payload: dispatch.payload,
    secrets: mode === "bad-signature" ? [generateWebhookSecret()] : await webhookSecrets(deps, dispatch, at),
    timestamp: mode === "late" ? now - LATE_TEST_EVENT_SECONDS : now,
    ed25519:
      dispatch.asymmetric && dispatch.scheme === "standard-webhooks" && mode !== "bad-signature"
        ? await signingKeysOf(deps).signer(dispatch.owner ?? null, at)
        : undefined,
  });
  // The webhook's own headers first: none of them may be one of these (customHeadersRefusal).
  const own = await openHeaders(dispatch.headers, deps.secrets, deps.brand);
  const headers = {
    ...own.headers,
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    ...signed.headers,
  };
  return {
    requests: mode === "duplicate" ? [headers, headers] : [headers],
    manifest: mode ? { ...signed.manifest, mode } : signed.manifest,
    secretHeaders: own.secrets,
  };
}

function signingKeysOf(deps: SigningDeps): SigningKeyStore {
  if (!deps.signingKeys) throw new Error("a webhook signs with ed25519 but this process has no signing keys");
  return deps.signingKeys;
}

/** The active secret, then the previous one while its rotation's grace period lasts. */
async function webhookSecrets(deps: SigningDeps, dispatch: ClaimedDispatch, at: Date): Promise<string[]> {
  const secrets = [await deps.secrets.unseal(dispatch.secretSealed)];
  if (dispatch.previousSecretSealed && dispatch.previousSecretExpiresAt && dispatch.previousSecretExpiresAt > at) {
    secrets.push(await deps.secrets.unseal(dispatch.previousSecretSealed));
  }
  return secrets;
}

/**
 * What an attempt's outcome makes of its dispatch: success, or the retry or
 * exhaustion RETRY decides (never sooner than the subscriber's Retry-After).
 * A test event is marked so that it counts toward nothing but its own
 * ledger, and never disables its webhook with a 410; one sent in a test
 * mode is meant to be rejected, so it is not retried.
 */
export function attemptResult(
  deps: RetryDeps,
  dispatch: AttemptSubject,
  made: { startedAt: Date; durationMs: number; outcome: DeliveryOutcome; signature: SignatureManifest },
): AttemptResult {
  const { outcome } = made;
  const test = dispatch.eventType === TEST_EVENT_TYPE;
  const base = {
    dispatchId: dispatch.id,
    probe: dispatch.probe,
    ...(dispatch.ordered ? { ordered: true } : {}),
    webhookId: dispatch.webhookId,
    account: dispatch.account,
    eventId: dispatch.eventId,
    attempt: dispatch.attempt,
    startedAt: made.startedAt,
    durationMs: made.durationMs,
    statusCode: outcome.statusCode,
    responseExcerpt: outcome.responseExcerpt,
    signature: made.signature,
    test,
  };
  if (outcome.kind === "success") {
    return {
      ...base,
      status: "success",
      retryInMs: null,
      outcome: "success",
      errorClass: null,
      errorMessage: null,
      gone: false,
    };
  }
  const decision = decideRetry({
    attempt: dispatch.attempt,
    schedule: test && dispatch.testMode !== null ? [] : deps.retrySchedule,
    retryAfterMs: outcome.retryAfterMs,
    ...(deps.random ? { random: deps.random } : {}),
  });
  return {
    ...base,
    status: decision.kind === "retry" ? "error" : "exhausted",
    retryInMs: decision.kind === "retry" ? decision.delayMs : null,
    outcome: outcome.errorClass === "blocked" ? "blocked" : decision.kind === "retry" ? "retry" : "failed",
    errorClass: outcome.errorClass,
    errorMessage: outcome.message.slice(0, 500),
    gone: outcome.gone && !test,
  };
}

/**
 * POSTs `payload` once per signed request, in order, to `url`: the attempt's
 * outcome is the first failure, or the last answer when every one succeeded.
 * Never throws (see HttpSender).
 */
export async function postSigned(
  sender: HttpSender,
  url: string,
  requests: SignedAttempt["requests"],
  payload: string,
): Promise<DeliveryOutcome> {
  let outcome: DeliveryOutcome | undefined;
  for (const headers of requests) {
    outcome = await sender.post(url, headers, payload);
    if (outcome.kind === "failure") break;
  }
  return outcome!;
}

/** Checks the URL again (the rules may have changed since it was stored) and POSTs the stored body. */
async function send(
  deps: DeliverDeps,
  dispatch: ClaimedDispatch,
  requests: SignedAttempt["requests"],
): Promise<DeliveryOutcome> {
  const refusal = callbackUrlRefusal(dispatch.url, { allowedHosts: deps.allowedHosts });
  if (refusal !== null) return blocked(refusal);
  return postSigned(deps.sender, dispatch.url, requests, dispatch.payload);
}

/** An outcome as the ledger may keep it: a secret header's value the subscriber echoed back, redacted. */
function withoutSecrets(outcome: DeliveryOutcome, secrets: readonly string[]): DeliveryOutcome {
  if (secrets.length === 0) return outcome;
  const redact = (text: string) => secrets.reduce((out, secret) => out.replaceAll(secret, REDACTED), text);
  return {
    ...outcome,
    responseExcerpt: outcome.responseExcerpt === null ? null : redact(outcome.responseExcerpt),
    ...("message" in outcome ? { message: redact(outcome.message) } : {}),
  } as DeliveryOutcome;
}

function blocked(message: string): DeliveryOutcome {
  return { kind: "failure", errorClass: "blocked", message, statusCode: null, responseExcerpt: null, gone: false };
}
