import { Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { decodeJwt } from "jose";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import { consoleCsrf, formToken } from "./console-csrf.ts";
import { addDeliveryConsoleRoutes } from "./console-delivery-routes.ts";
import { loginPage } from "./console-pages.ts";
import { addPortalGate, portalTools, PORTAL_PREFIX } from "./console-portal.ts";
import { apiAnswer, pageAnswers, type ApiCaller, type ConsoleTools } from "./console-tools.ts";
import { addWebhookConsoleRoutes } from "./console-webhook-routes.ts";

const COOKIE = "hooklane_console";
// RFC 6750's b64token, which every JWT is: anything else (NUL, a line break, U+FFFD) cannot go in an
// Authorization header, so it is no token at all, never a header the in-process call would throw on.
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** `text` when it can be a bearer token, else undefined: a malformed token or cookie means "not signed in". */
const bearerToken = (text: unknown) => (typeof text === "string" && BEARER_TOKEN.test(text) ? text : undefined);

/**
 * The console: server-rendered pages over the control-plane API. It holds
 * the caller's bearer token in an HttpOnly, SameSite=Strict cookie that
 * expires with the token, and sends every read and action through the API
 * with it, so it sees and does exactly what that token may, with the API's
 * scoping and validation. No scripts; every form, sign-in included, is
 * checked for its origin and its form token (`consoleCsrf`). The same pages
 * serve portal sessions under `/console/portal/<token>` (`console-portal.ts`).
 */
export function consoleRoutes(api: ApiCaller): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();
  app.use("/console/*", consoleCsrf);

  const signedIn: ConsoleTools = {
    async call(c, method, path, body) {
      const token = bearerToken(getCookie(c, COOKIE));
      if (!token) {
        if (getCookie(c, COOKIE) !== undefined) deleteCookie(c, COOKIE, { path: "/console" });
        return undefined;
      }
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
      return apiAnswer(response);
    },
    signIn: (c) => c.html(loginPage(formToken(c)), 401),
    ...pageAnswers(() => "/console", false),
  };

  app.post("/console/login", async (c) => {
    const sent = (await c.req.parseBody()).token;
    const token = bearerToken(typeof sent === "string" ? sent.trim() : undefined);
    const probe = token && (await api("/v3/webhooks?limit=1", { headers: { authorization: `Bearer ${token}` } }));
    if (!probe || !probe.ok) return c.html(loginPage(formToken(c), "That token was not accepted."), 401);
    // The API accepted it, so it has an exp: the session ends when the token does.
    const { exp } = decodeJwt(token);
    setCookie(c, COOKIE, token, {
      path: "/console",
      httpOnly: true,
      sameSite: "Strict",
      secure: c.get("hooklane").config.production,
      maxAge: Math.max(1, Math.floor(exp! - Date.now() / 1_000)),
    });
    return c.redirect("/console", 303);
  });

  app.post("/console/logout", (c) => {
    deleteCookie(c, COOKIE, { path: "/console" });
    return c.redirect("/console", 303);
  });

  addPortalGate(app);
  const portal = portalTools(api);
  for (const [prefix, tools] of [
    ["/console", signedIn],
    [PORTAL_PREFIX, portal],
  ] as const) {
    addWebhookConsoleRoutes(app, prefix, tools);
    addDeliveryConsoleRoutes(app, prefix, tools);
  }
  return app;
}
