import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { VERCEL_FUNCTIONS } from "../lib/webhook/transport/vercel/vercel-project.ts";
import { checkVercelOutput, NEVER_STATIC } from "./vercel-output-check.ts";

/** The concurrency the tests' builds were configured with. */
const CONCURRENCY = { route: 12, deliver: 200 };

/** A build output shaped as `vercel build` writes it for this project, fit to ship. */
function fitDeployment(): { output: string; publicDir: string; root: string } {
  const root = mkdtempSync(join(tmpdir(), "vercel-output-"));
  const put = (path: string, content: unknown) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), typeof content === "string" ? content : JSON.stringify(content));
  };
  const fn = (path: string, config: object) => {
    const dir = `output/functions/${path.replace(/\.ts$/, ".func")}`;
    put(`${dir}/.vc-config.json`, { runtime: "nodejs24.x", ...config });
    put(`${dir}/drizzle/meta/_journal.json`, { entries: [] });
    put(`${dir}/dist/vercel-runtime.mjs`, "export {};\n");
  };
  fn("api/index.ts", { maxDuration: 30 });
  for (const stage of ["route", "deliver"] as const) {
    const lane = VERCEL_FUNCTIONS[stage];
    fn(lane.path, {
      maxDuration: lane.maxDurationSeconds,
      experimentalTriggers: [{ type: "queue/v2beta", topic: lane.topic, maxConcurrency: CONCURRENCY[stage] }],
    });
  }
  fn(VERCEL_FUNCTIONS.sweeper.path, { maxDuration: VERCEL_FUNCTIONS.sweeper.maxDurationSeconds });
  put("output/config.json", { crons: [{ path: "/api/cron/webhook-sweeper", schedule: "* * * * *" }] });
  put("public/robots.txt", "User-agent: *\nDisallow: /\n");
  put("output/static/robots.txt", "User-agent: *\nDisallow: /\n");
  return { output: join(root, "output"), publicDir: join(root, "public"), root };
}

describe("checkVercelOutput", () => {
  const made: string[] = [];
  const deployment = () => {
    const d = fitDeployment();
    made.push(d.root);
    return d;
  };
  afterEach(() => {
    for (const root of made.splice(0)) rmSync(root, { recursive: true, force: true });
  });

  it("passes a deployment that serves only public/", () => {
    const { output, publicDir } = deployment();
    expect(checkVercelOutput(output, publicDir, CONCURRENCY)).toEqual([]);
  });

  it.each(NEVER_STATIC)("fails when %s/ is served as static files", (folder) => {
    const { output, publicDir } = deployment();
    mkdirSync(join(output, "static", folder), { recursive: true });
    writeFileSync(join(output, "static", folder, "file.ts"), "export {};");
    expect(checkVercelOutput(output, publicDir, CONCURRENCY)).toEqual([
      `static/${folder}/file.ts is served: ${folder}/ must never be public`,
    ]);
  });

  it("fails on a dotfile anywhere, even one public/ holds", () => {
    const { output, publicDir } = deployment();
    for (const dir of [join(output, "static"), publicDir]) {
      mkdirSync(join(dir, "well-known"), { recursive: true });
      writeFileSync(join(dir, "well-known", ".env"), "SECRET=1");
    }
    writeFileSync(join(output, "static", ".prettierrc.json"), "{}");
    expect(checkVercelOutput(output, publicDir, CONCURRENCY).sort()).toEqual([
      "static/.prettierrc.json is served: dotfiles must never be public",
      "static/well-known/.env is served: dotfiles must never be public",
    ]);
  });

  it("fails on any served file public/ does not hold", () => {
    const { output, publicDir } = deployment();
    writeFileSync(join(output, "static", "ARCHITECTURE.md"), "# Architecture");
    expect(checkVercelOutput(output, publicDir, CONCURRENCY)).toEqual([
      expect.stringMatching(/^static\/ARCHITECTURE\.md is served but is not in .*public\/$/),
    ]);
  });

  it("fails when a lane function's trigger, limits or journal differ from what the product states", () => {
    const { output, publicDir } = deployment();
    const deliver = VERCEL_FUNCTIONS.deliver;
    const lane = join(output, "functions", deliver.path.replace(/\.ts$/, ".func"));
    writeFileSync(
      join(lane, ".vc-config.json"),
      JSON.stringify({
        runtime: "nodejs22.x",
        maxDuration: 30,
        experimentalTriggers: [{ type: "queue/v2beta", topic: "webhook-out-*" }],
      }),
    );
    rmSync(join(lane, "drizzle"), { recursive: true });
    rmSync(join(lane, "dist"), { recursive: true });
    expect(checkVercelOutput(output, publicDir, CONCURRENCY)).toEqual([
      `${deliver.path} runs on nodejs22.x, not nodejs24.x`,
      `${deliver.path} does not carry drizzle/meta/_journal.json, which its schema check reads`,
      `${deliver.path} does not carry dist/vercel-runtime.mjs, the bundle it runs`,
      `${deliver.path}'s queue trigger is for webhook-out-*, not webhook-out-deliver`,
      `${deliver.path}'s maxDuration is 30, not ${deliver.maxDurationSeconds}`,
      `${deliver.path}'s maxDuration is the API's, not its own`,
      `${deliver.path}'s trigger has maxConcurrency unset, not 200 as configured`,
    ]);
  });

  it("fails when a build's concurrency is not the one configured", () => {
    const { output, publicDir } = deployment();
    expect(checkVercelOutput(output, publicDir, { route: 12, deliver: 50 })).toEqual([
      `${VERCEL_FUNCTIONS.deliver.path}'s trigger has maxConcurrency 200, not 50 as configured`,
    ]);
  });
});
