// A subscriber's side of the contract: verifies each delivery and prints one line for it.
// npm run receiver   (PORT=4000, WEBHOOK_SECRET=whsec_…, WEBHOOK_BRAND=Hooklane)
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { verifyHooklaneSignature } from "../lib/webhook/outbound/webhook-signature.ts";

export interface SampleReceiverOptions {
  /** The webhook's secret; without it deliveries are printed as unverified and accepted. */
  secret?: string;
  brand?: string;
  log?: (line: string) => void;
}

/** The receiver as a Hono app: POST on any path, 200 when verified (or unverifiable), 400 on a bad signature. */
export function createSampleReceiver({
  secret,
  brand = "Hooklane",
  log = console.log,
}: SampleReceiverOptions = {}): Hono {
  const signatureHeader = `${brand}-Signature`;
  if (!secret)
    log(
      `! WEBHOOK_SECRET is not set: deliveries are printed unverified (use the secret shown when the webhook was created)`,
    );

  return new Hono().post("*", async (c) => {
    const body = await c.req.text();
    const summary = describe(body, c.req.header(`${brand}-Attempt`) ?? "?");
    if (!secret) {
      log(`? unverified ${summary}`);
      return c.text("unverified\n");
    }
    const signature = c.req.header(signatureHeader);
    if (signature && verifyHooklaneSignature(body, signature, secret)) {
      log(`✔ verified ${summary}`);
      return c.text("ok\n");
    }
    log(`✘ signature mismatch ${summary}${signature ? "" : ` (no ${signatureHeader} header)`}`);
    return c.text("signature mismatch\n", 400);
  });
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

function describe(body: string, attempt: string): string {
  try {
    const event = JSON.parse(body) as { id?: unknown; type?: unknown; data?: unknown };
    return `${event.id} ${event.type} attempt ${attempt} data=${JSON.stringify(event.data)}`;
  } catch {
    return `(not JSON, ${Buffer.byteLength(body)} bytes) attempt ${attempt}`;
  }
}

if (import.meta.main) {
  const port = Number(process.env.PORT ?? 4000);
  const brand = process.env.WEBHOOK_BRAND ?? "Hooklane";
  const { port: bound } = await startSampleReceiver({ port, brand, secret: process.env.WEBHOOK_SECRET });
  console.log(`sample receiver listening on http://localhost:${bound} (${brand}-Signature)`);
}
