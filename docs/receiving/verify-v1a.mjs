import { verifyWebhook, WebhookVerificationError } from "hooklane/verify";

/**
 * A v1a (ed25519) endpoint: no secret, only the sender's key set, fetched from its URL and kept as long as its
 * Cache-Control allows (`jwks`: the parsed document). 400 for a delivery that fails, 202 once a genuine one is queued.
 */
export async function receiveSignedByKey(request, jwks, enqueue) {
  let verified;
  try {
    verified = await verifyWebhook({
      payload: new Uint8Array(await request.arrayBuffer()),
      headers: request.headers,
      jwks,
    });
  } catch (error) {
    if (error instanceof WebhookVerificationError) return new Response(error.message, { status: 400 });
    throw error;
  }
  await enqueue(verified.event);
  return new Response(null, { status: 202 });
}
