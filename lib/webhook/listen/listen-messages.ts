import { z } from "zod";
import { SIGNATURE_SCHEMES, TEST_MODES } from "../../db/schema.ts";
import { DELIVERY_ERROR_CLASSES } from "../outbound/webhook-delivery-outcome.ts";

/** What was signed (see SignatureManifest). */
const manifestSchema = z.object({
  timestamp: z.number().int(),
  scheme: z.enum(SIGNATURE_SCHEMES),
  signatures: z.number().int().min(0).max(2),
  mode: z.enum(TEST_MODES).optional(),
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

const excerpt = z.string().max(4_096).nullable();

/** A DeliveryOutcome as the CLI observed it at the local receiver. */
const outcomeSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("success"), statusCode: z.number().int().min(200).max(299), responseExcerpt: excerpt }),
  z.object({
    kind: z.literal("failure"),
    errorClass: z.enum(DELIVERY_ERROR_CLASSES),
    message: z.string().max(2_000),
    statusCode: z.number().int().min(100).max(999).nullable(),
    responseExcerpt: excerpt,
    retryAfterMs: z.number().int().min(0).optional(),
    gone: z.boolean(),
  }),
]);

/** What the CLI made of one pushed delivery: the attempt to record. */
export const listenReportSchema = z.object({
  dispatch: z.string().max(100),
  lease: z.string().max(200),
  attempt: z.number().int().min(1).max(1_000),
  signature: manifestSchema,
  started: z.iso.datetime({ offset: true }),
  durationMs: z.number().int().min(0).max(86_400_000),
  outcome: outcomeSchema,
});
export type ListenReport = z.output<typeof listenReportSchema>;
