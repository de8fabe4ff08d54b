import {
  customHeadersInput,
  customHeadersOutput,
  presentHeaders,
} from "../../../lib/webhook/outbound/webhook-custom-headers.ts";
import { z } from "zod";
import { SIGNATURE_SCHEMES, type Webhook } from "../../../lib/db/schema.ts";
import { listenReportSchema } from "../../../lib/webhook/listen/listen-messages.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";

export const listenSessionIdParams = z.strictObject({
  id: z.string().max(100).describe("The session's id: its ephemeral webhook's (`wh_…`)."),
});

export const createListenSessionBody = z
  .strictObject({
    forwardTo: z
      .url({ protocol: /^https?$/ })
      .max(2_048)
      .describe("Where the CLI POSTs each delivery; only the CLI calls it, so any local address will do."),
    events: z
      .array(z.string().min(1))
      .min(1)
      .max(200)
      .default(["*"])
      .describe('Event types, or `["*"]` for all (the default).'),
    scheme: z
      .enum(SIGNATURE_SCHEMES)
      .default("hooklane-v1")
      .describe("How deliveries are signed, as for a webhook: `hooklane-v1` (the default) or `standard-webhooks`."),
    headers: customHeadersInput.default({}).describe(`${customHeadersInput.description} The CLI sends them on.`),
  })
  .meta({ examples: [{ forwardTo: "http://localhost:3000/webhooks", events: ["payment-debt.created"] }] });

const SESSION_EXAMPLE = {
  id: "wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b",
  object: "listen-session" as const,
  forwardTo: "http://localhost:3000/webhooks",
  events: ["payment-debt.created"],
  scheme: "hooklane-v1" as const,
  headers: {},
  expires: "2026-03-01T12:10:00.000Z",
  created: "2026-03-01T12:00:00.000Z",
};

export const listenSessionSchema = z
  .strictObject({
    id: z.string(),
    object: z.literal("listen-session"),
    forwardTo: z.string().describe("Where the CLI POSTs each delivery."),
    events: z.array(z.string()).describe("Event types heard, or `*` for all."),
    scheme: z
      .enum(SIGNATURE_SCHEMES)
      .describe("How deliveries are signed, as for a webhook: `hooklane-v1` or `standard-webhooks`."),
    headers: customHeadersOutput,
    expires: timestamp.describe("Renewed while the CLI's stream is open; the session is deleted once it passes."),
    created: timestamp,
  })
  .meta({ id: "ListenSession", examples: [SESSION_EXAMPLE] });

export const listenSessionWithSecretSchema = listenSessionSchema
  .extend({ secret: z.string().describe("`whsec_…`: signs every delivery of the session; shown this once.") })
  .meta({
    id: "ListenSessionWithSecret",
    examples: [{ ...SESSION_EXAMPLE, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw7Z4lJVKq6n8=" }],
  });

export const listenReportsBody = z
  .strictObject({
    results: z.array(listenReportSchema).max(100).describe("One per delivery pushed on the stream."),
  })
  .meta({
    examples: [
      {
        results: [
          {
            dispatch: "wd_0eb182b450ec4854a68dfddfc2a71776",
            lease: "listen/wh_3e8a1f0c9b2d4e7f8a6c5b4d3e2f1a0b/5f1c2a9e",
            attempt: 1,
            signature: { timestamp: 1772366400, scheme: "hooklane-v1", signatures: 1 },
            started: "2026-03-01T12:00:01.000Z",
            durationMs: 12,
            outcome: { kind: "success", statusCode: 200, responseExcerpt: "ok" },
          },
        ],
      },
    ],
  });

export const listenReportsAnswer = z
  .object({
    object: z.literal("listen-results"),
    recorded: z.array(z.string()).describe("Dispatches whose attempt was recorded."),
    stale: z.array(z.string()).describe("Reports ignored: the attempt was recorded already or its lease is gone."),
  })
  .meta({
    id: "ListenReportsRecorded",
    examples: [{ object: "listen-results", recorded: ["wd_0eb182b450ec4854a68dfddfc2a71776"], stale: [] }],
  });

/** The public shape of a listen session. */
export function presentListenSession(row: Webhook): z.output<typeof listenSessionSchema> {
  return {
    id: row.id,
    object: "listen-session",
    forwardTo: row.url,
    events: row.events,
    scheme: row.scheme,
    headers: presentHeaders(row.headers),
    expires: iso(row.expiresAt ?? row.createdAt),
    created: iso(row.createdAt),
  };
}
