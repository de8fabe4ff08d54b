import { z } from "zod";
import { ApiError } from "../../../lib/api/problem.ts";
import { CallbackUrlError, validateCallbackUrl } from "../../../lib/webhook/outbound/webhook-callback-url.ts";
import { SIGNATURE_SCHEMES, WEBHOOK_STATUSES, type Webhook } from "../../../lib/db/schema.ts";

/** Timestamps travel as ISO-8601 UTC strings. */
export const timestamp = z.iso.datetime({ offset: true });

export const webhookIdParams = z.object({ id: z.string().max(100).describe("The webhook's id (`wh_…`).") });

export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(50).describe("Page size."),
  cursor: z.string().max(100).optional().describe("`nextCursor` of the previous page."),
};

export const webhookSchema = z
  .object({
    id: z.string(),
    object: z.literal("webhook"),
    url: z.string(),
    events: z.array(z.string()).describe("Event types heard, or `*` for all."),
    status: z.enum(WEBHOOK_STATUSES).describe("`disabled` is set by the system (410 Gone, or failing for days)."),
    scheme: z.enum(SIGNATURE_SCHEMES),
    description: z.string(),
    scope: z.enum(["account", "global"]),
    account: z.string().nullable(),
    disabledReason: z.string().nullable(),
    statusChanged: timestamp,
    previousSecretExpires: timestamp.nullable().describe("While a rotation's previous secret still signs."),
    created: timestamp,
    updated: timestamp,
  })
  .meta({ id: "Webhook" });

export const webhookWithSecretSchema = webhookSchema
  .extend({ secret: z.string().describe("`whsec_…`: shown this once; only its encrypted form is kept.") })
  .meta({ id: "WebhookWithSecret" });

const url = z.string().min(1).max(2_048).describe("https: (plain http: only for allowlisted hosts).");
const events = z.array(z.string().min(1)).min(1).max(200).describe('Event types, or `["*"]` for all.');
const description = z.string().max(500);

export const createWebhookBody = z.object({
  url,
  events,
  description: description.default(""),
  scheme: z.enum(SIGNATURE_SCHEMES).default("hooklane-v1"),
  scope: z
    .enum(["account", "global"])
    .default("account")
    .describe("`global` hears every account's events; admins only."),
});

export const updateWebhookBody = z
  .object({
    url,
    events,
    description,
    scheme: z.enum(SIGNATURE_SCHEMES),
    status: z
      .enum(["active", "paused"])
      .describe("Pause to hold deliveries (events are kept); `active` resumes or re-enables a disabled webhook."),
  })
  .partial()
  .refine((body) => Object.keys(body).length > 0, "must change at least one field");

/**
 * One page of a newest-first list, from `limit + 1` rows read: the extra row
 * only tells that another page follows, whose cursor is this page's last id.
 */
export function listPage<Row extends { id: string }, Item>(rows: Row[], limit: number, present: (row: Row) => Item) {
  const page = rows.slice(0, limit);
  return {
    object: "list" as const,
    data: page.map(present),
    nextCursor: rows.length > limit ? page.at(-1)!.id : null,
  };
}

/** A `cursor` that names no row the caller may page from. */
export const unknownCursor = () =>
  new ApiError(422, "Unprocessable Content", "cursor: unknown cursor", {
    errors: [{ field: "cursor", message: "unknown cursor" }],
  });

export const listOf = <T extends z.ZodType>(item: T) =>
  z.object({
    object: z.literal("list"),
    data: z.array(item),
    nextCursor: z.string().nullable().describe("Pass as `cursor` for the next page; null on the last."),
  });

/** A nullable timestamp as the API writes it. */
export const isoOrNull = (date: Date | null) => (date ? date.toISOString() : null);

/** The public shape of a webhook: never its secret. */
export function presentWebhook(row: Webhook): z.output<typeof webhookSchema> {
  return {
    id: row.id,
    object: "webhook",
    url: row.url,
    events: row.events,
    status: row.status,
    scheme: row.scheme,
    description: row.description,
    scope: row.account === null ? "global" : "account",
    account: row.account,
    disabledReason: row.disabledReason,
    statusChanged: row.statusChangedAt.toISOString(),
    previousSecretExpires:
      row.previousSecretExpiresAt && row.previousSecretExpiresAt > new Date()
        ? isoOrNull(row.previousSecretExpiresAt)
        : null,
    created: row.createdAt.toISOString(),
    updated: row.updatedAt.toISOString(),
  };
}

/** Checks a callback URL against the policy; a refusal is a 422 naming `url`. */
export function assertCallbackUrl(url: string, allowedHosts: readonly string[]): void {
  try {
    validateCallbackUrl(url, { allowedHosts });
  } catch (error) {
    if (!(error instanceof CallbackUrlError)) throw error;
    throw new ApiError(422, "Unprocessable Content", `url: ${error.message}`, {
      errors: [{ field: "url", message: error.message }],
    });
  }
}
