// The v1a (ed25519) snippets in docs/receiving.md, run in their own languages against deliveries our signer signs
// with a key of a set, and checked against that set alone. Each snippet file stands in the guide exactly as here.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { generateKeyPairSync } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { generateWebhookSecret, signatureHeaders } from "../../lib/webhook/outbound/webhook-signature.ts";
import { has, unless } from "../../test/support/optional-tools.ts";
import { SAMPLE_EVENT_BODY } from "../../test/support/sample-delivery.ts";

const here = fileURLToPath(new URL(".", import.meta.url));
const guide = readFileSync(join(here, "..", "receiving.md"), "utf8");
const payload = SAMPLE_EVENT_BODY;

const pair = (kid: string) => {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x!;
  return { kid, key: privateKey, jwk: { kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig", kid, x } };
};
const current = pair("whk_current");
const retired = pair("whk_retired");
const jwks = { keys: [current.jwk] };

/** A delivery signed with a fresh v1 secret and, given a key, v1a by it. */
function signed(key?: { kid: string; key: ReturnType<typeof pair>["key"] }, secondsAgo = 0) {
  return signatureHeaders({
    scheme: "standard-webhooks",
    brand: "Hooklane",
    eventId: "evt_1",
    attempt: 1,
    payload,
    secrets: [generateWebhookSecret()],
    timestamp: Math.floor(Date.now() / 1_000) - secondsAgo,
    ed25519: key,
  }).headers;
}

interface Case {
  name: string;
  payload: string;
  headers: Record<string, string>;
  accepts?: string;
}

const cases: Case[] = [
  { name: "signed by the set's key", payload, headers: signed(current), accepts: "evt_1" },
  { name: "a tampered body", payload: payload.replace("pd_1", "pd_2"), headers: signed(current) },
  { name: "a key no longer in the set", payload, headers: signed(retired) },
  { name: "naming another key of the set", payload, headers: { ...signed(retired), "webhook-key-id": "whk_current" } },
  { name: "signed 10 minutes ago", payload, headers: signed(current, 600) },
  { name: "with v1 only", payload, headers: signed() },
];

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const input = JSON.stringify({ jwks, cases });
  const result = spawnSync(command, args, { ...options, input, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command} failed: ${result.error ?? result.stderr}`);
  return JSON.parse(result.stdout) as (string | null)[];
}

function expectVerdicts(verdicts: (string | null)[]) {
  expect(Object.fromEntries(cases.map((c, i) => [c.name, verdicts[i]]))).toEqual(
    Object.fromEntries(cases.map((c) => [c.name, c.accepts ?? null])),
  );
}

function expectInGuide(file: string, language: string) {
  expect(guide).toContain("```" + language + "\n" + readFileSync(join(here, file), "utf8") + "```");
}

const scratch: string[] = [];
afterAll(() => scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe("docs/receiving.md v1a snippets", () => {
  it("Node: receiveSignedByKey answers 202 for genuine deliveries and 400 for the rest", () => {
    expectInGuide("verify-v1a.mjs", "js");
    const harness = `
      import { receiveSignedByKey } from ${JSON.stringify(pathToFileURL(join(here, "verify-v1a.mjs")).href)};
      let input = "";
      for await (const chunk of process.stdin) input += chunk;
      const { jwks, cases } = JSON.parse(input);
      const verdicts = [];
      for (const c of cases) {
        let id = null;
        const request = new Request("http://127.0.0.1/hooks", { method: "POST", headers: c.headers, body: c.payload });
        const response = await receiveSignedByKey(request, jwks, (event) => { id = event.id; });
        verdicts.push(response.status === 202 ? id : response.status === 400 ? null : "status " + response.status);
      }
      console.log(JSON.stringify(verdicts));`;
    expectVerdicts(run(process.execPath, ["--input-type=module", "-e", harness], { cwd: here }));
  });

  const pythonTest = "Python: verify_v1a returns genuine events and raises for the rest";
  it.skipIf(!has("python3-cryptography"))(unless("python3-cryptography", pythonTest), () => {
    expectInGuide("verify_v1a.py", "python");
    const harness = `
import json, sys
sys.path.insert(0, ${JSON.stringify(here)})
from verify_v1a import verify_v1a, WebhookVerificationError
given = json.load(sys.stdin)
verdicts = []
for c in given["cases"]:
    try:
        verdicts.append(verify_v1a(c["payload"].encode(), c["headers"], given["jwks"])["id"])
    except WebhookVerificationError:
        verdicts.append(None)
print(json.dumps(verdicts))`;
    expectVerdicts(run("python3", ["-B", "-c", harness]));
  });

  const goTest = "Go: VerifyV1a returns genuine events and an ErrVerification for the rest";
  it.skipIf(!has("go"))(unless("go", goTest), () => {
    expectInGuide("verify_v1a.go", "go");
    const dir = mkdtempSync(join(tmpdir(), "hooklane-v1a-go-"));
    scratch.push(dir);
    mkdirSync(join(dir, "webhookkeys"));
    cpSync(join(here, "verify_v1a.go"), join(dir, "webhookkeys", "verify_v1a.go"));
    writeFileSync(join(dir, "go.mod"), "module snippet\n\ngo 1.18\n");
    writeFileSync(
      join(dir, "main.go"),
      `package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"

	"snippet/webhookkeys"
)

func main() {
	var given struct {
		Jwks  webhookkeys.KeySet
		Cases []struct {
			Payload string
			Headers map[string]string
		}
	}
	if err := json.NewDecoder(os.Stdin).Decode(&given); err != nil {
		panic(err)
	}
	verdicts := []*string{}
	for _, c := range given.Cases {
		header := http.Header{}
		for name, value := range c.Headers {
			header.Set(name, value)
		}
		event, err := webhookkeys.VerifyV1a([]byte(c.Payload), header, given.Jwks)
		if err != nil && !errors.Is(err, webhookkeys.ErrVerification) {
			panic(err)
		}
		if err != nil {
			verdicts = append(verdicts, nil)
			continue
		}
		var fields struct{ ID string }
		if err := json.Unmarshal(event, &fields); err != nil {
			panic(err)
		}
		verdicts = append(verdicts, &fields.ID)
	}
	json.NewEncoder(os.Stdout).Encode(verdicts)
}
`,
    );
    const env = { ...process.env, GOFLAGS: "-mod=mod", GOPROXY: "off", GOTOOLCHAIN: "local" };
    expectVerdicts(run("go", ["run", "."], { cwd: dir, env }));
  });
});
