import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { callersAmong, contractions, lockingIndexes } from "../lib/db/migration-contractions.ts";

/**
 * `db:check`'s expand/contract rule: a migration after the baseline that
 * drops, renames or retypes something the release before it names (its
 * code at the commit that added the migration before this one) is refused,
 * naming the object and the files that still use it. Read from git in
 * `cwd`: without that history (a shallow clone) the check says so and fails
 * rather than pass unseen.
 */
export function contractProblems(cwd: string, folder = "drizzle"): string[] {
  const journal = JSON.parse(readFileSync(join(cwd, folder, "meta", "_journal.json"), "utf8")) as {
    entries: Array<{ tag: string }>;
  };
  const tags = journal.entries.map((entry) => entry.tag);
  const problems: string[] = [];
  for (let i = 1; i < tags.length; i++) {
    const migration = readFileSync(join(cwd, folder, `${tags[i]}.sql`), "utf8");
    for (const locking of lockingIndexes(migration)) {
      problems.push(
        `${tags[i]}: \`${locking.statement}\` builds ${locking.index} on ${locking.table}, a table an earlier migration ` +
          `made and that may be large, inside the migration's transaction (writes to it wait for the build): ` +
          `write CREATE INDEX CONCURRENTLY, which the migrator builds outside it`,
      );
    }
    const taken = contractions(migration);
    if (taken.length === 0) continue;
    const previous = `${folder}/${tags[i - 1]}.sql`;
    const release = history(cwd, previous);
    if (!release) {
      problems.push(`${tags[i]} takes something away, and git has no history of ${previous} to tell who used it`);
      continue;
    }
    for (const contraction of taken) {
      const holding = git(cwd, ["grep", "-l", "-w", "-F", "-e", contraction.name, release, "--"], true)
        .split("\n")
        .filter(Boolean)
        .map((line) => line.slice(release.length + 1));
      const callers = callersAmong(holding, contraction);
      if (callers.length === 0) continue;
      problems.push(
        `${tags[i]}: \`${contraction.statement}\` takes away the ${contraction.kind} ${contraction.name}, which the ` +
          `release before (${release.slice(0, 7)}) still uses in ${callers.join(", ")}: migrations only add; take it ` +
          `away one release after the last code using it is gone`,
      );
    }
  }
  return problems;
}

/** The commit that added `path`: the release before the migration that follows it; "" when git cannot say. */
function history(cwd: string, path: string): string {
  try {
    return git(cwd, ["log", "--diff-filter=A", "--format=%H", "-1", "--", path]).trim();
  } catch {
    return "";
  }
}

/** `git` in `cwd`; with `nothingIsFine`, exit code 1 (git grep found nothing) answers "". */
function git(cwd: string, args: string[], nothingIsFine = false): string {
  try {
    return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    if (nothingIsFine && (error as { status?: number }).status === 1) return "";
    throw error;
  }
}
