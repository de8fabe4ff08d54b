import type { Context, Hono } from "hono";
import { html } from "hono/html";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import { openPortalSession, type PortalSession } from "../../lib/webhook/portal/portal-session.ts";
import { portalSessionIsLive } from "../../lib/webhook/portal/portal-session-store.ts";
import { layout } from "./console-layout.ts";
import { callApiAs, pageAnswers, type ApiCaller, type ConsoleTools } from "./console-tools.ts";

/** Where a portal session's pages are: the console's, under the session's token. */
export const PORTAL_PREFIX = "/console/portal/:session";

const sessions = new WeakMap<Request, PortalSession>();
const base = (c: Context<HooklaneEnv>) => `/console/portal/${c.req.param("session")}`;

function endedPage(c: Context<HooklaneEnv>) {
  const page = layout(
    "Session ended",
    html`<p>This webhooks portal session has ended. Reload the page that opened it to start a new one.</p>`,
    { signedIn: false, csrf: "", base: base(c), portal: true },
  );
  return c.html(page, 401);
}

/**
 * Every portal page first opens its session from the token in its path: a
 * token this server did not seal is a 404 (nothing is there); an ended
 * session — expired, revoked, or sealed before sessions were stored, so
 * with no row — a 401 page. The row is read on every request: a request
 * that passed the gate before a revocation committed finishes, the next
 * one is refused. A live or ended session's pages may be framed by the
 * origins it names, and only by them (`frame-ancestors`, set by the security
 * headers from `frameAncestors`).
 */
export function addPortalGate(app: Hono<HooklaneEnv>): void {
  const gate = async (c: Context<HooklaneEnv>, next: () => Promise<void>) => {
    const { secretKey } = c.get("hooklane").config;
    const opened = await openPortalSession(secretKey, c.req.param("session") ?? "");
    if (!opened) return c.notFound();
    c.set("frameAncestors", opened.session.frameAncestors);
    if (opened.ended || !(await portalSessionIsLive(c.get("hooklane").database, opened.session))) return endedPage(c);
    sessions.set(c.req.raw, opened.session);
    await next();
  };
  app.use(PORTAL_PREFIX, gate);
  app.use(`${PORTAL_PREFIX}/*`, gate);
}

/**
 * The console's tools for a portal session: every API call is made as the
 * session's account (never an admin), handed to the API in-process; the
 * session is only ever the console, never a bearer token for the API.
 */
export function portalTools(api: ApiCaller): ConsoleTools {
  return {
    async call(c, method, path, body) {
      const session = sessions.get(c.req.raw);
      if (!session) return undefined;
      const principal = { sub: `portal:${session.id}`, account: session.account, admin: false, support: false };
      return callApiAs(api, principal, method, path, body);
    },
    signIn: endedPage,
    ...pageAnswers(base, true),
  };
}
