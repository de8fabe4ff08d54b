import type { SignatureScheme } from "../../lib/db/schema.ts";
import { buildEventBody } from "../../lib/webhook/outbound/webhook-event-body.ts";
import { signatureHeaders } from "../../lib/webhook/outbound/webhook-signature.ts";

/** `payment-debt.created` for `pd_1` of `acc_1`, event `evt_1`, as the route stage builds the body. */
export const SAMPLE_EVENT_BODY = buildEventBody({
  id: "evt_1",
  type: "payment-debt.created",
  created: "2025-01-01T00:00:00.000Z",
  livemode: true,
  object: "payment-debt",
  resourceId: "pd_1",
  account: "acc_1",
});

/** The headers our signer puts on one attempt of `evt_1` (brand Hooklane, signed now unless told otherwise). */
export function sampleDeliveryHeaders(options: {
  scheme: SignatureScheme;
  secrets: string[];
  timestamp?: number;
  attempt?: number;
  brand?: string;
  payload?: string;
}): Record<string, string> {
  return signatureHeaders({
    scheme: options.scheme,
    brand: options.brand ?? "Hooklane",
    eventId: "evt_1",
    attempt: options.attempt ?? 1,
    payload: options.payload ?? SAMPLE_EVENT_BODY,
    secrets: options.secrets,
    timestamp: options.timestamp ?? Math.floor(Date.now() / 1_000),
  }).headers;
}
