import { raw } from "hono/html";
import { createHash } from "node:crypto";

/**
 * What keeps a console page current without reloading it: every region
 * marked `data-live="<seconds>"` is fetched again from the page's own URL
 * (same origin, the same session) while the tab is visible, and its content
 * replaced by the fresh page's region of the same id. A region the server
 * renders without `data-live` has stopped changing: the page stops asking
 * once none is left. A region holding the focus, or a form being filled in,
 * waits for the next round; failures back off up to eight times the period.
 * The region itself stays in place, so a `role="status"` inside it is read
 * out as it changes.
 */
const SCRIPT = `(() => {
  "use strict";
  const live = () => Array.from(document.querySelectorAll("[data-live]"));
  let failures = 0;
  async function refresh() {
    const regions = live();
    if (regions.length === 0) return;
    const period = Math.max(1, Math.min(...regions.map((r) => Number(r.dataset.live) || 2)));
    if (!document.hidden) {
      try {
        const answer = await fetch(location.href, { credentials: "same-origin", headers: { accept: "text/html" } });
        if (!answer.ok) throw new Error(String(answer.status));
        const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
        for (const region of regions) {
          const next = fresh.getElementById(region.id);
          if (!next || region.contains(document.activeElement)) continue;
          region.replaceChildren(...Array.from(next.childNodes, (node) => document.importNode(node, true)));
          if (!next.hasAttribute("data-live")) region.removeAttribute("data-live");
        }
        failures = 0;
      } catch {
        failures = Math.min(failures + 1, 3);
      }
    }
    setTimeout(refresh, period * 1000 * 2 ** failures);
  }
  const first = live();
  if (first.length > 0) setTimeout(refresh, Math.max(1, Number(first[0].dataset.live) || 2) * 1000);
})();`;

/** The script inline, and the CSP source that allows exactly it and nothing else. */
export const CONSOLE_LIVE = {
  element: raw(`<script>${SCRIPT}</script>`),
  source: `'sha256-${createHash("sha256").update(SCRIPT).digest("base64")}'`,
};

/** The attribute that makes a region live: refreshed every `seconds` while `live` holds, left as it is otherwise. */
export const liveEvery = (live: boolean, seconds: number) => (live ? raw(`data-live="${seconds}"`) : "");
