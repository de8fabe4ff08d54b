/**
 * Migrations only add: a deployment still serving (or an Instant Rollback,
 * or a queue message pinned to the deployment that sent it) runs the
 * previous release's code against the new schema. Taking something away is
 * the contract half of expand/contract: allowed only once no code of the
 * release before still names it. These are what a migration takes away.
 */
export interface Contraction {
  kind: "function" | "table" | "column" | "index" | "constraint";
  /** The object's name as code would spell it: unquoted, without its schema. */
  name: string;
  /** The statement's first line, for the message. */
  statement: string;
}

const PATTERNS: Array<[Contraction["kind"], RegExp]> = [
  ["function", /\bDROP\s+FUNCTION\s+(?:IF\s+EXISTS\s+)?([\w".]+)/gi],
  ["table", /\bDROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?([\w".]+)/gi],
  ["column", /\bDROP\s+COLUMN\s+(?:IF\s+EXISTS\s+)?([\w"]+)/gi],
  ["column", /\bRENAME\s+COLUMN\s+([\w"]+)\s+TO\b/gi],
  ["column", /\bALTER\s+COLUMN\s+([\w"]+)\s+(?:SET\s+DATA\s+)?TYPE\b/gi],
  ["table", /\bALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?([\w".]+)\s+RENAME\s+TO\b/gi],
  ["index", /\bDROP\s+INDEX\s+(?:CONCURRENTLY\s+)?(?:IF\s+EXISTS\s+)?([\w".]+)/gi],
  ["constraint", /\bDROP\s+CONSTRAINT\s+(?:IF\s+EXISTS\s+)?([\w"]+)/gi],
];

/** A migration's SQL without its comments, which are never read as statements. */
const withoutComments = (sql: string) => sql.replace(/--[^\n]*/g, "").replace(/\/\*[\s\S]*?\*\//g, "");

/** An object's name as code spells it: unquoted, without its schema. */
const bare = (name: string) => name.replaceAll('"', "").split(".").at(-1)!;

/** What the migration `sql` takes away, in the order written; comments are not read. */
export function contractions(sql: string): Contraction[] {
  const code = withoutComments(sql);
  const found: Array<Contraction & { at: number }> = [];
  for (const [kind, pattern] of PATTERNS) {
    for (const match of code.matchAll(pattern)) {
      const name = bare(match[1]!);
      const lineStart = code.lastIndexOf("\n", match.index) + 1;
      const lineEnd = code.indexOf("\n", match.index);
      const statement = code.slice(lineStart, lineEnd === -1 ? undefined : lineEnd).trim();
      found.push({ kind, name, statement, at: match.index });
    }
  }
  return found.sort((a, b) => a.at - b.at).map(({ at: _at, ...contraction }) => contraction);
}

/**
 * The product code of a release that names `name`: paths, given every path
 * of that release that holds the word. Tests, docs, migrations and a
 * function's own source file are not callers.
 */
export function callersAmong(paths: readonly string[], contraction: Contraction): string[] {
  return paths.filter(
    (path) =>
      /^(lib|app|api|scripts)\//.test(path) &&
      !/\.test\.ts$/.test(path) &&
      !(contraction.kind === "function" && path === `lib/db/functions/${contraction.name}.sql`),
  );
}

/** An index a migration builds in its transaction on a table it did not create: writes to that table wait meanwhile. */
export interface LockingIndex {
  index: string;
  table: string;
  statement: string;
}

/**
 * The `CREATE INDEX` statements of the migration `sql`, without
 * CONCURRENTLY, on a table the same migration does not create: on a large
 * table such a build holds writes for as long as it takes, and a
 * deployment's build runs it against the live database.
 */
export function lockingIndexes(sql: string): LockingIndex[] {
  const code = withoutComments(sql);
  const created = new Set(
    [...code.matchAll(/\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w".]+)/gi)].map((m) => bare(m[1]!)),
  );
  return [
    ...code.matchAll(
      /\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+(?!CONCURRENTLY\b)(?:IF\s+NOT\s+EXISTS\s+)?([\w"]+)\s+ON\s+(?:ONLY\s+)?([\w".]+)/gi,
    ),
  ]
    .filter((m) => !created.has(bare(m[2]!)))
    .map((m) => ({ index: bare(m[1]!), table: bare(m[2]!), statement: m[0]!.trim() }));
}
