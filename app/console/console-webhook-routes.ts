import type { Context, Hono } from "hono";
import { z } from "zod";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import { textProblem } from "../../lib/api/input-text.ts";
import { ApiError } from "../../lib/api/problem.ts";
import { CONSENT_MIN_INTERVAL_S } from "../../lib/db/sql/endpoint-consent.ts";
import { judgeFilter } from "../routes/v3/webhook-filter-preview.ts";
import type { ApiAnswer, ConsoleTools, Page } from "./console-tools.ts";
import {
  deletePage,
  secretPage,
  webhookFormPage,
  type FilterPreviewResult,
  type WebhookFormValues,
} from "./console-webhook-edit-pages.ts";
import type { HealthHistories } from "./health-chart.ts";
import { handOverSecret, takeSecret } from "./secret-handover.ts";
import {
  ROTATION_GRACES,
  webhookPage,
  webhooksPage,
  type EventType,
  type LogFilters,
  type Webhook,
} from "./console-webhook-pages.ts";

const PAGE_SIZE = 25;
const LOG_PAGE_SIZE = 50;

const webhookForm = z.object({
  url: z.string().trim().min(1),
  description: z.string().trim().default(""),
  events: z.union([z.string(), z.array(z.string())]).transform((e) => (Array.isArray(e) ? e : [e])),
  // Empty or blank: no filter; absent (a form from before filters): left as it is. Sent as typed otherwise, so a
  // refusal's position is where the user typed it.
  filter: z
    .string()
    .optional()
    .transform((f) => (f === undefined ? undefined : f.trim() === "" ? null : f)),
  scheme: z.enum(["hooklane-v1", "standard-webhooks"]).optional(),
  // A checkbox: sent only when ticked. Absent is false, so a form from before the box unticks it too.
  asymmetricSignature: z
    .unknown()
    .optional()
    .transform((ticked) => ticked !== undefined),
});

// One of the offered graces, exactly: a blank or odd value must not become 0, which stops the old secret at once.
// Absent (a page from before the choice): the API's default.
const rotateForm = z.object({
  grace: z
    .enum(ROTATION_GRACES.map(([seconds]) => String(seconds)))
    .transform(Number)
    .optional(),
});

/** What a form sent, whatever it was: shown again when it is refused, so nothing typed or ticked is lost. */
function sentValues(body: Record<string, unknown>): WebhookFormValues {
  const text = (value: unknown) => (typeof value === "string" ? value : "");
  const events = ([] as unknown[]).concat(body.events ?? []).filter((e): e is string => typeof e === "string");
  return {
    url: text(body.url),
    description: text(body.description),
    events,
    filter: text(body.filter),
    scheme: text(body.scheme),
    asymmetricSignature: body.asymmetricSignature !== undefined,
  };
}

/**
 * What the typed filter would have matched of the recent events of the events
 * ticked, checked as saving would check it (its events, the webhook's
 * audience). Judged on the webhook's own account's events, every account's
 * for a global webhook: POST /v3/webhooks/filter-preview judges the caller's
 * account, which is not the webhook's when support opens another account's.
 * `webhook` was read through the API as the caller, so it is one they may see.
 */
async function previewOf(
  c: Context<HooklaneEnv>,
  webhook: Webhook,
  sent: WebhookFormValues,
): Promise<FilterPreviewResult> {
  if (sent.filter.trim() === "") return { none: true };
  if (sent.events.length === 0) return { refused: "Choose at least one event to preview the filter on." };
  // What the API's own input check refuses before any query (a NUL is an error to PostgreSQL, not a mismatch).
  for (const [index, event] of sent.events.entries()) {
    const problem = textProblem(event, false);
    if (problem) return { refused: `events[${index}]: ${problem}` };
  }
  try {
    return await judgeFilter(c.get("hooklane").database, {
      account: webhook.account,
      events: sent.events,
      filter: sent.filter,
    });
  } catch (error) {
    if (error instanceof ApiError && error.status === 422) return { refused: error.detail ?? error.message };
    throw error;
  }
}

// `datetime-local` gives minutes (or seconds) without a zone; the console labels it UTC.
const LOCAL_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/;
const utc = (value: string | undefined) =>
  value && LOCAL_TIME.test(value) ? new Date(`${value}Z`).toISOString() : undefined;

