import parsePrometheusTextFormat from "parse-prometheus-text-format";

export interface Scrape {
  /** Metric family names, in the order exposed. */
  readonly names: string[];
  /** The family's type (COUNTER, GAUGE, HISTOGRAM…); undefined when absent. */
  type(name: string): string | undefined;
  /** Sum of a counter's or gauge's samples whose labels include `labels`; undefined when the family is absent. */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** Sum of a histogram's `_count` samples; undefined when there are none. */
  count(name: string): number | undefined;
  /** Every label set of a family's samples. */
  labels(name: string): Record<string, string>[];
}

/**
 * Parses a Prometheus text exposition with a third-party parser (which
 * throws on what is not the format), and checks what it does not: every
 * family has HELP and a declared type. That parser folds a histogram's
 * labelled `_count` samples away, so `count` reads those lines itself.
 */
export function parseScrape(text: string): Scrape {
  const families = parsePrometheusTextFormat(text);
  for (const family of families) {
    if (!family.help) throw new Error(`${family.name} has no HELP`);
    if (family.type === "UNTYPED") throw new Error(`${family.name} has no TYPE`);
  }
  const byName = new Map(families.map((family) => [family.name, family]));
  const matching = (name: string, labels: Record<string, string>) =>
    byName
      .get(name)
      ?.metrics.filter((sample) => Object.entries(labels).every(([key, value]) => sample.labels?.[key] === value));
  return {
    names: families.map((family) => family.name),
    type: (name) => byName.get(name)?.type,
    value(name, labels = {}) {
      return matching(name, labels)?.reduce((sum, sample) => sum + Number(sample.value), 0);
    },
    count(name) {
      const pattern = new RegExp(`^${name}_count(?:\\{[^}]*\\})? (\\S+)$`, "gm");
      const counts = [...text.matchAll(pattern)].map((match) => Number(match[1]));
      return counts.length === 0 ? undefined : counts.reduce((sum, n) => sum + n, 0);
    },
    labels: (name) => byName.get(name)?.metrics.map((sample) => sample.labels ?? {}) ?? [],
  };
}
