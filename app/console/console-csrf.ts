import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { csrf } from "hono/csrf";
import { createMiddleware } from "hono/factory";
import { HTTPException } from "hono/http-exception";
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";
import { consoleCookie } from "./console-cookie.ts";
import { problemPage } from "./console-pages.ts";

/** The form-token nonce's cookie (`consoleCookie`): `__Host-hooklane_console_nonce` in production and over https. */
const nonceCookie = (c: Context<HooklaneEnv>) => consoleCookie(c, "hooklane_console_nonce");
const NONCE = /^[A-Za-z0-9_-]{22}$/;
/** The hidden field every console form carries. */
export const CSRF_FIELD = "csrf";

const keys = new WeakMap<object, Buffer>();
/** A key of its own for the forms, derived from WEBHOOK_SECRET_KEY, the same on every API instance. */
function formKey(c: Context<HooklaneEnv>): Buffer {
  const { config } = c.get("hooklane");
  let key = keys.get(config);
  if (!key) {
    key = Buffer.from(hkdfSync("sha256", config.secretKey, "", "hooklane console form token", 32));
    keys.set(config, key);
  }
  return key;
}

const sign = (c: Context<HooklaneEnv>, nonce: string) =>
  createHmac("sha256", formKey(c)).update(nonce).digest("base64url");

/** The portal session token in the path, for a portal's pages. */
export const PORTAL_PATH = /^\/console\/portal\/([A-Za-z0-9_.-]+)(?:\/|$)/;

/**
 * The form token for this browser: a random nonce in an HttpOnly, SameSite=Strict
 * cookie (`nonceCookie`, set now when the browser has none), signed with the server's form key.
 * Another site can neither read the cookie nor sign a nonce of its own. A
 * portal's pages, which another site frames (where SameSite cookies are not
 * sent), sign their session's token instead: it is in no page but the
 * session's own, and in no Referer (`no-referrer`).
 */
export function formToken(c: Context<HooklaneEnv>): string {
  const portal = PORTAL_PATH.exec(c.req.path)?.[1];
  if (portal) return sign(c, `portal:${portal}`);
  const { name, secure } = nonceCookie(c);
  let nonce = getCookie(c, name);
  if (!nonce || !NONCE.test(nonce)) {
    nonce = randomBytes(16).toString("base64url");
    // `__Host-` requires Path=/; over plain http it stays the console's.
    setCookie(c, name, nonce, { path: secure ? "/" : "/console", httpOnly: true, sameSite: "Strict", secure });
  }
  return sign(c, nonce);
}

function validToken(c: Context<HooklaneEnv>, sent: unknown): boolean {
  const portal = PORTAL_PATH.exec(c.req.path)?.[1];
  const nonce = getCookie(c, nonceCookie(c).name);
  if (typeof sent !== "string" || (!portal && (!nonce || !NONCE.test(nonce)))) return false;
  const expected = Buffer.from(sign(c, portal ? `portal:${portal}` : nonce!));
  const given = Buffer.from(sent);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

// Origin or Sec-Fetch-Site must name this very origin (a same-site sibling is not enough).
const sameOrigin = csrf();

/**
 * Every state-changing console request, sign-in included, must come from a
 * page of this origin (`Origin` / `Sec-Fetch-Site`) and carry the form token
 * that matches the browser's nonce cookie; anything else is a 403 page, and
 * a body that claims to be a form but cannot be read as one a 400 page.
 */
export const consoleCsrf = createMiddleware<HooklaneEnv>(async (c, next) => {
  if (c.req.method === "GET" || c.req.method === "HEAD") return next();
  const context = () => ({
    csrf: formToken(c),
    base: PORTAL_PATH.exec(c.req.path)?.[0].replace(/\/$/, "") ?? "/console",
  });
  const refuse = () =>
    c.html(
      problemPage(
        "Forbidden",
        "This form is stale or came from another site. Reload the page and try again.",
        context(),
      ),
      403,
    );
  try {
    await sameOrigin(c, async () => {});
  } catch (error) {
    if (error instanceof HTTPException && error.status === 403) return refuse();
    throw error;
  }
  let form: Awaited<ReturnType<typeof c.req.parseBody>>;
  try {
    form = await c.req.parseBody();
  } catch (error) {
    // A body that says it is a form and is not one (a multipart body without its boundary): the client's fault.
    if (error instanceof TypeError)
      return c.html(problemPage("Bad request", "The form could not be read.", context()), 400);
    throw error;
  }
  if (!validToken(c, form[CSRF_FIELD])) return refuse();
  await next();
});
