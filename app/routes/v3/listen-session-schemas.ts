import { z } from "zod";
import { SIGNATURE_SCHEMES, type Webhook } from "../../../lib/db/schema.ts";
import { listenReportSchema } from "../../../lib/webhook/listen/listen-messages.ts";
import { iso, timestamp } from "../../../lib/api/timestamps.ts";

export const listenSessionIdParams = z.strictObject({
  id: z.string().max(100).describe("The session's id: its ephemeral webhook's (`wh_…`)."),
});

export const createListenSessionBody = z.strictObject({
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
  scheme: z.enum(SIGNATURE_SCHEMES).default("hooklane-v1"),
});

export const listenSessionSchema = z
  .strictObject({
    id: z.string(),
    object: z.literal("listen-session"),
    forwardTo: z.string(),
    events: z.array(z.string()),
    scheme: z.enum(SIGNATURE_SCHEMES),
    expires: timestamp.describe("Renewed while the CLI's stream is open; the session is deleted once it passes."),
    created: timestamp,
  })
  .meta({ id: "ListenSession" });

export const listenSessionWithSecretSchema = listenSessionSchema
  .extend({ secret: z.string().describe("`whsec_…`: signs every delivery of the session; shown this once.") })
  .meta({ id: "ListenSessionWithSecret" });

export const listenReportsBody = z.strictObject({
  results: z.array(listenReportSchema).max(100).describe("One per delivery pushed on the stream."),
});

export const listenReportsAnswer = z
  .object({
    recorded: z.array(z.string()).describe("Dispatches whose attempt was recorded."),
    stale: z.array(z.string()).describe("Reports ignored: the attempt was recorded already or its lease is gone."),
  })
  .meta({ id: "ListenReportsRecorded" });

/** The public shape of a listen session. */
export function presentListenSession(row: Webhook): z.output<typeof listenSessionSchema> {
  return {
    id: row.id,
    object: "listen-session",
    forwardTo: row.url,
    events: row.events,
    scheme: row.scheme,
    expires: iso(row.expiresAt ?? row.createdAt),
    created: iso(row.createdAt),
  };
}
