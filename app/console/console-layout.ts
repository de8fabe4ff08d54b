import { html } from "hono/html";
import { CONSOLE_LIVE } from "./console-live.ts";
import { CONSOLE_STYLE } from "./console-style.ts";

/** The hidden field that carries the form token (see console-csrf.ts) in every form. */
export const tokenField = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}" />`;

/** What the page needs to know about who is looking at it. */
export interface PageContext {
  csrf: string;
  /** Where the console's pages are: `/console`, or a portal session's own `/console/portal/<token>`. */
  base: string;
  /** Opened through a portal session: one account, no sign-out, no other account's pages. */
  portal?: boolean;
}

/** A page of the console: the header with its navigation, a notice if any, the content. */
export function layout(
  title: string,
  body: unknown,
  /** `live`: the page has regions that keep themselves current (`liveEvery`), so it carries the script that does it. */
  options: PageContext & { signedIn: boolean; notice?: string | undefined; live?: boolean },
) {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} — hooklane</title>
        ${CONSOLE_STYLE.element}
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
          <a class="brand" href="${options.base}">hooklane</a>
          ${
            options.signedIn
              ? html`<nav aria-label="Console">
                  <a href="${options.base}">Webhooks</a>
                  <a href="${options.base}/event-types">Event types</a>
                  <a href="${options.base}/notifications">Notifications</a>
                  <a href="${options.base}/signing-keys">Signing keys</a>
                  ${
                    options.portal
                      ? ""
                      : html`<a href="/docs">API reference</a>
                          <form class="inline" method="post" action="/console/logout">
                            ${tokenField(options.csrf)}<button>Sign out</button>
                          </form>`
                  }
                </nav>`
              : ""
          }
        </header>
        <main id="main">
          <h1>${title}</h1>
          ${options.notice ? html`<p class="notice" role="status">${options.notice}</p>` : ""} ${body}
        </main>
        ${options.live ? CONSOLE_LIVE.element : ""}
      </body>
    </html>`;
}

const UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ["day", 86_400_000],
  ["hour", 3_600_000],
  ["minute", 60_000],
  ["second", 1_000],
];
const relativeFormat = new Intl.RelativeTimeFormat("en", { numeric: "auto" });

/** "3 minutes ago" / "in 5 seconds" from `now`, in the largest unit that fits. */
export function relativeTime(at: Date, now: Date): string {
  const delta = at.getTime() - now.getTime();
  for (const [unit, ms] of UNITS) {
    if (Math.abs(delta) >= ms || unit === "second") return relativeFormat.format(Math.round(delta / ms), unit);
  }
  return "now";
}

/** A timestamp as people read it: relative, with the exact UTC time on hover and for machines. */
export function when(iso: string | null | undefined, now = new Date()) {
  if (!iso) return "—";
  return html`<time datetime="${iso}" title="${iso}">${relativeTime(new Date(iso), now)}</time>`;
}

/**
 * A deadline as a clock time, `2025-06-01 14:03 UTC`, then how far off it is: one to plan a switch by.
 * Cut to the minute, never rounded up, so it is never later than the real one.
 */
export function until(iso: string, now = new Date()) {
  return html`<time datetime="${iso}" title="${iso}">${clock(iso)}</time> (${relativeTime(new Date(iso), now)})`;
}

/** The same as plain text, for a notice. */
export function untilText(iso: string, now = new Date()): string {
  return `${clock(iso)} (${relativeTime(new Date(iso), now)})`;
}

const clock = (iso: string) => `${iso.slice(0, 16).replace("T", " ")} UTC`;
