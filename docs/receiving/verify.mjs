import { verifyWebhook, WebhookVerificationError } from "hooklane/verify";

/**
 * A webhook endpoint as a Fetch API handler (Hono, Next.js route handlers, Bun, Deno, Workers): 400 for a
 * delivery that fails verification, 202 once a genuine one is handed to `enqueue`.
 */
export async function receiveWebhook(request, secret, enqueue) {
  let verified;
  try {
    verified = await verifyWebhook({
      payload: new Uint8Array(await request.arrayBuffer()), // the raw bytes, never a re-serialised object
      headers: request.headers,
      secret,
    });
  } catch (error) {
    if (error instanceof WebhookVerificationError) return new Response(error.message, { status: 400 });
    throw error;
  }
  await enqueue(verified.event); // record it once per event id; process it after answering
  return new Response(null, { status: 202 });
}
