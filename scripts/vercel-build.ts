import { buildBundles } from "./build.ts";
import { migrateForDeployment } from "./deployment-migrate.ts";

// Vercel's build step (`buildCommand` in vercel.ts; Vercel's Node builder also runs it before it traces each
// function). It first builds the bundles (scripts/build.ts): the functions import dist/vercel-runtime.mjs
// (`#vercel-runtime`), so a cold start loads one module, not hundreds. On a deployment's build (VERCEL_ENV is set)
// it then checks the deployment's configuration as its functions will read it, and migrates its database once per
// build (a preview's only when MIGRATE_PREVIEW_DATABASE=true), so the functions — which only verify the schema —
// never start against one that is behind (scripts/deployment-migrate.ts). Any failure fails the build, and the
// deployment never goes live. The output directory, public/, is already in place.
await buildBundles();
console.log("[vercel-build] bundles built");
migrateForDeployment(process.env);