/** The log filters as the API's query: a search for `evt_…` is an event id, anything else a resource id. */
function logQuery(filters: LogFilters, cursor: string | undefined): URLSearchParams {
  const query = new URLSearchParams({ limit: String(LOG_PAGE_SIZE) });
  const set = (key: string, value: string | undefined) => value && query.set(key, value);
  set("status", filters.status);
  set("eventType", filters.eventType);
  set("since", utc(filters.since));
  set("until", utc(filters.until));
  if (filters.q) set(filters.q.startsWith("evt_") ? "eventId" : "resourceId", filters.q);
  set("cursor", cursor);
  return query;
}

const back = (base: string, id: string, notice: string) =>
  `${base}/webhooks/${id}?notice=${encodeURIComponent(notice)}`;

/** The notice after asking the endpoint for its consent: where its answer left the webhook. */
function consentAnswer(hook: Webhook): string {
  if (hook.consent?.state === "granted") return "The endpoint consented: events held for it are on their way.";
  if (hook.consent?.state === "pending") {
    const why = (hook.consent.lastError ?? "the endpoint did not consent").replace(/\.+$/, "");
    return `Still no consent: ${why}. Events stay held.`;
  }
  return "Consent is no longer asked of this endpoint: deliveries go to it as usual.";
}

/**
 * Why no consent request was sent, when it is the webhook's own doing: one went moments ago (its 429, not the API's
 * rate limit), or its consent is not pending (409). Undefined for any other answer.
 */
function consentRefusal(answer: ApiAnswer): string | undefined {
  if (answer.status === 409) return answer.body?.detail ?? "The endpoint's consent is not pending.";
  if (answer.status !== 429 || answer.body?.quota !== "consent-requests") return undefined;
  const seconds = Number(answer.headers.get("retry-after")) || CONSENT_MIN_INTERVAL_S;
  return `The endpoint was asked less than ${CONSENT_MIN_INTERVAL_S} s ago: try again in ${seconds} s.`;
}

/**
 * The webhooks: list with health, create, edit, pause and resume, rotate (and end a rotation's overlap), ask the
 * endpoint for its consent again, test, delete, and one webhook's page.
 */
