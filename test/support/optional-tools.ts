import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/**
 * What some suites need beyond `npm install`, each with why a suite is
 * skipped without it. `npm test` runs everything else; `.ci/run` installs
 * all of them, so CI runs every suite. `HOOKLANE_TEST_WITHOUT=chromium,go,python3,python3-cryptography`
 * pretends a tool is missing, to check that `npm test` still passes without it.
 */
const pretendMissing = new Set((process.env.HOOKLANE_TEST_WITHOUT ?? "").split(",").map((name) => name.trim()));

/** Debian's chromium: Playwright's own browser downloads are not used (`.ci/run` installs this one). */
export const CHROMIUM = "/usr/bin/chromium";

const runs = (command: string, args: string[]) => {
  const result = spawnSync(command, args, { stdio: "ignore" });
  return result.error === undefined && result.status === 0;
};

export const OPTIONAL_TOOLS = {
  chromium: {
    present: !pretendMissing.has("chromium") && existsSync(CHROMIUM),
    skips: "the browser suites (test/browser)",
    install: "apt-get install chromium",
  },
  python3: {
    present: !pretendMissing.has("python3") && runs("python3", ["--version"]),
    skips: "the Python signature snippets",
    install: "apt-get install python3",
  },
  "python3-cryptography": {
    present: !pretendMissing.has("python3-cryptography") && runs("python3", ["-c", "import cryptography"]),
    skips: "the Python v1a (ed25519) snippet",
    install: "apt-get install python3-cryptography",
  },
  go: {
    present: !pretendMissing.has("go") && runs("go", ["version"]),
    skips: "the Go signature snippets",
    install: "apt-get install golang-go",
  },
} as const;

export type OptionalTool = keyof typeof OPTIONAL_TOOLS;

/** Whether `tool` is here. */
export const has = (tool: OptionalTool): boolean => OPTIONAL_TOOLS[tool].present;

/** A test's title, with why it is skipped when `tool` is missing. */
export const unless = (tool: OptionalTool, title: string): string =>
  has(tool) ? title : `${title} (skipped: no ${tool} on this machine)`;
