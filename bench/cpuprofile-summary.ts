// Summarises a V8 .cpuprofile (node --cpu-prof): where the busy time after
// start-up went, by area (our code, each dependency, Node internals, GC) and
// by function.
// `node bench/cpuprofile-summary.ts <file.cpuprofile> [top]` prints it.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface TimeShare {
  name: string;
  ms: number;
  /** Of the busy (non-idle) time. */
  share: number;
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Start-up: until the process stopped loading modules, left out of every share below. */
  moduleLoadingMs: number;
  /** Busy time after start-up: what the shares are of. */
  busyMs: number;
  byArea: TimeShare[];
  /** Functions by their own time. */
  topSelf: TimeShare[];
  /** hooklane's own functions (lib/, app/) by the time spent in them and what they call. */
  topInclusiveProduct: TimeShare[];
}

const IDLE = "(idle)";

/** Reads and summarises one profile; `top` bounds each list. Throws when the file is missing or not a profile. */
export function summarizeCpuProfile(file: string, top = 20): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  const self = new Map<string, number>();
  const area = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  let loadingUs = 0;
  const stackOf = (id: number) => {
    const stack: ProfileNode[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) stack.push(nodes.get(at)!);
    return stack;
  };
  const loadingModules = (stack: ProfileNode[]) =>
    stack.some((frame) => frame.callFrame.url.startsWith("node:internal/modules/"));
  const startupEndsAt = startupEnd(profile, (id) => loadingModules(stackOf(id)));

  let at = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    // A sample's delta is the time until the next one; the first is the gap from the start.
    const us = Math.max(0, profile.timeDeltas[i + 1] ?? 0);
    const node = nodes.get(id)!;
    totalUs += us;
    if (node.callFrame.functionName === IDLE) {
      idleUs += us;
      return;
    }
    // Start-up (importing the product and its dependencies, and the GC it causes) is not what a benchmark is after.
    if (at <= startupEndsAt) {
      loadingUs += us;
      return;
    }
    add(self, functionKey(node), us);
    add(area, areaOf(node), us);
    const seen = new Set<string>();
    for (const frame of stackOf(id)) {
      if (!isProduct(frame.callFrame.url)) continue;
      const key = functionKey(frame);
      if (!seen.has(key)) add(inclusive, key, us);
      seen.add(key);
    }
  });
  const busyUs = totalUs - idleUs - loadingUs;
  const ranked = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1_000, share: busyUs ? us / busyUs : 0 }));
  return {
    file,
    totalMs: totalUs / 1_000,
    moduleLoadingMs: loadingUs / 1_000,
    busyMs: busyUs / 1_000,
    byArea: ranked(area),
    topSelf: ranked(self),
    topInclusiveProduct: ranked(inclusive),
  };
}

/**
 * When start-up ended, in microseconds from the profile's start: the last
 * module-loading sample before the first half second without one (a module
 * loaded lazily later does not count as start-up).
 */
function startupEnd(profile: CpuProfile, isLoading: (id: number) => boolean): number {
  let at = 0;
  let lastLoading = -1;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (isLoading(profile.samples[i]!)) lastLoading = at;
    else if (lastLoading >= 0 && at - lastLoading > 500_000) break;
  }
  return lastLoading;
}

function add(map: Map<string, number>, key: string, us: number): void {
  map.set(key, (map.get(key) ?? 0) + us);
}

function shortUrl(url: string): string {
  const modules = url.lastIndexOf("/node_modules/");
  if (modules >= 0) return url.slice(modules + "/node_modules/".length);
  const repo = /\/(lib|app|bench|scripts)\/.*$/.exec(url);
  return repo ? repo[0].slice(1) : url;
}

function functionKey(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || "(anonymous)";
  return url ? `${name} ${shortUrl(url)}:${lineNumber + 1}` : name;
}

function isProduct(url: string): boolean {
  return /\/(lib|app)\//.test(url) && !url.includes("/node_modules/");
}

function areaOf(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  if (!url) return functionName.startsWith("(") ? functionName : "(native)";
  if (isProduct(url)) return "hooklane (lib/, app/)";
  const modules = url.lastIndexOf("/node_modules/");
  if (modules >= 0) {
    const rest = url.slice(modules + "/node_modules/".length).split("/");
    return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith("node:")) return "node internals";
  return shortUrl(url);
}

/** The summary as Markdown tables. */
export function formatProfileSummary(summary: ProfileSummary): string {
  const table = (title: string, rows: TimeShare[]) =>
    [
      `| ${title} | ms | share of busy time |`,
      "| --- | ---: | ---: |",
      ...rows.map((row) => `| \`${row.name}\` | ${row.ms.toFixed(0)} | ${(row.share * 100).toFixed(1)} % |`),
    ].join("\n");
  return [
    `${summary.file}: ${(summary.totalMs / 1_000).toFixed(1)} s profiled, ${(summary.moduleLoadingMs / 1_000).toFixed(1)} s ` +
      `starting up, ${(summary.busyMs / 1_000).toFixed(1)} s busy after that (the shares below)`,
    "",
    table("area", summary.byArea),
    "",
    table("function (self time)", summary.topSelf),
    "",
    table("hooklane function (inclusive time)", summary.topInclusiveProduct),
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error("usage: node bench/cpuprofile-summary.ts <file.cpuprofile> [top]");
    process.exit(2);
  }
  console.log(formatProfileSummary(summarizeCpuProfile(file, top ? Number(top) : 20)));
}
