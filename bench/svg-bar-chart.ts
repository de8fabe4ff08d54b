export interface Bar {
  label: string;
  value: number;
  /** Drawn in the accent colour (hooklane's own figures). */
  accent?: boolean;
  /** Shown after the value, e.g. a ratio. */
  note?: string;
}

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * A horizontal bar chart as a standalone SVG document: one labelled bar per
 * entry, scaled to the largest value; bars without a finite value are listed
 * with a dash.
 */
export function barChartSvg(title: string, unit: string, bars: readonly Bar[]): string {
  const width = 760;
  const labelWidth = 230;
  const barArea = 330;
  const rowHeight = 30;
  const top = 44;
  const height = top + bars.length * rowHeight + 16;
  const max = Math.max(1, ...bars.map((bar) => (Number.isFinite(bar.value) ? bar.value : 0)));
  const rows = bars.map((bar, i) => {
    const y = top + i * rowHeight;
    const finite = Number.isFinite(bar.value);
    const length = finite ? Math.max(1, (bar.value / max) * barArea) : 0;
    const value = finite ? `${Math.round(bar.value).toLocaleString("en")} ${unit}` : "—";
    return [
      `<text x="${labelWidth - 10}" y="${y + 19}" text-anchor="end">${escape(bar.label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 5}" width="${length.toFixed(1)}" height="${rowHeight - 10}" rx="3" fill="${bar.accent ? "#2563eb" : "#9ca3af"}"/>`,
      `<text x="${(labelWidth + length + 8).toFixed(1)}" y="${y + 19}">${escape(value)}${bar.note ? ` <tspan fill="#6b7280">${escape(bar.note)}</tspan>` : ""}</text>`,
    ].join("");
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="13">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="16" y="26" font-size="15" font-weight="600">${escape(title)}</text>`,
    ...rows,
    "</svg>",
    "",
  ].join("\n");
}
