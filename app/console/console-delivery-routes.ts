import type { Hono } from "hono";
import { z } from "zod";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import { dispatchPage, eventTypesPage, RECOVERY_WINDOWS_HOURS, recoveryPage } from "./console-delivery-pages.ts";
import { notificationsPage } from "./console-notification-pages.ts";
import type { ConsoleTools } from "./console-tools.ts";

// Only back to a console page, relative to the console's base: never a redirect anywhere else.
const retryForm = z.object({ back: z.string().regex(/^(webhooks|dispatches)\/[A-Za-z0-9_]+$/) });
const recoverForm = z.object({
  hours: z.coerce.number().refine((h) => (RECOVERY_WINDOWS_HOURS as readonly number[]).includes(h)),
});

/** Deliveries: one dispatch with its attempts, retry and resend, bulk recovery and its progress, the event types, what owners were told. */
export function addDeliveryConsoleRoutes(app: Hono<HooklaneEnv>, prefix: string, tools: ConsoleTools): void {
  const { call, context, signIn, refused, badForm } = tools;

  app.get(`${prefix}/dispatches/:id`, async (c) => {
    const dispatch = await call(c, "GET", `/v3/webhook-dispatches/${encodeURIComponent(c.req.param("id"))}`);
    if (!dispatch) return signIn(c);
    if (!dispatch.ok) return refused(c, dispatch);
    return c.html(dispatchPage({ dispatch: dispatch.body, notice: c.req.query("notice"), context: context(c) }));
  });

  app.post(`${prefix}/dispatches/:id/retry`, async (c) => {
    const form = retryForm.safeParse(await c.req.parseBody());
    if (!form.success) return badForm(c, "The form is incomplete.");
    const id = encodeURIComponent(c.req.param("id"));
    const before = await call(c, "GET", `/v3/webhook-dispatches/${id}`);
    if (!before) return signIn(c);
    if (!before.ok) return refused(c, before);
    const retried = await call(c, "POST", `/v3/webhook-dispatches/${id}/retry`);
    if (!retried) return signIn(c);
    if (!retried.ok) return refused(c, retried);
    const what = before.body.status === "success" ? "Resend" : "Retry";
    const notice = `${what} of ${retried.body.event.id} queued as run ${retried.body.run}.`;
    return c.redirect(`${context(c).base}/${form.data.back}?notice=${encodeURIComponent(notice)}`, 303);
  });

  app.post(`${prefix}/webhooks/:id/recover`, async (c) => {
    const form = recoverForm.safeParse(await c.req.parseBody());
    if (!form.success) return badForm(c, "Choose one of the offered windows.");
    const id = encodeURIComponent(c.req.param("id"));
    const since = new Date(Date.now() - form.data.hours * 3_600_000).toISOString();
    const started = await call(c, "POST", `/v3/webhooks/${id}/recover`, { since });
    if (!started) return signIn(c);
    if (!started.ok) return refused(c, started);
    return c.redirect(`${context(c).base}/webhooks/${id}/recoveries/${started.body.id}`, 303);
  });

  app.get(`${prefix}/webhooks/:id/recoveries/:recoveryId`, async (c) => {
    const { id, recoveryId } = c.req.param();
    const webhook = `/v3/webhooks/${encodeURIComponent(id)}`;
    const [recovery, hook, health] = await Promise.all([
      call(c, "GET", `${webhook}/recoveries/${encodeURIComponent(recoveryId)}`),
      call(c, "GET", webhook),
      call(c, "GET", `${webhook}/health`),
    ]);
    if (!recovery) return signIn(c);
    if (!recovery.ok) return refused(c, recovery);
    return c.html(
      recoveryPage({
        recovery: recovery.body,
        webhookStatus: hook?.ok ? hook.body.status : undefined,
        health: health?.ok ? health.body : undefined,
        context: context(c),
      }),
    );
  });

  app.get(`${prefix}/event-types`, async (c) => {
    const types = await call(c, "GET", "/v3/webhook-event-types?limit=100");
    if (!types) return signIn(c);
    if (!types.ok) return refused(c, types);
    return c.html(eventTypesPage({ eventTypes: types.body.data, context: context(c) }));
  });

  app.get(`${prefix}/notifications`, async (c) => {
    // Digests and disables: the single exhausted dispatches are told in their digests.
    const [digests, disables] = await Promise.all([
      call(c, "GET", "/v3/notifications?limit=50&kind=dispatch.exhausted.digest"),
      call(c, "GET", "/v3/notifications?limit=50&kind=webhook.disabled"),
    ]);
    if (!digests || !disables) return signIn(c);
    if (!digests.ok) return refused(c, digests);
    if (!disables.ok) return refused(c, disables);
    const notifications = [...digests.body.data, ...disables.body.data].sort((a, b) =>
      b.created.localeCompare(a.created),
    );
    // Which webhooks still have a page: a deleted one's notifications stay, its page does not.
    const webhooks = [...new Set(notifications.map((n) => n.webhook as string))];
    const found = await Promise.all(webhooks.map((id) => call(c, "GET", `/v3/webhooks/${encodeURIComponent(id)}`)));
    const live = new Set(webhooks.filter((_, i) => found[i]?.ok));
    return c.html(notificationsPage({ notifications, live, context: context(c) }));
  });
}