export function addWebhookConsoleRoutes(app: Hono<HooklaneEnv>, prefix: string, tools: ConsoleTools): void {
  const { call, context, signIn, refused, badForm } = tools;
  const idOf = (c: Context<HooklaneEnv>) => encodeURIComponent(c.req.param("id") ?? "");
  /** Runs `then` with a successful answer; the sign-in page or the API's refusal otherwise. */
  const answered = (c: Context<HooklaneEnv>, answer: ApiAnswer | undefined, then: (body: any) => Page): Page =>
    !answer ? signIn(c) : !answer.ok ? refused(c, answer) : then(answer.body);

  async function eventTypes(c: Context<HooklaneEnv>): Promise<EventType[]> {
    const list = await call(c, "GET", "/v3/webhook-event-types?limit=100");
    return list?.ok ? list.body.data : [];
  }

  /** The 24-hour and 7-day histories (`filter`: `&webhook=<id>` for one webhook, empty for the account). */
  async function healthHistories(c: Context<HooklaneEnv>, filter: string): Promise<HealthHistories> {
    const [day, week] = await Promise.all(
      ["24h", "7d"].map((window) => call(c, "GET", `/v3/health-history?window=${window}${filter}`)),
    );
    return { day: day?.ok ? day.body : undefined, week: week?.ok ? week.body : undefined };
  }

  app.get(prefix, async (c) => {
    const cursor = c.req.query("cursor");
    const query = new URLSearchParams({ limit: String(PAGE_SIZE), ...(cursor ? { cursor } : {}) });
    const list = await call(c, "GET", `/v3/webhooks?${query}`);
    if (!list) return signIn(c);
    if (!list.ok) return refused(c, list);
    const [webhooks, histories] = await Promise.all([
      Promise.all(
        list.body.data.map(async (webhook: { id: string }) => {
          const health = await call(c, "GET", `/v3/webhooks/${webhook.id}/health`);
          return { webhook, health: health?.ok ? health.body : undefined };
        }),
      ),
      healthHistories(c, ""),
    ]);
    return c.html(
      webhooksPage({
        webhooks,
        histories,
        nextCursor: list.body.nextCursor,
        cursor,
        notice: c.req.query("notice"),
        context: context(c),
      }),
    );
  });

  app.get(`${prefix}/webhooks/new`, async (c) => {
    const types = await call(c, "GET", "/v3/webhook-event-types?limit=100");
    return answered(c, types, (body) => c.html(webhookFormPage({ eventTypes: body.data, context: context(c) })));
  });

  /** The form again, as it was sent, with why it was refused (422). */
  const refusedForm = async (c: Context<HooklaneEnv>, sent: WebhookFormValues, error: string, webhook?: Webhook) =>
    c.html(
      webhookFormPage({
        ...(webhook ? { webhook } : {}),
        values: sent,
        eventTypes: await eventTypes(c),
        error,
        context: context(c),
      }),
      422,
    );

  /** After a create or a rotation: the secret waits for its page, and the browser is sent there (Post/Redirect/Get). */
  const toSecretPage = async (c: Context<HooklaneEnv>, body: { id: string; secret: string }, rotated: boolean) => {
    const token = await handOverSecret(c.get("hooklane"), { webhookId: body.id, secret: body.secret, rotated });
    return c.redirect(`${context(c).base}/webhooks/${encodeURIComponent(body.id)}/secret/${token}`, 303);
  };

  app.post(`${prefix}/webhooks`, async (c) => {
    const body = await c.req.parseBody({ all: true });
    const form = webhookForm.safeParse(body);
    if (!form.success) return refusedForm(c, sentValues(body), "Give an endpoint URL and choose at least one event.");
    const created = await call(c, "POST", "/v3/webhooks", form.data);
    if (created?.status === 422) return refusedForm(c, sentValues(body), created.body.detail);
    return answered(c, created, (hook) => toSecretPage(c, hook, false));
  });

  app.get(`${prefix}/webhooks/:id/secret/:token`, async (c) => {
    const hook = await call(c, "GET", `/v3/webhooks/${idOf(c)}`);
    if (!hook?.ok) return answered(c, hook, () => c.body(null));
    const taken = await takeSecret(c.get("hooklane"), c.req.param("token"), hook.body.id);
    c.header("Cache-Control", "no-store");
    const page = secretPage({
      webhook: hook.body,
      secret: taken?.secret,
      rotated: taken?.rotated ?? false,
      context: context(c),
    });
    return c.html(page, taken ? 200 : 410);
  });

  app.get(`${prefix}/webhooks/:id/edit`, async (c) => {
    const hook = await call(c, "GET", `/v3/webhooks/${idOf(c)}`);
    if (!hook?.ok) return answered(c, hook, () => c.body(null));
    return c.html(webhookFormPage({ webhook: hook.body, eventTypes: await eventTypes(c), context: context(c) }));
  });

  app.post(`${prefix}/webhooks/:id/edit`, async (c) => {
    const body = await c.req.parseBody({ all: true });
    // Refused: the form again over the webhook as it is, read only then.
    const refused = async (error: string) => {
      const hook = await call(c, "GET", `/v3/webhooks/${idOf(c)}`);
      return answered(c, hook, (current) => refusedForm(c, sentValues(body), error, current));
    };
    const form = webhookForm.safeParse(body);
    if (!form.success) return refused("Give an endpoint URL and choose at least one event.");
    const updated = await call(c, "PATCH", `/v3/webhooks/${idOf(c)}`, form.data);
    if (updated?.status === 422) return refused(updated.body.detail);
    return answered(c, updated, (saved) => c.redirect(back(context(c).base, saved.id, "Changes saved."), 303));
  });

  // The edit form's Preview button: the form again as it was typed, with what its filter would have matched.
  app.post(`${prefix}/webhooks/:id/edit/preview`, async (c) => {
    const body = await c.req.parseBody({ all: true });
    const hook = await call(c, "GET", `/v3/webhooks/${idOf(c)}`);
    return answered(c, hook, async (current: Webhook) => {
      const sent = sentValues(body);
      const preview = await previewOf(c, current, sent);
      const page = webhookFormPage({
        webhook: current,
        values: sent,
        eventTypes: await eventTypes(c),
        preview,
        context: context(c),
      });
      return c.html(page, "refused" in preview ? 422 : 200);
    });
  });

  for (const [action, status, notice] of [
    ["pause", "paused", "Deliveries paused: new events are kept until you resume."],
    ["resume", "active", "Deliveries resumed: events kept while paused are on their way."],
  ] as const) {
    app.post(`${prefix}/webhooks/:id/${action}`, async (c) => {
      const updated = await call(c, "PATCH", `/v3/webhooks/${idOf(c)}`, { status });
      return answered(c, updated, (body) => c.redirect(back(context(c).base, body.id, notice), 303));
    });
  }

  app.post(`${prefix}/webhooks/:id/rotate-secret`, async (c) => {
    const form = rotateForm.safeParse(await c.req.parseBody());
    if (!form.success) return badForm(c, "Choose one of the offered grace periods.");
    const rotated = await call(c, "POST", `/v3/webhooks/${idOf(c)}/rotate-secret`, form.data);
    return answered(c, rotated, (hook) => toSecretPage(c, hook, true));
  });

  app.post(`${prefix}/webhooks/:id/expire-previous-secret`, async (c) => {
    const expired = await call(c, "POST", `/v3/webhooks/${idOf(c)}/expire-previous-secret`);
    const notice = "The previous secret no longer signs: deliveries carry only the current secret's signature.";
    return answered(c, expired, (hook) => c.redirect(back(context(c).base, hook.id, notice), 303));
  });

  // What POST /v3/webhooks/:id/request-consent does, as the caller: the request goes now, and the page says what
  // the endpoint answered. Asked too soon, or not pending any more: the page again, saying so.
  app.post(`${prefix}/webhooks/:id/request-consent`, async (c) => {
    const asked = await call(c, "POST", `/v3/webhooks/${idOf(c)}/request-consent`);
    const refusal = asked && consentRefusal(asked);
    if (refusal) return c.redirect(back(context(c).base, idOf(c), refusal), 303);
    return answered(c, asked, (hook: Webhook) => c.redirect(back(context(c).base, hook.id, consentAnswer(hook)), 303));
  });

  app.post(`${prefix}/webhooks/:id/test`, async (c) => {
    const sent = await call(c, "POST", `/v3/webhooks/${idOf(c)}/test`);
    return answered(c, sent, (body) =>
      c.redirect(`${context(c).base}/dispatches/${body.id}?notice=${encodeURIComponent("Test event queued.")}`, 303),
    );
  });

  app.get(`${prefix}/webhooks/:id/delete`, async (c) => {
    const hook = await call(c, "GET", `/v3/webhooks/${idOf(c)}`);
    return answered(c, hook, (body) => c.html(deletePage({ webhook: body, context: context(c) })));
  });

  app.post(`${prefix}/webhooks/:id/delete`, async (c) => {
    const deleted = await call(c, "DELETE", `/v3/webhooks/${idOf(c)}`);
    return answered(c, deleted, () =>
      c.redirect(`${context(c).base}?notice=${encodeURIComponent(`Webhook ${c.req.param("id")} deleted.`)}`, 303),
    );
  });

  app.get(`${prefix}/webhooks/:id`, async (c) => {
    const id = idOf(c);
    const { status, eventType, since, until, q, cursor, notice } = c.req.query();
    const filters: LogFilters = { status, eventType, since, until, q };
    const [hook, health, log, histories, recoveries] = await Promise.all([
      call(c, "GET", `/v3/webhooks/${id}`),
      call(c, "GET", `/v3/webhooks/${id}/health`),
      call(c, "GET", `/v3/webhooks/${id}/dispatches?${logQuery(filters, cursor)}`),
      healthHistories(c, `&webhook=${id}`),
      call(c, "GET", `/v3/webhooks/${id}/recoveries?limit=5`),
    ]);
    if (!hook?.ok) return answered(c, hook, () => c.body(null));
    if (!log) return signIn(c);
    if (!log.ok) return refused(c, log);
    const types = hook.body.events.includes("*") ? (await eventTypes(c)).map((t) => t.id) : hook.body.events;
    return c.html(
      webhookPage({
        webhook: hook.body,
        health: health?.ok ? health.body : undefined,
        histories,
        recoveries: recoveries?.ok ? recoveries.body.data : [],
        dispatches: log.body.data,
        nextCursor: log.body.nextCursor,
        cursor,
        filters,
        eventTypes: [...types, "webhook.test"],
        consentOrigin: c.get("hooklane").config.consent.origin,
        notice,
        context: context(c),
      }),
    );
  });
}
