// The receiving snippets of docs/receiving.md that go beyond the signature: receive() with GET /v3/events in Node,
// against the real API on loopback, and the receipts of Python and Go, each in its own language. Each snippet file
// must also stand in the guide exactly as it is here.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { serve } from "@hono/node-server";
import { eq } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../app/app.ts";
import { DEVELOPMENT_JWT_SECRET } from "../../lib/config/env.ts";
import { mintToken } from "../../lib/auth/jwt.ts";
import { webhookDispatch } from "../../lib/db/schema.ts";
import { signatureHeaders } from "../../lib/webhook/outbound/webhook-signature.ts";
import { eventToOneWebhook } from "../../test/support/event-to-one-webhook.ts";
import { pgliteFactory, startHarness } from "../../test/support/harness.ts";
import { has, unless } from "../../test/support/optional-tools.ts";

const here = fileURLToPath(new URL(".", import.meta.url));
const guide = readFileSync(join(here, "..", "receiving.md"), "utf8");

/** The snippet file, as the guide shows it in a block of `language`. */
function expectInGuide(file: string, language: string) {
  expect(guide).toContain("```" + language + "\n" + readFileSync(join(here, file), "utf8") + "```");
}

function run(command: string, args: string[], input: unknown, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const result = spawnSync(command, args, { ...options, input: JSON.stringify(input), encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command} failed: ${result.error ?? result.stderr}`);
  return JSON.parse(result.stdout) as unknown;
}

const scratch: string[] = [];
afterAll(() => scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** Two streams; a duplicate; a jump from 2 to 6, then the missing ones late; another stream's first gap; a test event. */
const RECEIPTS = [
  { stream: "wh_a", id: "evt_1", sequence: 1 },
  { stream: "wh_a", id: "evt_2", sequence: 2 },
  { stream: "wh_a", id: "evt_2", sequence: 2 },
  { stream: "wh_a", id: "evt_6", sequence: 6 },
  { stream: "wh_a", id: "evt_4", sequence: 4 },
  { stream: "wh_a", id: "evt_3", sequence: 3 },
  { stream: "wh_a", id: "evt_5", sequence: 5 },
  { stream: "wh_a", id: "evt_7", sequence: 7 },
  { stream: "wh_b", id: "evt_3", sequence: 3 },
  { stream: "wh_a", id: "evt_test", sequence: null },
];
const EXPECTED = [
  [true, null],
  [true, null],
  [false, null],
  [true, [3, 5]],
  [true, null],
  [true, null],
  [true, null],
  [true, null],
  [true, [1, 2]],
  [true, null],
];

describe("docs/receiving.md: missing nothing", () => {
  it("Node: receiveEvent takes each event once and catchUp fills a gap from GET /v3/events", async () => {
    expectInGuide("receive.mjs", "js");
    const harness = await startHarness(pgliteFactory, { lane: false });
    const server = serve({ fetch: createApp(harness.hooklane).fetch, hostname: "127.0.0.1", port: 0 });
    try {
      await new Promise((resolve) => server.once("listening", resolve));
      await harness.accounts("acc_docs");
      const created = await harness.call("POST", "/v3/webhooks", {
        account: "acc_docs",
        body: { url: "http://127.0.0.1:4000/hooks", events: ["*"] },
      });
      const { id: webhookId, secret } = created.body as { id: string; secret: string };
      const bodies: string[] = [];
      for (let i = 0; i < 6; i++) {
        const { id } = await eventToOneWebhook(harness, webhookId);
        const [row] = await harness.hooklane.database.db
          .select({ payload: webhookDispatch.payload })
          .from(webhookDispatch)
          .where(eq(webhookDispatch.id, id));
        bodies.push(row!.payload);
      }
      const deliver = (n: number) => ({
        payload: bodies[n - 1],
        headers: signatureHeaders({
          scheme: "hooklane-v1",
          brand: "Hooklane",
          eventId: JSON.parse(bodies[n - 1]!).id,
          attempt: 1,
          payload: bodies[n - 1]!,
          secrets: [secret],
          timestamp: Math.floor(Date.now() / 1_000),
        }).headers,
      });
      const input = {
        deliveries: [1, 2, 2, 6, 4].map(deliver),
        secret,
        webhookId,
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        token: await mintToken(DEVELOPMENT_JWT_SECRET, { sub: "docs", account: "acc_docs" }),
      };
      const script = `
        import { memoryReceiptStore } from "hooklane/verify";
        import { receiveEvent } from ${JSON.stringify(pathToFileURL(join(here, "receive.mjs")).href)};
        let text = "";
        for await (const chunk of process.stdin) text += chunk;
        const { deliveries, secret, webhookId, url, token } = JSON.parse(text);
        const store = memoryReceiptStore();
        const taken = [];
        const options = { secret, webhookId, store, enqueue: async (event) => { taken.push(event.sequence); }, api: { url, token, fetch } };
        const statuses = [];
        for (const d of deliveries) {
          const request = new Request("http://127.0.0.1/hooks", { method: "POST", headers: d.headers, body: d.payload });
          statuses.push((await receiveEvent(request, options)).status);
          // The gap's catch-up runs in the background: let it finish before the next delivery.
          for (let i = 0; i < 100 && taken.length < 6 && statuses.length === 4; i++) await new Promise((r) => setTimeout(r, 20));
        }
        console.log(JSON.stringify({ statuses, taken }));`;
      // The child calls the API on this process's server: run it without blocking this event loop.
      const child = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: here });
      child.stdin.end(JSON.stringify(input));
      let out = "";
      let err = "";
      child.stdout.on("data", (chunk) => (out += chunk));
      child.stderr.on("data", (chunk) => (err += chunk));
      const code = await new Promise((resolve) => child.on("close", resolve));
      expect(code, err).toBe(0);
      expect(JSON.parse(out)).toEqual({ statuses: [202, 202, 200, 202, 200], taken: [1, 2, 6, 3, 4, 5] });
    } finally {
      server.close();
      await harness.close();
    }
  });

  const pythonTest = "Python: Receipts.record takes each event once and names each gap";
  it.skipIf(!has("python3"))(unless("python3", pythonTest), () => {
    expectInGuide("receipts.py", "python");
    const script = `
import json, sys
sys.path.insert(0, ${JSON.stringify(here)})
from receipts import Receipts
receipts = Receipts()
answers = []
for r in json.load(sys.stdin):
    event = {"id": r["id"]}
    if r["sequence"] is not None:
        event["sequence"] = r["sequence"]
    first, gap = receipts.record(r["stream"], event)
    answers.append([first, list(gap) if gap else None])
print(json.dumps(answers))`;
    expect(run("python3", ["-B", "-c", script], RECEIPTS)).toEqual(EXPECTED);
  });

  const goTest = "Go: Receipts.Record takes each event once and names each gap";
  it.skipIf(!has("go"))(unless("go", goTest), () => {
    expectInGuide("receipts.go", "go");
    const dir = mkdtempSync(join(tmpdir(), "hooklane-receipts-go-"));
    scratch.push(dir);
    mkdirSync(join(dir, "webhooks"));
    cpSync(join(here, "verify.go"), join(dir, "webhooks", "verify.go"));
    cpSync(join(here, "receipts.go"), join(dir, "webhooks", "receipts.go"));
    writeFileSync(join(dir, "go.mod"), "module snippet\n\ngo 1.18\n");
    writeFileSync(
      join(dir, "main.go"),
      `package main

import (
	"encoding/json"
	"os"

	"snippet/webhooks"
)

func main() {
	var receipts []struct {
		Stream   string
		ID       string
		Sequence *int64
	}
	if err := json.NewDecoder(os.Stdin).Decode(&receipts); err != nil {
		panic(err)
	}
	r := webhooks.NewReceipts()
	answers := [][]any{}
	for _, c := range receipts {
		var sequence int64
		if c.Sequence != nil {
			sequence = *c.Sequence
		}
		first, gap := r.Record(c.Stream, c.ID, sequence)
		if gap == nil {
			answers = append(answers, []any{first, nil})
		} else {
			answers = append(answers, []any{first, []int64{gap.From, gap.To}})
		}
	}
	json.NewEncoder(os.Stdout).Encode(answers)
}
`,
    );
    const env = { ...process.env, GOFLAGS: "-mod=mod", GOPROXY: "off", GOTOOLCHAIN: "local" };
    expect(run("go", ["run", "."], RECEIPTS, { cwd: dir, env })).toEqual(EXPECTED);
  });
});
