import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { decodeJwt } from "jose";
import { z } from "zod";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import { consoleCsrf, formToken } from "./console-csrf.ts";
import {
  loginPage,
  notificationsPage,
  problemPage,
  RECOVERY_WINDOWS_HOURS,
  webhookPage,
  webhooksPage,
} from "./console-pages.ts";

/** Calls the app's own API in-process. */
export type ApiCaller = (path: string, init: RequestInit) => Promise<Response>;

const COOKIE = "hooklane_console";

const retryForm = z.object({ webhook: z.string().regex(/^wh_[a-f0-9]+$/) });
const recoverForm = z.object({
  hours: z.coerce.number().refine((h) => (RECOVERY_WINDOWS_HOURS as readonly number[]).includes(h)),
});

/**
 * The console: server-rendered pages over the control-plane API. It holds
 * the caller's bearer token in an HttpOnly, SameSite=Strict cookie that
 * expires with the token, and sends every read and action through the API
 * with it, so it sees and does exactly what that token may, with the API's
 * scoping and validation. No scripts; every form, sign-in included, is
 * checked for its origin and its form token (`consoleCsrf`).
 */
export function consoleRoutes(api: ApiCaller): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();
  app.use("/console/*", consoleCsrf);

  /** One API call with the signed-in token; `undefined` when the token no longer works (signed out). */
  async function call(c: Context<HooklaneEnv>, method: string, path: string, body?: unknown) {
    const token = getCookie(c, COOKIE);
    if (!token) return undefined;
    const response = await api(path, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (response.status === 401) {
      deleteCookie(c, COOKIE, { path: "/console" });
      return undefined;
    }
    const text = await response.text();
    // The API's answers are validated by its own tests; here they are only displayed.
    return { ok: response.ok, status: response.status, body: (text ? JSON.parse(text) : undefined) as any };
  }
  const signIn = (c: Context<HooklaneEnv>) => c.html(loginPage(formToken(c)), 401);
  const refused = (c: Context<HooklaneEnv>, answer: { status: number; body: any }) =>
    c.html(problemPage(answer.body?.title ?? "Error", answer.body?.detail ?? "", formToken(c)), answer.status as 400);
  const badForm = (c: Context<HooklaneEnv>, detail: string) =>
    c.html(problemPage("Bad request", detail, formToken(c)), 400);

  app.post("/console/login", async (c) => {
    const token = String((await c.req.parseBody()).token ?? "").trim();
    const probe = await api("/v3/webhooks?limit=1", { headers: { authorization: `Bearer ${token}` } });
    if (!probe.ok) return c.html(loginPage(formToken(c), "That token was not accepted."), 401);
    // The API accepted it, so it has an exp: the session ends when the token does.
    const { exp } = decodeJwt(token);
    setCookie(c, COOKIE, token, {
      path: "/console",
      httpOnly: true,
      sameSite: "Strict",
      secure: c.var.hooklane.config.production,
      maxAge: Math.max(1, Math.floor(exp! - Date.now() / 1_000)),
    });
    return c.redirect("/console", 303);
  });

  app.post("/console/logout", (c) => {
    deleteCookie(c, COOKIE, { path: "/console" });
    return c.redirect("/console", 303);
  });

  app.get("/console", async (c) => {
    const list = await call(c, "GET", "/v3/webhooks?limit=100");
    if (!list) return signIn(c);
    return c.html(webhooksPage(list.body.data, formToken(c)));
  });

  app.get("/console/notifications", async (c) => {
    // Digests and disables: the single exhausted dispatches are told in their digests.
    const [digests, disables] = await Promise.all([
      call(c, "GET", "/v3/notifications?limit=50&kind=dispatch.exhausted.digest"),
      call(c, "GET", "/v3/notifications?limit=50&kind=webhook.disabled"),
    ]);
    if (!digests || !disables) return signIn(c);
    if (!digests.ok) return refused(c, digests);
    if (!disables.ok) return refused(c, disables);
    const all = [...digests.body.data, ...disables.body.data].sort((a, b) => b.created.localeCompare(a.created));
    return c.html(notificationsPage(all, formToken(c)));
  });

  app.get("/console/webhooks/:id", async (c) => {
    const id = encodeURIComponent(c.req.param("id"));
    const { status, cursor, recovery, notice } = c.req.query();
    const hook = await call(c, "GET", `/v3/webhooks/${id}`);
    if (!hook) return signIn(c);
    if (!hook.ok) return refused(c, hook);
    const query = new URLSearchParams({ limit: "50", ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) });
    const log = await call(c, "GET", `/v3/webhooks/${id}/dispatches?${query}`);
    if (!log) return signIn(c);
    if (!log.ok) return refused(c, log);
    const progress = recovery
      ? await call(c, "GET", `/v3/webhooks/${id}/recoveries/${encodeURIComponent(recovery)}`)
      : undefined;
    return c.html(
      webhookPage({
        webhook: hook.body,
        dispatches: log.body.data,
        nextCursor: log.body.nextCursor,
        status,
        recovery: progress?.ok ? progress.body : undefined,
        notice,
        csrf: formToken(c),
      }),
    );
  });

  app.post("/console/dispatches/:id/retry", async (c) => {
    const form = retryForm.safeParse(await c.req.parseBody());
    if (!form.success) return badForm(c, "The form is incomplete.");
    const retried = await call(c, "POST", `/v3/webhook-dispatches/${encodeURIComponent(c.req.param("id"))}/retry`);
    if (!retried) return signIn(c);
    if (!retried.ok) return refused(c, retried);
    const notice = encodeURIComponent(`Delivery of ${retried.body.event.id} queued again.`);
    return c.redirect(`/console/webhooks/${form.data.webhook}?notice=${notice}`, 303);
  });

  app.post("/console/webhooks/:id/recover", async (c) => {
    const form = recoverForm.safeParse(await c.req.parseBody());
    if (!form.success) return badForm(c, "Choose one of the offered windows.");
    const id = encodeURIComponent(c.req.param("id"));
    const since = new Date(Date.now() - form.data.hours * 3_600_000).toISOString();
    const started = await call(c, "POST", `/v3/webhooks/${id}/recover`, { since });
    if (!started) return signIn(c);
    if (!started.ok) return refused(c, started);
    return c.redirect(`/console/webhooks/${id}?recovery=${started.body.id}`, 303);
  });

  return app;
}
