import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { decodeJwt } from "jose";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import { consoleCsrf, formToken } from "./console-csrf.ts";
import { addDeliveryConsoleRoutes } from "./console-delivery-routes.ts";
import type { PageContext } from "./console-layout.ts";
import { loginPage, problemPage } from "./console-pages.ts";
import { addWebhookConsoleRoutes } from "./console-webhook-routes.ts";

/** Calls the app's own API in-process. */
export type ApiCaller = (path: string, init: RequestInit) => Promise<Response>;

/** An API answer as the console reads it. */
export interface ApiAnswer {
  ok: boolean;
  status: number;
  // The API's answers are validated by its own tests; here they are only displayed.
  body: any;
}

/** A rendered page (hono renders some asynchronously). */
export type Page = Response | Promise<Response>;

/** What every console route works with: the API as the signed-in caller, and the usual answers. */
export interface ConsoleTools {
  /** One API call with the signed-in token; `undefined` when there is none or it no longer works (signed out). */
  call(c: Context<HooklaneEnv>, method: string, path: string, body?: unknown): Promise<ApiAnswer | undefined>;
  context(c: Context<HooklaneEnv>): PageContext;
  signIn(c: Context<HooklaneEnv>): Page;
  refused(c: Context<HooklaneEnv>, answer: ApiAnswer): Page;
  badForm(c: Context<HooklaneEnv>, detail: string): Page;
}

const COOKIE = "hooklane_console";

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

  const tools: ConsoleTools = {
    async call(c, method, path, body) {
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
      return { ok: response.ok, status: response.status, body: text ? JSON.parse(text) : undefined };
    },
    context: (c) => ({ csrf: formToken(c) }),
    signIn: (c) => c.html(loginPage(formToken(c)), 401),
    refused: (c, answer) =>
      c.html(problemPage(answer.body?.title ?? "Error", answer.body?.detail ?? "", formToken(c)), answer.status as 400),
    badForm: (c, detail) => c.html(problemPage("Bad request", detail, formToken(c)), 400),
  };

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

  addWebhookConsoleRoutes(app, tools);
  addDeliveryConsoleRoutes(app, tools);
  return app;
}
