import type { ClaimedDispatch } from "../../db/sql/claim-dispatches.ts";
import type { AttemptRecord } from "../../db/sql/record-attempts.ts";
import { USER_AGENT } from "../../version.ts";
import { CallbackUrlError, validateCallbackUrl } from "./webhook-callback-url.ts";
import type { DeliveryOutcome } from "./webhook-delivery-outcome.ts";
import type { HttpSender } from "./webhook-http-sender.ts";
import { decideRetry, type RetryDecision } from "./webhook-retry-policy.ts";
import type { SecretSealer } from "./webhook-secret-seal.ts";
import { signatureHeaders } from "./webhook-signature.ts";

export interface DeliverDeps {
  brand: string;
  retrySchedule: readonly number[];
  allowedHosts: readonly string[];
  /** `RUNTIME_OUTBOUND_ENABLED`: when false nothing is sent and every attempt is recorded as blocked. */
  outboundEnabled: boolean;
  sender: HttpSender;
  secrets: SecretSealer;
  random?: () => number;
}

/** An attempt's record plus what it means for the webhook. */
export interface AttemptResult extends AttemptRecord {
  account: string | null;
  eventId: string;
  /** The subscriber answered 410 Gone: disable the webhook. */
  gone: boolean;
}

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
  const timestamp = Math.floor(startedAt.getTime() / 1_000);
  const secrets = [await deps.secrets.unseal(dispatch.secretSealed)];
  if (
    dispatch.previousSecretSealed &&
    dispatch.previousSecretExpiresAt &&
    dispatch.previousSecretExpiresAt > startedAt
  ) {
    secrets.push(await deps.secrets.unseal(dispatch.previousSecretSealed));
  }
  const signed = signatureHeaders({
    scheme: dispatch.scheme,
    brand: deps.brand,
    eventId: dispatch.eventId,
    attempt: dispatch.attempt,
    payload: dispatch.payload,
    secrets,
    timestamp,
  });

  const outcome = deps.outboundEnabled
    ? await send(deps, dispatch, signed.headers)
    : blocked("outbound calls are switched off (RUNTIME_OUTBOUND_ENABLED=false)");
  const durationMs = Date.now() - startedAt.getTime();

  const base = {
    dispatchId: dispatch.id,
    probe: dispatch.probe,
    webhookId: dispatch.webhookId,
    account: dispatch.account,
    eventId: dispatch.eventId,
    attempt: dispatch.attempt,
    startedAt,
    durationMs,
    statusCode: outcome.statusCode,
    responseExcerpt: outcome.responseExcerpt,
    signature: signed.manifest,
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
    schedule: deps.retrySchedule,
    retryAfterMs: outcome.retryAfterMs,
    ...(deps.random ? { random: deps.random } : {}),
  });
  return failedAttempt(base, outcome, decision);
}

/** The result of a failed attempt, as RETRY decided. */
export function failedAttempt(
  base: Omit<AttemptResult, "status" | "retryInMs" | "outcome" | "errorClass" | "errorMessage" | "gone">,
  outcome: Extract<DeliveryOutcome, { kind: "failure" }>,
  decision: RetryDecision,
): AttemptResult {
  return {
    ...base,
    status: decision.kind === "retry" ? "error" : "exhausted",
    retryInMs: decision.kind === "retry" ? decision.delayMs : null,
    outcome: outcome.errorClass === "blocked" ? "blocked" : decision.kind === "retry" ? "retry" : "failed",
    errorClass: outcome.errorClass,
    errorMessage: outcome.message.slice(0, 500),
    gone: outcome.gone,
  };
}

/** Checks the URL again (the rules may have changed since it was stored) and POSTs the stored body. */
async function send(
  deps: DeliverDeps,
  dispatch: ClaimedDispatch,
  signed: Record<string, string>,
): Promise<DeliveryOutcome> {
  try {
    validateCallbackUrl(dispatch.url, { allowedHosts: deps.allowedHosts });
  } catch (error) {
    if (!(error instanceof CallbackUrlError)) throw error;
    return blocked(error.message);
  }
  return deps.sender.post(
    dispatch.url,
    { "content-type": "application/json", "user-agent": USER_AGENT, ...signed },
    dispatch.payload,
  );
}

function blocked(message: string): DeliveryOutcome {
  return { kind: "failure", errorClass: "blocked", message, statusCode: null, responseExcerpt: null, gone: false };
}
