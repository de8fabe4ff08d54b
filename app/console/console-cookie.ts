import type { Context } from "hono";
import type { HooklaneEnv } from "../../lib/api/hono-env.ts";

/**
 * A console cookie's name and whether it is `Secure`. Production, and any
 * request that reached us over https, use `__Host-` + `name` (Secure, Path=/,
 * no Domain: no sibling subdomain or plain-http page can set or shadow it).
 * Development over plain http (`http://127.0.0.1:3000`, the browser tests)
 * gets the plain name without Secure, which every browser accepts there.
 */
export function consoleCookie(c: Context<HooklaneEnv>, name: string): { name: string; secure: boolean } {
  const secure = c.get("hooklane").config.production || new URL(c.req.url).protocol === "https:";
  return { name: secure ? `__Host-${name}` : name, secure };
}
