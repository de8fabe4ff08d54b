import { execFileSync } from "node:child_process";
import { ConfigError, config } from "../lib/config/env.ts";
import { vercelLaneTimings } from "../lib/webhook/transport/vercel/vercel-queue-limits.ts";
import { buildBundles } from "./build.ts";

// Vercel's build step (`buildCommand` in vercel.ts; Vercel's Node builder also runs it before it traces the
// functions). It first builds the bundles (scripts/build.ts): the functions import dist/vercel-runtime.mjs
// (`#vercel-runtime`), so a cold start loads one module, not hundreds. On a deployment's build (VERCEL_ENV is set)
// it then checks the deployment's configuration as its functions will read it, and migrates its database, so the
// functions — which only verify the schema — never start against one that is behind. Any failure fails the
// build, and the deployment never goes live. Outside a deployment (`npm run vercel:check` builds offline) there is
// nothing to migrate. The output directory, public/, is already in place.
await buildBundles();
console.log("[vercel-build] bundles built");
if (!process.env.VERCEL_ENV) {
  console.log("[vercel-build] not a deployment's build (no VERCEL_ENV): no configuration to check, nothing to migrate");
} else {
  try {
    vercelLaneTimings(config());
  } catch (error) {
    console.error(`[vercel-build] ${error instanceof ConfigError ? error.message : error}`);
    process.exit(1);
  }
  try {
    execFileSync(process.execPath, ["scripts/db-migrate.ts"], { stdio: "inherit" });
  } catch {
    process.exit(1); // db:migrate said why
  }
}
