import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { generateWebhookSecret, signatureHeaders } from "../../lib/webhook/outbound/webhook-signature.ts";
import { has, unless } from "../../test/support/optional-tools.ts";
import { VERIFY_SNIPPETS } from "./verify-signature-guide.ts";

const folder = mkdtempSync(join(tmpdir(), "hooklane-verify-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

// Each snippet, with a few lines that read the case from the environment and print true or false.
const RUNNERS = {
  node: {
    file: "verify.mjs",
    source: `${VERIFY_SNIPPETS.node}\nprocess.stdout.write(String(verifyHooklaneSignature(process.env.BODY, process.env.SIGNATURE, process.env.SECRET)));\n`,
    command: (file: string) => [process.execPath, file],
  },
  python: {
    file: "verify.py",
    source: `${VERIFY_SNIPPETS.python}\nimport os\nprint(str(verify_hooklane_signature(os.environb[b"BODY"], os.environ["SIGNATURE"], os.environ["SECRET"])).lower(), end="")\n`,
    command: (file: string) => ["python3", file],
  },
  go: {
    file: "verify.go",
    source:
      `package main\n\n${VERIFY_SNIPPETS.go}\nfunc main() {\n\tfmt.Print(VerifyHooklaneSignature([]byte(os.Getenv("BODY")), os.Getenv("SIGNATURE"), os.Getenv("SECRET"), 5*time.Minute))\n}\n`.replace(
        "import (",
        'import (\n\t"fmt"\n\t"os"',
      ),
    command: (file: string) => ["go", "run", file],
  },
} as const;

const TOOL = { node: undefined, python: "python3", go: "go" } as const;

describe("the verify-a-signature guide's snippets", () => {
  const payload = JSON.stringify({ id: "evt_guide", type: "webhook.test", data: { object: "webhook", id: "wh_1" } });
  const secret = generateWebhookSecret();
  const sign = (timestamp: number, secrets = [secret]) =>
    signatureHeaders({
      scheme: "hooklane-v1",
      brand: "Hooklane",
      eventId: "evt_guide",
      attempt: 1,
      payload,
      secrets,
      timestamp,
    }).headers["Hooklane-Signature"]!;
  const now = Math.floor(Date.now() / 1_000);
  const cases: Array<[string, { body: string; signature: string }, string]> = [
    ["a real signature", { body: payload, signature: sign(now) }, "true"],
    [
      "one of two during a rotation",
      { body: payload, signature: sign(now, [generateWebhookSecret(), secret]) },
      "true",
    ],
    ["a changed body", { body: payload.replace("wh_1", "wh_2"), signature: sign(now) }, "false"],
    ["another secret", { body: payload, signature: sign(now, [generateWebhookSecret()]) }, "false"],
    ["a timestamp 10 minutes old", { body: payload, signature: sign(now - 600) }, "false"],
  ];

  for (const [language, runner] of Object.entries(RUNNERS)) {
    const tool = TOOL[language as keyof typeof TOOL];
    const title = `${language}: accepts what hooklane signs, refuses the rest`;
    it.skipIf(tool !== undefined && !has(tool))(tool === undefined ? title : unless(tool, title), () => {
      const file = join(folder, runner.file);
      writeFileSync(file, runner.source);
      const [command, ...args] = runner.command(file);
      for (const [what, input, expected] of cases) {
        const run = spawnSync(command!, args, {
          env: { ...process.env, BODY: input.body, SIGNATURE: input.signature, SECRET: secret },
          encoding: "utf8",
        });
        expect(run.stderr, `${language}, ${what}`).toBe("");
        expect(run.stdout, `${language}, ${what}`).toBe(expected);
      }
    });
  }
});
