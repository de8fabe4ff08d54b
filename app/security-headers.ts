import { createMiddleware } from "hono/factory";
import type { HooklaneEnv } from "../lib/api/hono-env.ts";
import { isFrameAncestorSource } from "../lib/webhook/portal/frame-ancestor.ts";
import { secureHeaders } from "hono/secure-headers";
import { CONSOLE_LIVE } from "./console/console-live.ts";
import { CONSOLE_STYLE } from "./console/console-style.ts";
import { REFERENCE_STYLE } from "./routes/api-reference-page.ts";

const headers = secureHeaders({
  // The pages are server-rendered: nothing loads but their own inline
  // stylesheets and the console's one inline script (by their hashes), which
  // may fetch only this origin's pages; forms post only here, and nobody
  // frames them.
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    styleSrc: [CONSOLE_STYLE.source, REFERENCE_STYLE.source],
    scriptSrc: [CONSOLE_LIVE.source],
    connectSrc: ["'self'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
  },
  xFrameOptions: "DENY",
  referrerPolicy: "no-referrer",
});

/**
 * The security headers of every answer (console, `/docs`, API alike): a CSP
 * allowing one known script (CONSOLE_LIVE) and no other, `frame-ancestors 'none'`, `nosniff`, `no-referrer`, and
 * `Cache-Control: no-store` unless a route chose otherwise: answers carry
 * tenants' data and the console's pages carry its forms' tokens.
 */
export const securityHeaders = createMiddleware<HooklaneEnv>(async (c, next) => {
  await headers(c, next);
  // A portal session's pages may be framed by the origins the session names, and only by them. Only a source
  // exactly as the API accepts it is written (a session sealed before a rule was tightened keeps what it named):
  // nothing else may end the directive or widen it.
  const ancestors = c.get("frameAncestors")?.filter(isFrameAncestorSource);
  if (ancestors?.length) {
    const policy = c.res.headers.get("content-security-policy") ?? "";
    c.res.headers.set(
      "content-security-policy",
      policy.replace("frame-ancestors 'none'", () => `frame-ancestors ${ancestors.join(" ")}`),
    );
    c.res.headers.delete("x-frame-options");
  }
  if (!c.res.headers.has("cache-control")) c.res.headers.set("cache-control", "no-store");
});
