import { raw } from "hono/html";
import { createHash } from "node:crypto";

/** A stylesheet inlined in a page, and the CSP source that allows exactly it. */
export interface InlineStyle {
  /** `<style>` with the text unchanged: any other byte would no longer match the hash. */
  element: ReturnType<typeof raw>;
  /** `'sha256-…'` for the CSP's `style-src`. */
  source: string;
}

/** Inlines `css` in a page under a CSP that allows no other style and no script at all. */
export function inlineStyle(css: string): InlineStyle {
  return {
    element: raw(`<style>${css}</style>`),
    source: `'sha256-${createHash("sha256").update(css).digest("base64")}'`,
  };
}
