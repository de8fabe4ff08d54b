import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { envVariables } from "../lib/config/env.ts";
import { LANE_ATTEMPT_OVERHEAD_MS } from "../lib/webhook/transport/vercel/vercel-queue-limits.ts";
import {
  LANE_CONCURRENCY,
  LANE_MAX_DURATION_SECONDS,
  SWEEPER_PATH,
  vercelProjectConfig,
} from "../lib/webhook/transport/vercel/vercel-project.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const GUIDE = read("docs/deploy.md");
/** Every `code span` of the guide. */
const SPANS = [...GUIDE.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);

/** Variables Vercel sets on its builds and functions: the guide names them, nothing of ours reads them all. */
const VERCEL_SYSTEM = new Set(["VERCEL", "VERCEL_ENV", "VERCEL_REGION", "VERCEL_DEPLOYMENT_ID", "VERCEL_OIDC_TOKEN"]);

/** Variables of another program the guide runs, by the file that reads them: not the server's, not in .env.example. */
const OTHER_PROGRAMS: Record<string, string> = { WEBHOOK_SECRET: "scripts/sample-receiver.ts" };

/** The project's own code, where a variable the guide names must be read. */
const CODE = ["lib/config/env.ts", "lib/webhook/transport/vercel/vercel-project.ts", "scripts/deployment-migrate.ts"]
  .map(read)
  .join("\n");

/**
 * docs/deploy.md walked against the code, step by step where a machine can
 * check it: every variable, command, file and link it names exists and
 * means what it says; the functions table, the limits and the ignore file
 * are the ones the build uses. What needs a Vercel account (the plan, OIDC,
 * the dashboard's cron and triggers, a deployed URL) is for a person.
 */
describe("docs/deploy.md", () => {
  it("names only environment variables the project reads, or Vercel sets, each in .env.example", () => {
    const names = new Set(
      SPANS.map((span) => /^([A-Z][A-Z0-9_]{2,})(=.*)?$/.exec(span)?.[1]).filter((n): n is string => !!n),
    );
    // Inline mentions, `NAME=value` and tables alike: at least the ones a deployment must set.
    for (const required of ["DATABASE_URL", "DATABASE_URL_UNPOOLED", "WEBHOOK_SECRET_KEY", "CRON_SECRET"]) {
      expect(names).toContain(required);
    }
    const example = read(".env.example");
    const problems: string[] = [];
    for (const name of names) {
      if (VERCEL_SYSTEM.has(name)) continue;
      if (OTHER_PROGRAMS[name]) {
        if (!read(OTHER_PROGRAMS[name]).includes(name)) problems.push(`${name} is not read by ${OTHER_PROGRAMS[name]}`);
        continue;
      }
      const known = name in envVariables.shape || new RegExp(`\\b${name}\\b`).test(CODE);
      if (!known) problems.push(`${name} is read by no code`);
      if (!new RegExp(`^#? ?${name}=`, "m").test(example)) problems.push(`${name} is not in .env.example`);
    }
    expect(problems).toEqual([]);
  });

  it("names only npm scripts package.json has", () => {
    const scripts = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts;
    const named = [...new Set([...GUIDE.matchAll(/npm run (?:-s )?([a-z][a-z:-]*)/g)].map((m) => m[1]!))];
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter((script) => !(script in scripts))).toEqual([]);
  });

  it("names only files and folders the repository holds, and links only to what exists", () => {
    const paths = SPANS.filter(
      (span) =>
        /^(api|app|lib|scripts|test|docs|drizzle|public|bench|drill)\/[^\s*<>]*$/.test(span) ||
        ["vercel.ts", ".vercelignore", ".env.example", "package.json"].includes(span),
    );
    expect(paths.length).toBeGreaterThan(15);
    // What runs write (benchmark and drill results) is named as what never ships, not as something that exists.
    const outputs = read(".vercelignore").split("\n");
    expect(paths.filter((path) => !existsSync(join(ROOT, path)) && !outputs.includes(path))).toEqual([]);
    const links = [...GUIDE.matchAll(/\]\(([^)#]+)(#[^)]*)?\)/g)].map((m) => m[1]!);
    expect(links.filter((link) => !existsSync(join(ROOT, "docs", link)))).toEqual([]);
    // The anchors of the guide's own sections it links to.
    for (const [, anchor] of GUIDE.matchAll(/\]\(#([^)]+)\)/g)) {
      expect(GUIDE.toLowerCase()).toMatch(new RegExp(`^#+ ${anchor!.replaceAll("-", "[ -]")}`, "m"));
    }
  });

  it("states the functions, their limits and their concurrency as the build makes them", () => {
    const config = vercelProjectConfig({});
    const rows = [...GUIDE.matchAll(/^\| `(api\/[^`]+\.ts)`\s*\|[^|]*\|\s*(\d+) s\s*\|\s*([^|]*)\|$/gm)];
    expect(rows.map((row) => row[1]).sort()).toEqual(Object.keys(config.functions).sort());
    for (const [, path, seconds, concurrency] of rows) {
      expect(config.functions[path!]!.maxDuration, path).toBe(Number(seconds));
      const trigger = config.functions[path!]!.experimentalTriggers?.[0];
      if (!trigger) continue;
      const stage = Object.values(LANE_CONCURRENCY).find((c) => concurrency!.includes(c.variable));
      expect(stage, `${path} names its concurrency variable`).toBeDefined();
      expect(concurrency).toContain(`(default ${stage!.default})`);
      expect(trigger.maxConcurrency).toBe(stage!.default);
    }
    expect(GUIDE).toContain(`\`${SWEEPER_PATH}\``);
    expect(config.crons).toEqual([{ path: SWEEPER_PATH, schedule: "* * * * *" }]);
    expect(GUIDE).toContain("`* * * * *`");
    expect(GUIDE).toContain(
      `\`WEBHOOK_TIMEOUT_MS\` may not exceed ${LANE_MAX_DURATION_SECONDS * 1_000 - LANE_ATTEMPT_OVERHEAD_MS}`,
    );
  });

  it("keeps out of an upload everything it says .vercelignore keeps out", () => {
    const ignored = read(".vercelignore")
      .split("\n")
      .filter((line) => line && !line.startsWith("#"));
    for (const entry of [".env", ".env.*", ".hooklane/", "bench/results/", "drill/results/"]) {
      expect(GUIDE).toContain(`\`${entry.replace(/\/$/, "")}`);
      expect(ignored).toContain(entry);
    }
  });

  it("is linked from where a reader starts", () => {
    expect(read("README.md")).toMatch(/\(docs\/deploy\.md(#[^)]*)?\)/);
  });
});
