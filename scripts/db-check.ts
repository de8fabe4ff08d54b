import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";

// Fails when lib/db/schema.ts and the committed migrations in drizzle/ disagree:
// drizzle-kit generates into a scratch copy, and any new migration there is drift.
// drizzle-kit resolves --out against the working directory, so the scratch copy lives here.
const scratch = mkdtempSync(".db-check-");
try {
  cpSync("drizzle", scratch, { recursive: true });
  const before = readdirSync(scratch).length;
  const output = execFileSync(
    "npx",
    [
      "drizzle-kit",
      "generate",
      "--dialect",
      "postgresql",
      "--schema",
      "./lib/db/schema.ts",
      "--out",
      scratch,
      "--name",
      "drift",
    ],
    { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" },
  );
  const added = readdirSync(scratch).length - before;
  if (added === 0 && !output.includes("No schema changes")) {
    // drizzle-kit reports some failures with exit code 0; never read silence as agreement.
    console.error(`[db:check] drizzle-kit did not confirm the schema:\n${output}`);
    process.exitCode = 1;
  } else if (added > 0) {
    console.error(
      "[db:check] lib/db/schema.ts has changes with no migration: run `npm run db:generate -- --name <what-changed>` and commit drizzle/",
    );
    process.exitCode = 1;
  } else {
    console.log("[db:check] schema and migrations agree");
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
