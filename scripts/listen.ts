// Forwards a listen session's deliveries to a local receiver: no public URL, no allowlist entry.
// npm run listen -- --forward-to http://localhost:4000/hooks [--events a,b] [--scheme standard-webhooks]
//                   [--header "X-Api-Key: dev"]… [--api http://localhost:3000] [--token <jwt>]
//                   (or HOOKLANE_API, HOOKLANE_TOKEN)
import { parseArgs } from "node:util";
import { EventSourceParserStream } from "eventsource-parser/stream";
import { backoffMs, type Backoff } from "../lib/backoff.ts";
import { listenDeliverySchema, type ListenDelivery, type ListenReport } from "../lib/webhook/listen/listen-messages.ts";
import type { DeliveryOutcome } from "../lib/webhook/outbound/webhook-delivery-outcome.ts";
import { createHttpSender } from "../lib/webhook/outbound/webhook-http-sender.ts";
import { postSigned } from "../lib/webhook/outbound/webhook-out-deliver.handler.ts";

const usage =
  'usage: npm run listen -- --forward-to <url> [--events a,b] [--scheme hooklane-v1|standard-webhooks] [--header "Name: value"]… [--api <url>] [--token <jwt>]';
/** Reconnecting the stream, and re-sending a report the API did not take. */
const RECONNECT: Backoff = { baseMs: 250, maxMs: 5_000, jitter: 0.2 };
const REPORT_TRIES = 5;

let values;
try {
  ({ values } = parseArgs({
    options: {
      "forward-to": { type: "string" },
      events: { type: "string", default: "*" },
      scheme: { type: "string", default: "hooklane-v1" },
      header: { type: "string", multiple: true, default: [] },
      api: { type: "string", default: process.env.HOOKLANE_API ?? "http://localhost:3000" },
      token: { type: "string", default: process.env.HOOKLANE_TOKEN },
    },
  }));
} catch (error) {
  fail(`${(error as Error).message}\n${usage}`, 2);
}
const forwardTo = URL.parse(values["forward-to"] ?? "");
if (!forwardTo || !/^https?:$/.test(forwardTo.protocol)) fail(`--forward-to must be an http(s) URL\n${usage}`, 2);
if (!values.token) {
  fail(`--token (or HOOKLANE_TOKEN) is required; on a laptop: --token $(npm run -s token -- --account <id>)`, 2);
}
// Sent on every delivery, as a webhook's own headers are (the API refuses the names a delivery owns).
const headers: Record<string, string> = {};
for (const header of values.header) {
  const colon = header.indexOf(":");
  if (colon < 1) fail(`--header must be "Name: value", not ${JSON.stringify(header)}\n${usage}`, 2);
  headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
}
const api = values.api.replace(/\/+$/, "");
const authorization = `Bearer ${values.token}`;

const created = await call("POST", "/v3/listen-sessions", {
  forwardTo: forwardTo.href,
  events: values.events.split(",").map((name) => name.trim()),
  scheme: values.scheme,
  headers,
}).catch((error: unknown) => fail(`the API at ${api} is unreachable: ${(error as Error).message}`, 1));
if (created.status !== 201) fail(`the session was not created: ${problemText(created.body)}`, 1);
const session = created.body as { id: string; secret: string; events: string[] };
console.log(`Your webhook signing secret is ${session.secret}  (session ${session.id})`);

// The same sender the lane uses: 10 s deadline, no redirects followed, bounded answers; the local host is trusted.
const sender = createHttpSender({ timeoutMs: 10_000, connectionsPerOrigin: 16, allowedHosts: [forwardTo.hostname] });
const stopping = new AbortController();
let ending: Promise<void> | undefined;
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => void (ending ??= end(0)));

await listen();

