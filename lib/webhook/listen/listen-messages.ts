import { z } from "zod";
import { SIGNATURE_SCHEMES, TEST_MODES } from "../../db/schema.ts";
import { DELIVERY_ERROR_CLASSES } from "../outbound/webhook-delivery-outcome.ts";

/** What was signed (see SignatureManifest). */
const manifestSchema = z.object({
  timestamp: z.number().int().describe("The timestamp signed, in Unix seconds."),
  scheme: z.enum(SIGNATURE_SCHEMES).describe("The scheme it was signed with: `hooklane-v1` or `standard-webhooks`."),
  signatures: z
    .number()
    .int()
    .min(0)
    .max(2)
    .describe("How many signatures it carried: 2 during a secret rotation (current and previous secret), else 1."),
  mode: z.enum(TEST_MODES).optional().describe("A test event's test mode, when it was sent in one."),
});

/**
 * One attempt pushed to a listen session's CLI (`event: delivery` on its
 * stream): the stored body and the signed headers of each POST to make, in
 * order, exactly as the lane would send them. `lease` names the stream that
 * holds the dispatch; the CLI's report must carry it back.
 */
export const listenDeliverySchema = z.object({
  dispatch: z.string(),
  lease: z.string(),
  attempt: z.number().int(),
  event: z.object({ id: z.string(), type: z.string() }),
  payload: z.string(),
  requests: z.array(z.record(z.string(), z.string())).min(1).max(2),
  signature: manifestSchema,
});
export type ListenDelivery = z.output<typeof listenDeliverySchema>;

const excerpt = z
  .string()
  .max(4_096)
  .nullable()
  .describe("The first bytes of the local receiver's answer; null when there was none.");

/** A DeliveryOutcome as the CLI observed it at the local receiver. */
const outcomeSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("success"),
    statusCode: z.number().int().min(200).max(299).describe("The local receiver's 2xx status."),
    responseExcerpt: excerpt,
  }),
  z.object({
    kind: z.literal("failure"),
    errorClass: z
      .enum(DELIVERY_ERROR_CLASSES)
      .describe("Why it failed, as data, e.g. `http_status`, `redirect`, `timeout`, `connection_refused`."),
    message: z.string().max(2_000).describe("What went wrong, for people; the first 500 characters are recorded."),
    statusCode: z
      .number()
      .int()
      .min(100)
      .max(999)
      .nullable()
      .describe("The local receiver's HTTP status; null when no answer came."),
    responseExcerpt: excerpt,
    retryAfterMs: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe("The receiver's `Retry-After`, in ms from its answer: the retry comes no sooner (24 h at most)."),
    gone: z
      .boolean()
      .describe("The receiver answered `410 Gone`. Recorded as an ordinary failure: it never ends the session."),
  }),
]);

/** What the CLI made of one pushed delivery: the attempt to record. */
export const listenReportSchema = z.object({
  dispatch: z.string().max(100).describe("The delivery's `dispatch`, as pushed on the stream (`wd_…`)."),
  lease: z
    .string()
    .max(200)
    .describe("The delivery's `lease`, as pushed; a report under a lease that no longer holds the dispatch is stale."),
  attempt: z
    .number()
    .int()
    .min(1)
    .max(1_000)
    .describe("The delivery's `attempt`, as pushed; a report for any other attempt is stale."),
  signature: manifestSchema.describe("The delivery's `signature`, as pushed: what was signed, never with what."),
  started: z.iso.datetime({ offset: true }).describe("When the CLI started POSTing it to the local receiver."),
  durationMs: z
    .number()
    .int()
    .min(0)
    .max(86_400_000)
    .describe("How long that took, in ms, until the receiver's answer or the failure."),
  outcome: outcomeSchema.describe(
    "What the local receiver did: `kind` `success` (a 2xx answer) or `failure`; retries follow the published schedule.",
  ),
});
export type ListenReport = z.output<typeof listenReportSchema>;
