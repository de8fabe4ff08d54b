import { eq } from "drizzle-orm";
import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { decodeJwt } from "jose";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import {
  CONSOLE_SESSION_MAX_MS,
  findConsoleSession,
  openConsoleSession,
  revokeConsoleSession,
} from "../../lib/auth/console-session.ts";
import type { Principal } from "../../lib/auth/jwt.ts";
import { account } from "../../lib/db/schema.ts";
import type { Database } from "../../lib/db/client.ts";
import { consoleCookie } from "./console-cookie.ts";
import { consoleCsrf, formToken } from "./console-csrf.ts";
import { addDeliveryConsoleRoutes } from "./console-delivery-routes.ts";
import { loginPage, problemPage } from "./console-pages.ts";
import { addPortalGate, portalTools, PORTAL_PREFIX } from "./console-portal.ts";
import { addSigningKeyConsoleRoutes } from "./console-signing-key-routes.ts";
import { callApiAs, pageAnswers, type ApiCaller, type ConsoleTools } from "./console-tools.ts";
import { addWebhookConsoleRoutes } from "./console-webhook-routes.ts";

// RFC 6750's b64token, which every JWT is: anything else (NUL, a line break, U+FFFD) cannot go in an
// Authorization header, so it is no token at all.
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/** Where the console kept the bearer token itself before sessions were stored: deleted wherever it is seen. */
const LEGACY_COOKIE = "hooklane_console";

/** `text` when it can be a bearer token, else undefined: a malformed token means "not signed in". */
const bearerToken = (text: unknown) => (typeof text === "string" && BEARER_TOKEN.test(text) ? text : undefined);

/** The session cookie (`consoleCookie`): `__Host-hooklane_session` in production and over https. */
export function sessionCookie(c: Context<HooklaneEnv>): { name: string; secure: boolean } {
  return consoleCookie(c, "hooklane_session");
}

const principals = new WeakMap<Request, Principal | null>();

async function accountExists(database: Database, id: string): Promise<boolean> {
  const [row] = await database.db.select({ id: account.id }).from(account).where(eq(account.id, id));
  return row !== undefined;
}

/** The principal the request's session cookie signs in, read once per request; undefined when none. */
async function signedInPrincipal(c: Context<HooklaneEnv>): Promise<Principal | undefined> {
  forgetLegacyCookie(c);
  if (!principals.has(c.req.raw)) {
    const { name } = sessionCookie(c);
    const id = getCookie(c, name);
    const principal = await findConsoleSession(c.get("hooklane").database, id);
    if (!principal && id !== undefined) endSessionCookie(c);
    principals.set(c.req.raw, principal ?? null);
  }
  return principals.get(c.req.raw) ?? undefined;
}

function forgetLegacyCookie(c: Context<HooklaneEnv>): void {
  if (getCookie(c, LEGACY_COOKIE) !== undefined) deleteCookie(c, LEGACY_COOKIE, { path: "/console" });
}

function endSessionCookie(c: Context<HooklaneEnv>): void {
  const { name, secure } = sessionCookie(c);
  deleteCookie(c, name, { path: "/", secure });
}

/**
 * The console: server-rendered pages over the control-plane API. Signing in
 * with a bearer token stores a session (`console-session.ts`: the token's
 * subject, account and role, never the token) and gives the browser only its
 * random id, in an HttpOnly, SameSite=Strict cookie (`sessionCookie`) that
 * expires with the session: when the token would, 12 h at most. Signing out
 * revokes it server-side. Every read and action goes through the API
 * in-process as the session's principal, with the API's scoping and
 * validation. One inline script (console-live.ts) keeps live regions
 * current and is the only script the CSP runs; every form, sign-in included, is checked for its
 * origin and its form token (`consoleCsrf`). The same pages serve portal
 * sessions under `/console/portal/<token>` (`console-portal.ts`).
 */
export function consoleRoutes(api: ApiCaller): Hono<HooklaneEnv> {
  const app = new Hono<HooklaneEnv>();
  app.use("/console/*", consoleCsrf);

  const signedIn: ConsoleTools = {
    async call(c, method, path, body) {
      const principal = await signedInPrincipal(c);
      return principal && callApiAs(api, principal, method, path, body);
    },
    signIn: (c) => c.html(loginPage(formToken(c)), 401),
    ...pageAnswers(() => "/console", false),
  };

  app.post("/console/login", async (c) => {
    const sent = (await c.req.parseBody()).token;
    const token = bearerToken(typeof sent === "string" ? sent.trim() : undefined);
    const hooklane = c.get("hooklane");
    let principal: Principal | undefined;
    try {
      principal = token ? await hooklane.verifyToken(token) : undefined;
    } catch {
      principal = undefined;
    }
    if (!principal) return c.html(loginPage(formToken(c), "That token was not accepted."), 401);
    // A token for an account nobody created would open a console where every create fails: say so now.
    if (!principal.admin && !principal.support && !(await accountExists(hooklane.database, principal.account))) {
      const detail = `That token is for account ${principal.account}, which does not exist: create it first (POST /v3/accounts, as an admin) or sign in with a token for an existing account.`;
      return c.html(loginPage(formToken(c), detail), 401);
    }
    // A fresh id on every sign-in, whatever cookie came with it (no fixation); the old session ends.
    const { name, secure } = sessionCookie(c);
    await revokeConsoleSession(hooklane.database, getCookie(c, name));
    // The token verified, so it has an exp: the session ends when the token does, or sooner.
    const expiresAt = new Date(Math.min(decodeJwt(token!).exp! * 1_000, Date.now() + CONSOLE_SESSION_MAX_MS));
    const id = await openConsoleSession(hooklane.database, principal, expiresAt);
    setCookie(c, name, id, {
      path: "/",
      httpOnly: true,
      sameSite: "Strict",
      secure,
      maxAge: Math.max(1, Math.floor((expiresAt.getTime() - Date.now()) / 1_000)),
    });
    forgetLegacyCookie(c);
    return c.redirect("/console", 303);
  });

  app.post("/console/logout", async (c) => {
    await revokeConsoleSession(c.get("hooklane").database, getCookie(c, sessionCookie(c).name));
    endSessionCookie(c);
    forgetLegacyCookie(c);
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
    addSigningKeyConsoleRoutes(app, prefix, tools);
  }
  // Any other console path: the console's own page, not the API's problem+json.
  for (const [path, tools] of [
    [`${PORTAL_PREFIX}/*`, portal],
    ["/console/*", signedIn],
  ] as const) {
    app.all(path, (c) => {
      const detail = "There is no such page here. The link may be old, or the address mistyped.";
      return c.html(problemPage("Page not found", detail, tools.context(c)), 404);
    });
  }
  return app;
}
