// The verification snippets in docs/receiving.md, run in their own languages against deliveries our signer signs.
// Each snippet file must also stand in the guide exactly as it is here.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { SignatureScheme } from "../../lib/db/schema.ts";
import { generateWebhookSecret } from "../../lib/webhook/outbound/webhook-signature.ts";
import { has, unless } from "../../test/support/optional-tools.ts";
import { SAMPLE_EVENT_BODY, sampleDeliveryHeaders } from "../../test/support/sample-delivery.ts";

const here = fileURLToPath(new URL(".", import.meta.url));
const guide = readFileSync(join(here, "..", "receiving.md"), "utf8");
const secret = generateWebhookSecret();
const payload = SAMPLE_EVENT_BODY;

interface Case {
  name: string;
  payload: string;
  headers: Record<string, string>;
  secret: string;
  /** The event id a snippet must return, or undefined when it must refuse. */
  accepts?: string;
}

function signed(scheme: SignatureScheme, options: { secrets?: string[]; secondsAgo?: number } = {}) {
  const timestamp = Math.floor(Date.now() / 1_000) - (options.secondsAgo ?? 0);
  return sampleDeliveryHeaders({ scheme, secrets: options.secrets ?? [secret], timestamp });
}

const cases: Case[] = (["hooklane-v1", "standard-webhooks"] as const).flatMap((scheme) => [
  { name: `${scheme}`, payload, headers: signed(scheme), secret, accepts: "evt_1" },
  {
    name: `${scheme} during a rotation`,
    payload,
    headers: signed(scheme, { secrets: [generateWebhookSecret(), secret] }),
    secret,
    accepts: "evt_1",
  },
  { name: `${scheme} with a tampered body`, payload: payload.replace("pd_1", "pd_2"), headers: signed(scheme), secret },
  { name: `${scheme} with another secret`, payload, headers: signed(scheme), secret: generateWebhookSecret() },
  { name: `${scheme} signed 10 minutes ago`, payload, headers: signed(scheme, { secondsAgo: 600 }), secret },
  { name: `${scheme} with no signature headers`, payload, headers: { "Hooklane-Event-Id": "evt_1" }, secret },
]);

/** Runs `command` with the cases on stdin; it prints, for each, the accepted event id or null. */
function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const result = spawnSync(command, args, { ...options, input: JSON.stringify(cases), encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command} failed: ${result.error ?? result.stderr}`);
  return JSON.parse(result.stdout) as (string | null)[];
}

function expectVerdicts(verdicts: (string | null)[]) {
  expect(Object.fromEntries(cases.map((c, i) => [c.name, verdicts[i]]))).toEqual(
    Object.fromEntries(cases.map((c) => [c.name, c.accepts ?? null])),
  );
}

/** The snippet file, as the guide shows it in a block of `language`. */
function expectInGuide(file: string, language: string) {
  expect(guide).toContain("```" + language + "\n" + readFileSync(join(here, file), "utf8") + "```");
}

const scratch: string[] = [];
afterAll(() => scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe("docs/receiving.md snippets", () => {
  it("Node: receiveWebhook answers 202 for genuine deliveries and 400 for the rest", () => {
    expectInGuide("verify.mjs", "js");
    const harness = `
      import { receiveWebhook } from ${JSON.stringify(pathToFileURL(join(here, "verify.mjs")).href)};
      let input = "";
      for await (const chunk of process.stdin) input += chunk;
      const verdicts = [];
      for (const c of JSON.parse(input)) {
        let id = null;
        const request = new Request("http://127.0.0.1/hooks", { method: "POST", headers: c.headers, body: c.payload });
        const response = await receiveWebhook(request, c.secret, (event) => { id = event.id; });
        verdicts.push(response.status === 202 ? id : response.status === 400 ? null : "status " + response.status);
      }
      console.log(JSON.stringify(verdicts));`;
    // Run from the package, so that `hooklane/verify` resolves through package.json exports.
    expectVerdicts(run(process.execPath, ["--input-type=module", "-e", harness], { cwd: here }));
  });

  const pythonTest = "Python: verify_webhook returns genuine events and raises for the rest";
  it.skipIf(!has("python3"))(unless("python3", pythonTest), () => {
    expectInGuide("verify.py", "python");
    const harness = `
import json, sys
sys.path.insert(0, ${JSON.stringify(here)})
from verify import verify_webhook, WebhookVerificationError
verdicts = []
for c in json.load(sys.stdin):
    try:
        verdicts.append(verify_webhook(c["payload"].encode(), c["headers"], c["secret"])["id"])
    except WebhookVerificationError:
        verdicts.append(None)
print(json.dumps(verdicts))`;
    expectVerdicts(run("python3", ["-B", "-c", harness]));
  });

  const goTest = "Go: Verify returns genuine events and an ErrVerification for the rest";
  it.skipIf(!has("go"))(unless("go", goTest), () => {
    expectInGuide("verify.go", "go");
    const dir = mkdtempSync(join(tmpdir(), "hooklane-verify-go-"));
    scratch.push(dir);
    mkdirSync(join(dir, "webhooks"));
    cpSync(join(here, "verify.go"), join(dir, "webhooks", "verify.go"));
    writeFileSync(join(dir, "go.mod"), "module snippet\n\ngo 1.18\n");
    writeFileSync(
      join(dir, "main.go"),
      `package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"

	"snippet/webhooks"
)

func main() {
	var cases []struct {
		Payload string
		Headers map[string]string
		Secret  string
	}
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	verdicts := []*string{}
	for _, c := range cases {
		header := http.Header{}
		for name, value := range c.Headers {
			header.Set(name, value)
		}
		event, err := webhooks.Verify([]byte(c.Payload), header, c.Secret, "Hooklane")
		if err != nil && !errors.Is(err, webhooks.ErrVerification) {
			panic(err)
		}
		if err != nil {
			verdicts = append(verdicts, nil)
		} else {
			verdicts = append(verdicts, &event.ID)
		}
	}
	json.NewEncoder(os.Stdout).Encode(verdicts)
}
`,
    );
    // Standard library only: nothing to download, and nothing may be.
    const env = { ...process.env, GOFLAGS: "-mod=mod", GOPROXY: "off", GOTOOLCHAIN: "local" };
    expectVerdicts(run("go", ["run", "."], { cwd: dir, env }));
  });
});
