import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

// `npm run build` (also `preworker`, so `npm run worker` always runs what the source says, and `vercel-build`,
// which Vercel runs before it traces the functions): bundles the lane worker and the Vercel functions' runtime
// into one ES module each, dist/worker.mjs and dist/vercel-runtime.mjs. Run from source, a worker spent most of
// its start resolving and type-stripping ~600 modules (Node re-parses a package's whole package.json `exports`
// for every module it resolves in that package: drizzle-orm's is 179 KB, read once per drizzle module), and a
// function's cold start the same; a bundle is one file. Packages imported lazily, by the processes that need
// them, stay outside it.

const REPO = fileURLToPath(new URL("..", import.meta.url));
export const DIST = "dist";

/** The bundles: name (dist/<name>.mjs) → entry point. */
export const ENTRY_POINTS = { worker: "app/worker.ts", "vercel-runtime": "app/vercel-runtime.ts" };

/**
 * Left out of the bundles and loaded from node_modules when, and only if, a process imports them: the embedded
 * database with its WebAssembly and data files (and drizzle's adapters for it), the mailer, the terminal log
 * format, Vercel's helpers, pg's optional native binding (never). Everything else is bundled, the packages
 * imported lazily too: esbuild evaluates a module reached by `import()` only when that runs, whereas an external
 * package that a bundled module imports statically is imported when the bundle starts.
 */
const EXTERNAL = [
  "@electric-sql/pglite",
  "drizzle-orm/pglite",
  "drizzle-orm/pglite/migrator",
  "nodemailer",
  "pino-pretty",
  "@vercel/functions",
  "pg-native",
];

/**
 * `import.meta.url` in our own source names the file it is written in (the migrations folder, the catalogue
 * are found relative to it); in a bundle it would name the bundle. Each use is rewritten to the source file's
 * URL, computed from the bundle's own at run time, so the bundle works wherever the checkout is.
 */
const sourceFileUrls: Plugin = {
  name: "source-file-urls",
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      if (args.path.includes("/node_modules/") || !source.includes("import.meta.url")) return undefined;
      const fromBundle = relative(`${REPO}${DIST}`, args.path).replaceAll("\\", "/");
      const url = `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`;
      return { contents: source.replaceAll("import.meta.url", url), loader: "ts" };
    });
  },
};

/**
 * Builds every bundle; returns the files it consists of. A file whose content did not change is left alone and
 * a changed one replaced by a rename, so workers started together (each `npm run worker` builds first) never
 * load a half-written bundle.
 */
export async function buildBundles(): Promise<string[]> {
  const result = await build({
    write: false,
    absWorkingDir: REPO,
    entryPoints: ENTRY_POINTS,
    outdir: DIST,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    external: EXTERNAL,
    // CommonJS packages in an ES module bundle still call require() for Node's built-ins.
    banner: {
      js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);',
    },
    plugins: [sourceFileUrls],
    sourcemap: "linked",
    legalComments: "linked",
    logLevel: "warning",
  });
  for (const file of result.outputFiles) {
    const current = await readFile(file.path).catch(() => undefined);
    if (current?.equals(file.contents)) continue;
    await mkdir(dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    await writeFile(temporary, file.contents);
    await rename(temporary, file.path);
  }
  return result.outputFiles.map((file) => relative(REPO, file.path));
}

if (import.meta.main) {
  const files = await buildBundles();
  if (!process.argv.includes("--quiet")) console.log(`[build] ${files.filter((f) => f.endsWith(".mjs")).join(", ")}`);
}
