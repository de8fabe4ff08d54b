import { html, raw } from "hono/html";
import type { z } from "zod";
import type { healthHistorySchema } from "../routes/v3/health-history.ts";

type History = z.output<typeof healthHistorySchema>;

/** The drawing's own units: the SVG scales to its box, from a phone's width to 32rem. */
const WIDTH = 360;
const LEFT = 54;
const RIGHT = 8;
const PLOT = WIDTH - LEFT - RIGHT;
const BARS = { top: 8, height: 84 };
const LINES = { top: 122, height: 64 };
const HEIGHT = 214;

export const CHART_COLOURS = { succeeded: "#1a7f37", failed: "#c62828", p50: "#0b57a4", p95: "#7b3fb0" } as const;

/** 1234 → "1.2k"; durations as "850 ms" or "1.4 s". */
const count = (n: number) =>
  n >= 10_000 ? `${Math.round(n / 1_000)}k` : n >= 1_000 ? `${(n / 1_000).toFixed(1)}k` : `${n}`;
const duration = (ms: number) =>
  ms >= 1_000 ? `${(ms / 1_000).toFixed(ms >= 10_000 ? 0 : 1)} s` : `${Math.round(ms)} ms`;
const fixed = (n: number) => n.toFixed(1);

/**
 * A history as one server-rendered SVG: per slot, succeeded and failed
 * attempts as stacked bars, and below, attempt latency p50 and p95 as lines
 * (broken where a slot had no attempts). Text is sized for the drawing's
 * 360 units, so it stays legible from a 375 px phone up; the summary in its
 * description says in words what it shows.
 */
export function healthChart(history: History, id: string) {
  const slots = history.slots;
  const n = Math.max(1, slots.length);
  const step = PLOT / n;
  const barWidth = Math.max(1, step * 0.72);
  const maxAttempts = Math.max(1, ...slots.map((s) => s.attempts));
  const maxLatency = Math.max(1, ...slots.map((s) => s.latencyMs?.p95 ?? 0));
  const x = (i: number) => LEFT + i * step + (step - barWidth) / 2;
  const barY = (value: number) => BARS.top + BARS.height - (value / maxAttempts) * BARS.height;
  const lineY = (ms: number) => LINES.top + LINES.height - (ms / maxLatency) * LINES.height;

  const bars = slots
    .map((slot, i) => {
      if (slot.attempts === 0) return "";
      const okTop = barY(slot.succeeded);
      const allTop = barY(slot.attempts);
      const base = BARS.top + BARS.height;
      return (
        `<rect x="${fixed(x(i))}" y="${fixed(okTop)}" width="${fixed(barWidth)}" height="${fixed(base - okTop)}" fill="${CHART_COLOURS.succeeded}"/>` +
        (slot.failed > 0
          ? `<rect x="${fixed(x(i))}" y="${fixed(allTop)}" width="${fixed(barWidth)}" height="${fixed(okTop - allTop)}" fill="${CHART_COLOURS.failed}"/>`
          : "")
      );
    })
    .join("");

  /** One polyline per run of slots with attempts; a lone slot is a dot. */
  const line = (pick: (l: { p50: number; p95: number }) => number, colour: string) => {
    const runs: string[][] = [[]];
    slots.forEach((slot, i) => {
      if (!slot.latencyMs) return void (runs.at(-1)!.length > 0 && runs.push([]));
      runs.at(-1)!.push(`${fixed(x(i) + barWidth / 2)},${fixed(lineY(pick(slot.latencyMs)))}`);
    });
    return runs
      .filter((run) => run.length > 0)
      .map((run) =>
        run.length === 1
          ? `<circle cx="${run[0]!.split(",")[0]}" cy="${run[0]!.split(",")[1]}" r="2.2" fill="${colour}"/>`
          : `<polyline points="${run.join(" ")}" fill="none" stroke="${colour}" stroke-width="2" stroke-linejoin="round"/>`,
      )
      .join("");
  };

  const attempts = slots.reduce((sum, s) => sum + s.attempts, 0);
  const failed = slots.reduce((sum, s) => sum + s.failed, 0);
  const worstP95 = slots.reduce((worst, s) => Math.max(worst, s.latencyMs?.p95 ?? 0), 0);
  const span = history.window === "24h" ? "24 hours" : "7 days";
  const summary =
    attempts === 0
      ? `No attempts in the last ${span}.`
      : `${attempts} attempts in the last ${span}, ${failed} failed (${((100 * (attempts - failed)) / attempts).toFixed(1)} % succeeded); slowest p95 ${duration(worstP95)}.`;
  const axis = (y: number) =>
    `<line x1="${LEFT}" y1="${y}" x2="${WIDTH - RIGHT}" y2="${y}" stroke="#767676" stroke-width="1"/>`;
  const label = (text: string, x: number, y: number, anchor = "end") =>
    `<text x="${x}" y="${y}" text-anchor="${anchor}" font-size="11" fill="#1b1b1b">${text}</text>`;

  const svg =
    `<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${id}-title ${id}-desc" xmlns="http://www.w3.org/2000/svg">` +
    `<title id="${id}-title">Deliveries and latency, last ${span}</title><desc id="${id}-desc">${summary}</desc>` +
    label(count(maxAttempts), LEFT - 5, BARS.top + 9) +
    label("0", LEFT - 5, BARS.top + BARS.height) +
    axis(BARS.top + BARS.height) +
    bars +
    label(duration(maxLatency), LEFT - 5, LINES.top + 9) +
    label("0", LEFT - 5, LINES.top + LINES.height) +
    axis(LINES.top + LINES.height) +
    line((l) => l.p95, CHART_COLOURS.p95) +
    line((l) => l.p50, CHART_COLOURS.p50) +
    label(history.window === "24h" ? "24 h ago" : "7 days ago", LEFT, HEIGHT - 6, "start") +
    label("now", WIDTH - RIGHT, HEIGHT - 6) +
    `</svg>`;

  return html`<figure class="chart">
    ${raw(svg)}
    <figcaption>
      <span class="key"><span class="swatch succeeded"></span>succeeded</span>
      <span class="key"><span class="swatch failed"></span>failed</span>
      <span class="key"><span class="swatch p50"></span>latency p50</span>
      <span class="key"><span class="swatch p95"></span>p95</span>
      <br />${summary}
    </figcaption>
  </figure>`;
}

/** The 24-hour and 7-day histories a page shows; either may be missing when the API would not say. */
export interface HealthHistories {
  day: History | undefined;
  week: History | undefined;
}

/** Both windows side by side (stacked on a phone), under one heading. */
export function healthCharts(histories: HealthHistories, id: string, heading: string) {
  if (!histories.day && !histories.week) return "";
  return html`<h2>${heading}</h2>
    <div class="charts">
      ${histories.day ? healthChart(histories.day, `${id}-24h`) : ""}
      ${histories.week ? healthChart(histories.week, `${id}-7d`) : ""}
    </div>`;
}
