import { createHash } from "node:crypto";
import { expect } from "vitest";
import { CONSOLE_LIVE } from "../../app/console/console-live.ts";

/**
 * Asserts the headers every console and reference page must carry, and that
 * the CSP allows the page's own inline stylesheet (by its hash), the
 * console's one script (by its hash) and nothing else: no other script, no
 * framing, no other origin.
 */
export function expectSecurityHeaders(response: Response, html?: string): void {
  const where = `${response.status} ${response.url || "response"}`;
  const csp = response.headers.get("content-security-policy") ?? "";
  const directives = new Map(
    csp.split(";").map((part) => {
      const [name, ...values] = part.trim().split(/\s+/);
      return [name!, values];
    }),
  );
  expect(directives.get("default-src"), where).toEqual(["'none'"]);
  expect(directives.get("frame-ancestors"), where).toEqual(["'none'"]);
  expect(directives.get("form-action"), where).toEqual(["'self'"]);
  expect(directives.get("script-src"), where).toEqual([CONSOLE_LIVE.source]);
  expect(directives.get("connect-src"), where).toEqual(["'self'"]);
  expect(csp, where).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
  expect(response.headers.get("x-content-type-options"), where).toBe("nosniff");
  expect(response.headers.get("x-frame-options"), where).toBe("DENY");
  expect(response.headers.get("referrer-policy"), where).toBe("no-referrer");
  expect(response.headers.get("cache-control"), where).toBe("no-store");
  if (html === undefined) return;
  // No script but the console's own, and no inline handler or style attribute that the CSP would have to allow.
  expect(html.replaceAll(String(CONSOLE_LIVE.element), ""), where).not.toMatch(/<script|\son[a-z]+=|style="/i);
  for (const [, css] of html.matchAll(/<style>([\s\S]*?)<\/style>/g)) {
    const source = `'sha256-${createHash("sha256").update(css!).digest("base64")}'`;
    expect(directives.get("style-src"), `${where}: its stylesheet is allowed`).toContain(source);
  }
}
