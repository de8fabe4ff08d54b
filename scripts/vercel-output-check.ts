import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import {
  SWEEPER_PATH,
  VERCEL_FUNCTIONS,
  type LaneConcurrency,
} from "../lib/webhook/transport/vercel/vercel-project.ts";
import { VERCEL_QUEUES } from "../lib/webhook/transport/vercel/vercel-queue-limits.ts";

/** Top-level names that must never be served: the source, its tests and tools, its migrations. */
export const NEVER_STATIC = ["lib", "test", "app", "scripts", "bench", "drizzle", "catalogue", "api", "docs", ".ci"];
const NODE_RUNTIME = "nodejs24.x";
/** What `#vercel-runtime` (package.json `imports`) names at run time: scripts/build.ts writes it. */
const VERCEL_RUNTIME_BUNDLE = "dist/vercel-runtime.mjs";

interface FunctionConfig {
  runtime?: string;
  maxDuration?: number;
  experimentalTriggers?: Array<{ type: string; topic: string; maxConcurrency?: number }>;
}

/**
 * Checks a built deployment (`vercel build`'s `.vercel/output`) against what
 * the product needs: only the files of `publicDir` served as static files
 * (never a source folder or a dotfile); each lane topic its own function with
 * one queue trigger for it, the `maxDuration` VERCEL_FUNCTIONS states and the
 * `maxConcurrency` the build's configuration asked for (`concurrency`); the
 * migration journal its schema check reads and the bundle every function
 * runs; the sweeper's `maxDuration` and cron. Returns the problems found,
 * none when the deployment is fit to ship.
 */
export function checkVercelOutput(output: string, publicDir: string, concurrency: LaneConcurrency): string[] {
  const problems: string[] = [];
  problems.push(...checkStatic(join(output, "static"), publicDir));

  const read = (path: string) => JSON.parse(readFileSync(path, "utf8")) as FunctionConfig;
  const functionDir = (source: string) => join(output, "functions", source.replace(/\.ts$/, ".func"));
  const functions = {
    api: VERCEL_FUNCTIONS.api.path,
    route: VERCEL_FUNCTIONS.route.path,
    deliver: VERCEL_FUNCTIONS.deliver.path,
    sweeper: VERCEL_FUNCTIONS.sweeper.path,
  };
  const built: Partial<Record<keyof typeof functions, FunctionConfig>> = {};
  for (const [name, source] of Object.entries(functions) as Array<[keyof typeof functions, string]>) {
    const config = join(functionDir(source), ".vc-config.json");
    if (!existsSync(config)) {
      problems.push(`${source} was not built as a function (${relative(output, config)} is missing)`);
      continue;
    }
    built[name] = read(config);
    if (built[name].runtime !== NODE_RUNTIME) {
      problems.push(`${source} runs on ${built[name].runtime ?? "an unknown runtime"}, not ${NODE_RUNTIME}`);
    }
    // Every function checks the schema against the journal when it starts.
    if (!existsSync(join(functionDir(source), "drizzle/meta/_journal.json"))) {
      problems.push(`${source} does not carry drizzle/meta/_journal.json, which its schema check reads`);
    }
    // Its code is the bundle vercel-build makes (`#vercel-runtime`), not hundreds of modules to resolve at a cold start.
    if (!existsSync(join(functionDir(source), VERCEL_RUNTIME_BUNDLE))) {
      problems.push(`${source} does not carry ${VERCEL_RUNTIME_BUNDLE}, the bundle it runs`);
    }
  }

  const { api, sweeper } = built;
  for (const stage of ["route", "deliver"] as const) {
    const lane = built[stage];
    if (!lane) continue;
    const expected = VERCEL_FUNCTIONS[stage];
    const queueTriggers = (lane.experimentalTriggers ?? []).filter((t) => t.type.startsWith("queue/"));
    if (queueTriggers.length > VERCEL_QUEUES.triggersPerFunction) {
      problems.push(`${expected.path} has ${queueTriggers.length} queue triggers; Vercel accepts one per function`);
    }
    const topics = queueTriggers.map((t) => t.topic);
    if (topics[0] !== expected.topic) {
      problems.push(`${expected.path}'s queue trigger is for ${topics.join(", ") || "nothing"}, not ${expected.topic}`);
    }
    if (lane.maxDuration !== expected.maxDurationSeconds) {
      problems.push(
        `${expected.path}'s maxDuration is ${lane.maxDuration ?? "unset"}, not ${expected.maxDurationSeconds}`,
      );
    }
    if (api && lane.maxDuration === api.maxDuration) {
      problems.push(`${expected.path}'s maxDuration is the API's, not its own`);
    }
    const got = queueTriggers[0]?.maxConcurrency;
    if (got !== concurrency[stage]) {
      problems.push(
        `${expected.path}'s trigger has maxConcurrency ${got ?? "unset"}, not ${concurrency[stage]} as configured`,
      );
    }
  }
  if (sweeper && sweeper.maxDuration !== VERCEL_FUNCTIONS.sweeper.maxDurationSeconds) {
    problems.push(
      `the sweeper's maxDuration is ${sweeper.maxDuration ?? "unset"}, not ${VERCEL_FUNCTIONS.sweeper.maxDurationSeconds}`,
    );
  }
  const configPath = join(output, "config.json");
  const crons = existsSync(configPath)
    ? ((JSON.parse(readFileSync(configPath, "utf8")) as { crons?: Array<{ path: string }> }).crons ?? [])
    : [];
  if (!crons.some((cron) => cron.path === SWEEPER_PATH)) problems.push(`config.json has no cron for ${SWEEPER_PATH}`);
  return problems;
}

/** Everything served statically must be a file of `publicDir`, and no source folder or dotfile. */
function checkStatic(staticDir: string, publicDir: string): string[] {
  const problems: string[] = [];
  for (const path of walk(staticDir)) {
    const top = path.split("/")[0]!;
    if (NEVER_STATIC.includes(top)) problems.push(`static/${path} is served: ${top}/ must never be public`);
    else if (path.split("/").some((segment) => segment.startsWith("."))) {
      problems.push(`static/${path} is served: dotfiles must never be public`);
    } else if (!existsSync(join(publicDir, path))) {
      problems.push(`static/${path} is served but is not in ${relative(process.cwd(), publicDir) || publicDir}/`);
    }
  }
  return problems;
}

/** Every file below `dir`, as paths relative to it ("/"-separated); nothing when it does not exist. */
function walk(dir: string, prefix = ""): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    return entry.isDirectory() ? walk(dir, path) : [path];
  });
}
