// The consent snippets in docs/receiving.md, each serving on loopback in its own language, asked by the sender's
// own consent request and judged as the sender judges it. Each snippet file stands in the guide exactly as here.
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ALLOWED_ORIGIN, judgeConsent } from "../../lib/webhook/outbound/endpoint-consent.ts";
import { createHttpSender } from "../../lib/webhook/outbound/webhook-http-sender.ts";
import { has, unless } from "../../test/support/optional-tools.ts";

const here = fileURLToPath(new URL(".", import.meta.url));
const guide = readFileSync(join(here, "..", "receiving.md"), "utf8");
const SENDER = "hooklane";

function expectInGuide(file: string, language: string) {
  expect(guide).toContain("```" + language + "\n" + readFileSync(join(here, file), "utf8") + "```");
}

const sender = createHttpSender({ timeoutMs: 10_000, connectionsPerOrigin: 1, allowedHosts: ["127.0.0.1"] });
const children: ChildProcess[] = [];
const scratch: string[] = [];
afterAll(async () => {
  children.forEach((child) => child.kill());
  scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
  await sender.close();
});

/**
 * What the endpoint at `url` makes of the consent request (as the sender's sweeper sends it) from us, from a sender
 * it does not know, and of a POST: consent only for us.
 */
async function expectConsentOnlyForUs(url: string) {
  const ask = async (origin: string) => {
    const answer = await sender.options(url, { "webhook-request-origin": origin }, [ALLOWED_ORIGIN]);
    return judgeConsent(answer.outcome, answer.headers, origin);
  };
  expect(await ask(SENDER)).toEqual({ granted: true });
  expect(await ask("HookLane")).toEqual({ granted: true });
  expect(await ask("intruder.example")).toEqual({
    granted: false,
    error: "answered HTTP 403: not the consent answer",
  });
  // Anything else reaches the handler the snippet stands in front of (here: 204).
  expect(await sender.post(url, { "content-type": "application/json" }, "{}")).toMatchObject({ statusCode: 204 });
}

/** Starts `command` serving on a loopback port it prints on its first line. */
async function serve(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    let stdout = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split("\n")[0];
      if (stdout.includes("\n")) resolve(Number(line));
    });
    child.on("exit", (code) => reject(new Error(`${command} exited ${code}: ${stderr}`)));
  });
  return `http://127.0.0.1:${port}/hooks`;
}

describe("docs/receiving.md consent snippets", () => {
  it("Node: answerConsent consents to the sender it names and to no other", async () => {
    expectInGuide("consent.mjs", "js");
    const { answerConsent } = (await import(pathToFileURL(join(here, "consent.mjs")).href)) as {
      answerConsent(request: Request, sender: string): Response | null;
    };
    // A node:http server in front of the Fetch-style snippet, as a framework would put it.
    const server = createServer((incoming, outgoing) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(incoming.headers))
        if (typeof value === "string") headers.set(name, value);
      const answer = answerConsent(
        new Request("http://127.0.0.1/hooks", { method: incoming.method!, headers }),
        SENDER,
      );
      if (!answer) {
        outgoing.writeHead(204).end();
        return;
      }
      outgoing.writeHead(answer.status, Object.fromEntries(answer.headers)).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      await expectConsentOnlyForUs(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  const pythonTest = "Python: answer_consent consents to the sender it names and to no other";
  it.skipIf(!has("python3"))(unless("python3", pythonTest), async () => {
    expectInGuide("consent.py", "python");
    const server = `
import sys
sys.path.insert(0, ${JSON.stringify(here)})
from http.server import BaseHTTPRequestHandler, HTTPServer
from consent import answer_consent

class Handler(BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        answered = answer_consent(self.command, self.headers, ${JSON.stringify(SENDER)})
        status, headers = answered if answered else (204, {})
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_OPTIONS = answer
    do_POST = answer
    def log_message(self, *args):
        pass

httpd = HTTPServer(("127.0.0.1", 0), Handler)
print(httpd.server_address[1], flush=True)
httpd.serve_forever()`;
    await expectConsentOnlyForUs(await serve("python3", ["-B", "-c", server]));
  });

  const goTest = "Go: AnswerConsent consents to the sender it names and to no other";
  it.skipIf(!has("go"))(
    unless("go", goTest),
    async () => {
      expectInGuide("consent.go", "go");
      const dir = mkdtempSync(join(tmpdir(), "hooklane-consent-go-"));
      scratch.push(dir);
      mkdirSync(join(dir, "webhookconsent"));
      cpSync(join(here, "consent.go"), join(dir, "webhookconsent", "consent.go"));
      writeFileSync(join(dir, "go.mod"), "module snippet\n\ngo 1.18\n");
      writeFileSync(
        join(dir, "main.go"),
        `package main

import (
	"fmt"
	"net"
	"net/http"

	"snippet/webhookconsent"
)

func main() {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(listener.Addr().(*net.TCPAddr).Port)
	http.Serve(listener, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if webhookconsent.AnswerConsent(w, r, ${JSON.stringify(SENDER)}) {
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
}
`,
      );
      const env = { ...process.env, GOFLAGS: "-mod=mod", GOPROXY: "off", GOTOOLCHAIN: "local" };
      await expectConsentOnlyForUs(await serve("go", ["run", "."], { cwd: dir, env }));
    },
    120_000,
  );
});