/** Holds the stream open, reconnecting with backoff, until the session is over or the CLI stops. */
async function listen(): Promise<void> {
  let failures = 0;
  let connected = false;
  while (!stopping.signal.aborted) {
    try {
      const response = await fetch(`${api}/v3/listen-sessions/${session.id}/stream`, {
        headers: { authorization, accept: "text/event-stream" },
        signal: stopping.signal,
      });
      if (response.status === 404) return void (ending ??= end(1, "the session is over (expired or deleted)"));
      if (response.status === 401) return void (ending ??= end(1, "the API refused the token (expired?)"));
      if (!response.ok || !response.body) throw new Error(`the stream answered ${response.status}`);
      const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
      for await (const message of events) {
        failures = 0;
        if (message.event === "delivery") receive(message.data);
        else if (message.event === "ready") {
          console.log(
            connected
              ? "Reconnected"
              : `Ready: forwarding ${session.events.join(", ")} to ${forwardTo!.href}  (Ctrl-C to stop)`,
          );
          connected = true;
        } else if (message.event === "end") return void (ending ??= end(1, "the session is over"));
      }
      if (!stopping.signal.aborted && failures === 0) console.error("! the API closed the stream; reconnecting");
    } catch (error) {
      if (stopping.signal.aborted) return;
      // Once per outage: the first failure says it, the retries that follow are silent.
      if (failures === 0) console.error(`! stream lost (${(error as Error).message}); reconnecting`);
    }
    if (stopping.signal.aborted) return;
    await new Promise((resolve) => setTimeout(resolve, backoffMs(RECONNECT, failures++)));
  }
}

/** Starts forwarding one pushed delivery; a message this CLI cannot read is reported and skipped. */
function receive(data: string): void {
  let delivery: ListenDelivery;
  try {
    delivery = listenDeliverySchema.parse(JSON.parse(data));
  } catch (error) {
    console.error(`! unreadable delivery skipped (${(error as Error).message.slice(0, 200)})`);
    return;
  }
  void forward(delivery);
}

/** POSTs one delivery to the local receiver, prints one line, and reports the answer back. */
async function forward(delivery: ListenDelivery): Promise<void> {
  const started = new Date();
  const outcome = await postSigned(sender, forwardTo!.href, delivery.requests, delivery.payload);
  const durationMs = Date.now() - started.getTime();
  const mode = delivery.signature.mode ? ` [${delivery.signature.mode}]` : "";
  console.log(
    `${started.toISOString()}  ${delivery.event.type}  ${delivery.event.id}  attempt ${delivery.attempt}${mode}  → ${describe(outcome)} (${durationMs} ms)`,
  );
  await report({
    dispatch: delivery.dispatch,
    lease: delivery.lease,
    attempt: delivery.attempt,
    signature: delivery.signature,
    started: started.toISOString(),
    durationMs,
    outcome,
  });
}

/** Sends one result, trying again a few times; a result never taken is attempted again once its lease runs out. */
async function report(result: ListenReport): Promise<void> {
  for (let tries = 0; tries < REPORT_TRIES; tries++) {
    try {
      const answer = await call("POST", `/v3/listen-sessions/${session.id}/results`, { results: [result] });
      if (answer.status === 200 || answer.status === 404) return;
      if (answer.status < 500) return console.error(`! result not recorded: ${problemText(answer.body)}`);
    } catch {
      // The API is unreachable: try again below.
    }
    await new Promise((resolve) => setTimeout(resolve, backoffMs(RECONNECT, tries)));
  }
  console.error(`! result of ${result.dispatch} not reported; it will be delivered again`);
}

function describe(outcome: DeliveryOutcome): string {
  if (outcome.kind === "success") return String(outcome.statusCode);
  if (outcome.statusCode !== null) return `${outcome.statusCode} (${outcome.errorClass})`;
  return `${outcome.errorClass}: ${outcome.message}`;
}

/** Ends the session (its webhook is deleted) and exits. */
async function end(code: number, why?: string): Promise<void> {
  if (why) console.error(why);
  stopping.abort();
  await call("DELETE", `/v3/listen-sessions/${session.id}`).catch(() => undefined);
  await sender.close();
  process.exit(code);
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: { authorization, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  try {
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  } catch {
    return { status: response.status, body: { title: text.slice(0, 200) } };
  }
}

function problemText(body: unknown): string {
  const problem = body as { title?: string; detail?: string } | undefined;
  return [problem?.title, problem?.detail].filter(Boolean).join(": ") || "no answer";
}

function fail(message: string, code: number): never {
  console.error(message);
  process.exit(code);
}
