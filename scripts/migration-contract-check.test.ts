import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { contractions, lockingIndexes } from "../lib/db/migration-contractions.ts";
import { contractProblems } from "./migration-contract-check.ts";

describe("indexes a migration builds inside its transaction", () => {
  it("names a plain CREATE INDEX on a table an earlier migration made, not a concurrent one or a new table's", () => {
    const sql = [
      'CREATE TABLE "fresh" ("id" text PRIMARY KEY, "at" timestamptz);',
      'CREATE INDEX "fresh_at_idx" ON "fresh" USING btree ("at");',
      'CREATE UNIQUE INDEX IF NOT EXISTS "webhook_dispatch_key_idx" ON "webhook_dispatch" ("event_id", "webhook_id");',
      'CREATE INDEX CONCURRENTLY "webhook_dispatch_created_idx" ON "webhook_dispatch" ("created_at");',
      "-- CREATE INDEX in_a_comment ON webhook (x);",
    ].join("\n--> statement-breakpoint\n");
    expect(lockingIndexes(sql).map((l) => [l.index, l.table])).toEqual([
      ["webhook_dispatch_key_idx", "webhook_dispatch"],
    ]);
  });
});

describe("what a migration takes away", () => {
  it("reads drops, renames and retypes, not comments or additions", () => {
    const sql = [
      "-- DROP FUNCTION hooklane_in_a_comment();",
      'DROP FUNCTION IF EXISTS "public"."hooklane_claim_dispatches"(text, integer) CASCADE;',
      "ALTER TABLE webhook DROP COLUMN IF EXISTS legacy_flag;",
      'ALTER TABLE "webhook" RENAME COLUMN "url" TO "endpoint";',
      'ALTER TABLE "webhook" ALTER COLUMN "events" SET DATA TYPE jsonb;',
      "DROP INDEX CONCURRENTLY IF EXISTS webhook_dispatch_due_idx;",
      "ALTER TABLE webhook_dispatch DROP CONSTRAINT webhook_dispatch_webhook_id_fk;",
      "DROP TABLE webhook_old;",
      "ALTER TABLE webhook ADD COLUMN note text;",
      "CREATE INDEX IF NOT EXISTS webhook_note_idx ON webhook (note);",
    ].join("\n--> statement-breakpoint\n");
    expect(contractions(sql).map((c) => [c.kind, c.name])).toEqual([
      ["function", "hooklane_claim_dispatches"],
      ["column", "legacy_flag"],
      ["column", "url"],
      ["column", "events"],
      ["index", "webhook_dispatch_due_idx"],
      ["constraint", "webhook_dispatch_webhook_id_fk"],
      ["table", "webhook_old"],
    ]);
  });
});

/** A repository of releases, each a commit: its files, and the migration it ships. */
describe("db:check's expand/contract rule, on a git history", () => {
  const repos: string[] = [];
  afterEach(() => {
    for (const repo of repos.splice(0)) rmSync(repo, { recursive: true, force: true });
  });

  function repository(): {
    dir: string;
    release(files: Record<string, string | null>, tag: string, sql: string): void;
  } {
    const dir = mkdtempSync(join(tmpdir(), "hooklane-contract-"));
    repos.push(dir);
    const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
    git("init", "-q");
    const tags: string[] = [];
    return {
      dir,
      release(files, tag, sql) {
        tags.push(tag);
        const all = {
          ...files,
          [`drizzle/${tag}.sql`]: sql,
          "drizzle/meta/_journal.json": JSON.stringify({ entries: tags.map((t) => ({ tag: t })) }),
        };
        for (const [path, text] of Object.entries(all)) {
          if (text === null) rmSync(join(dir, path));
          else {
            mkdirSync(dirname(join(dir, path)), { recursive: true });
            writeFileSync(join(dir, path), text);
          }
        }
        git("add", "-A");
        git("-c", "user.name=ci", "-c", "user.email=ci@localhost", "commit", "-q", "-m", tag);
      },
    };
  }

  /** The first release: a function with its source, and code that calls it. */
  const oldClaimRelease = (repo: ReturnType<typeof repository>) =>
    repo.release(
      {
        "lib/db/functions/hooklane_old_claim.sql": "CREATE FUNCTION hooklane_old_claim() ...",
        "lib/db/sql/claim.ts": "await db.rows(sql`select hooklane_old_claim()`);",
      },
      "0000_baseline",
      "CREATE FUNCTION hooklane_old_claim() RETURNS void LANGUAGE sql AS $$ $$;",
    );

  it("refuses dropping a function the release before still calls, naming the caller", () => {
    const repo = repository();
    oldClaimRelease(repo);
    // The next release stops calling it and drops it in the same migration: the release still serving calls it.
    repo.release(
      { "lib/db/sql/claim.ts": "await db.rows(sql`select hooklane_new_claim()`);" },
      "0001_new-claim",
      "DROP FUNCTION IF EXISTS hooklane_old_claim CASCADE;",
    );
    const problems = contractProblems(repo.dir);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^0001_new-claim: `DROP FUNCTION IF EXISTS hooklane_old_claim CASCADE;` takes away the function hooklane_old_claim, which the release before \([0-9a-f]{7}\) still uses in lib\/db\/sql\/claim\.ts: migrations only add/,
    );
  });

  it("allows the drop one release after the last caller went; tests, docs and its own source do not count", () => {
    const repo = repository();
    oldClaimRelease(repo);
    repo.release(
      {
        "lib/db/sql/claim.ts": "await db.rows(sql`select hooklane_new_claim()`);",
        "lib/db/sql/claim.test.ts": "// hooklane_old_claim is gone",
        "docs/history.md": "hooklane_old_claim was the claim",
      },
      "0001_new-claim",
      "CREATE FUNCTION hooklane_new_claim() RETURNS void LANGUAGE sql AS $$ $$;",
    );
    repo.release(
      { "lib/db/functions/hooklane_old_claim.sql": null },
      "0002_drop-old-claim",
      "DROP FUNCTION IF EXISTS hooklane_old_claim CASCADE;",
    );
    expect(contractProblems(repo.dir)).toEqual([]);
  });

  it("refuses what it cannot check: a migration that takes something away with no history before it", () => {
    const repo = repository();
    repo.release({}, "0000_baseline", "CREATE TABLE t (a int);");
    repo.release({}, "0001_drop", "ALTER TABLE t DROP COLUMN a;");
    // As a shallow clone would have it: the first migration's commit is not there.
    rmSync(join(repo.dir, ".git"), { recursive: true, force: true });
    execFileSync("git", ["init", "-q"], { cwd: repo.dir });
    expect(contractProblems(repo.dir)).toEqual([
      "0001_drop takes something away, and git has no history of drizzle/0000_baseline.sql to tell who used it",
    ]);
  });
});
