// A subscriber's side of the contract, written to be copied: verify (either scheme), skip an event already seen,
// notice events skipped in the webhook's sequence, acknowledge at once, process after answering. One line per
// delivery says what happened.
// npm run receiver   (PORT=4000, WEBHOOK_SECRET=whsec_…, WEBHOOK_BRAND=Hooklane, WEBHOOK_CONSENT_ORIGIN=hooklane)
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import {
  memoryReceiptStore,
  receive,
  WebhookVerificationError,
  type WebhookEvent,
} from "../lib/webhook/verify/webhook-verify.ts";

export interface SampleReceiverOptions {
  /** The webhook's secret; without it deliveries are printed as unverified and accepted. */
  secret?: string;
  brand?: string;
  /** The sender it consents to receive from (`WebHook-Request-Origin`); by default the brand in lower case. */
  consentTo?: string;
  log?: (line: string) => void;
  /** The work an event asks for, run after its delivery was answered; by default, print its data. */
  handleEvent?: (event: WebhookEvent) => void | Promise<void>;
}

// Enough to cover the retry schedule at a demo's pace; a real receiver keeps ids in its database for ~25 h.
const REMEMBERED_EVENTS = 10_000;

/**
 * The receiver as a Hono app: POST on any path. 200 for a verified delivery, including a duplicate (its event
 * is not processed again); 400 for one that fails verification, which the sender retries. It consents to
 * deliveries from `consentTo` (the endpoint-consent request, an OPTIONS) and from no other sender.
 */
export function createSampleReceiver({
  secret,
  brand = "Hooklane",
  consentTo = brand.toLowerCase(),
  log = console.log,
  handleEvent = (event) => log(`  processed ${event.id} data=${JSON.stringify(event.data)}`),
}: SampleReceiverOptions = {}): Hono {
  if (!secret)
    log(
      `! WEBHOOK_SECRET is not set: deliveries are printed unverified (use the secret shown when the webhook was created)`,
    );
  const store = memoryReceiptStore(REMEMBERED_EVENTS);

  /** Runs once the response is on its way, so a slow handler never makes the sender time out and retry. */
  function processLater(event: WebhookEvent): void {
    setImmediate(async () => {
      try {
        await handleEvent(event);
      } catch (error) {
        log(`✘ processing ${event.id} failed after it was acknowledged: ${String(error)}`);
      }
    });
  }

  return new Hono()
    .options("*", (c) => {
      const origin = c.req.header("webhook-request-origin");
      if (origin === undefined) return c.body(null, 204);
      if (origin.toLowerCase() !== consentTo.toLowerCase()) {
        log(`✘ consent asked by ${origin}, not ${consentTo} → 403`);
        return c.body(null, 403);
      }
      log(`✔ consent given to ${origin} → 200`);
      return c.body(null, 200, { allow: "POST", "webhook-allowed-origin": origin });
    })
    .post("*", async (c) => {
      // The raw bytes: the signature covers them, not a re-serialised object.
      const payload = new Uint8Array(await c.req.arrayBuffer());
      const attempt = `attempt ${c.req.header(`${brand}-Attempt`) ?? "?"}`;
      if (!secret) {
        const event = unverifiedEvent(payload);
        if (!event) {
          log(`? unverified, not an event (${payload.byteLength} bytes) ${attempt} → 200`);
          return c.text("unverified\n");
        }
        log(`? ${event.id} ${event.type} ${attempt} (unverified) → 200`);
        processLater(event);
        return c.text("ok\n");
      }
      let received;
      try {
        received = await receive({ payload, headers: c.req.raw.headers, secret, brand, store });
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error;
        log(`✘ rejected ${attempt}: ${error.message} → 400`);
        return c.text("signature verification failed\n", 400);
      }
      const { event, scheme, first, gap } = received;
      const summary = `${event.id} ${event.type}${event.sequence ? ` #${event.sequence}` : ""} ${attempt} (verified ${scheme})`;
      if (!first) {
        log(`↺ duplicate ${summary}: already received, acknowledged, not processed again → 200`);
        return c.text("duplicate\n");
      }
      log(`✔ ${summary} → 200`);
      if (gap) {
        const span = gap.from === gap.to ? `#${gap.from}` : `#${gap.from}–#${gap.to}`;
        log(
          `  ⚠ ${span} not received yet: a retry may bring them, GET /v3/events?webhook=<id>&after=${gap.from - 1} has them`,
        );
      }
      processLater(event);
      return c.text("ok\n");
    });
}

/** Without a secret nothing is trusted; the body is only read to print it. */
function unverifiedEvent(payload: Uint8Array): WebhookEvent | undefined {
  try {
    const event = JSON.parse(new TextDecoder().decode(payload)) as Partial<WebhookEvent> | null;
    return typeof event?.id === "string" && typeof event.type === "string" ? (event as WebhookEvent) : undefined;
  } catch {
    return undefined;
  }
}

/** Starts the receiver; `port: 0` picks a free port, reported in the result. */
export function startSampleReceiver(
  options: SampleReceiverOptions & { port: number },
): Promise<{ port: number; close(): Promise<void> }> {
  const app = createSampleReceiver(options);
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: options.port }, (info) =>
      resolve({
        port: info.port,
        close: () => new Promise<void>((done, fail) => server.close((error) => (error ? fail(error) : done()))),
      }),
    );
  });
}

if (import.meta.main) {
  const port = Number(process.env.PORT ?? 4000);
  const brand = process.env.WEBHOOK_BRAND ?? "Hooklane";
  const consentTo = process.env.WEBHOOK_CONSENT_ORIGIN ?? brand.toLowerCase();
  const { port: bound } = await startSampleReceiver({ port, brand, consentTo, secret: process.env.WEBHOOK_SECRET });
  console.log(
    `sample receiver listening on http://localhost:${bound} (${brand}-Signature or Standard Webhooks headers)`,
  );
}
