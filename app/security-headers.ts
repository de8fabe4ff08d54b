import { createMiddleware } from "hono/factory";
import { secureHeaders } from "hono/secure-headers";
import { CONSOLE_STYLE } from "./console/console-layout.ts";
import { REFERENCE_STYLE } from "./routes/api-reference-page.ts";

const headers = secureHeaders({
  // The pages are server-rendered with no script at all: nothing loads but
  // their own inline stylesheets, forms post only here, and nobody frames them.
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    styleSrc: [CONSOLE_STYLE.source, REFERENCE_STYLE.source],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
  },
  xFrameOptions: "DENY",
  referrerPolicy: "no-referrer",
});

/**
 * The security headers of every answer (console, `/docs`, API alike): a CSP
 * without script, `frame-ancestors 'none'`, `nosniff`, `no-referrer`, and
 * `Cache-Control: no-store` unless a route chose otherwise: answers carry
 * tenants' data and the console's pages carry its forms' tokens.
 */
export const securityHeaders = createMiddleware(async (c, next) => {
  await headers(c, next);
  if (!c.res.headers.has("cache-control")) c.res.headers.set("cache-control", "no-store");
});
