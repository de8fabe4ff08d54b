import { receive, WebhookVerificationError } from "hooklane/verify";

/**
 * A webhook endpoint that misses nothing: verify, drop a duplicate, hand the event on, answer 202; and when its
 * `sequence` jumps, fetch what was skipped. `store` is `postgresReceiptStore(pool)` (run its `setup()` once) or
 * `memoryReceiptStore()`; `enqueue` records the event for a worker, durably.
 */
export async function receiveEvent(request, { secret, webhookId, store, enqueue, api }) {
  let received;
  try {
    received = await receive({
      payload: new Uint8Array(await request.arrayBuffer()), // the raw bytes, never a re-serialised object
      headers: request.headers,
      secret,
      store,
      stream: webhookId, // one stream of sequences per webhook
    });
  } catch (error) {
    if (error instanceof WebhookVerificationError) return new Response(error.message, { status: 400 });
    throw error;
  }
  if (!received.first) return new Response(null, { status: 200 }); // already taken: a retry, a resend
  try {
    await enqueue(received.event);
  } catch (error) {
    await received.forget(); // not taken after all: its retry will be
    throw error;
  }
  if (received.gap) void catchUp(received.gap, { webhookId, store, enqueue, api }).catch(console.error);
  return new Response(null, { status: 202 });
}

/**
 * The events of a gap from `GET /v3/events`, through the same store: one that also arrives by POST meanwhile is
 * taken once. `api` is `{ url, token, fetch }`: the API's address, a bearer token of the webhook's account.
 */
export async function catchUp({ from, to }, { webhookId, store, enqueue, api }) {
  let after = from - 1;
  while (after < to) {
    const query = new URLSearchParams({
      webhook: webhookId,
      after: String(after),
      limit: String(Math.min(100, to - after)),
    });
    const response = await api.fetch(`${api.url}/v3/events?${query}`, {
      headers: { authorization: `Bearer ${api.token}` },
    });
    if (!response.ok) throw new Error(`GET /v3/events answered ${response.status}`);
    const { data } = await response.json();
    if (data.length === 0) return; // older than the delivery log keeps
    for (const event of data) {
      const { first } = await store.record({ stream: webhookId, id: event.id, sequence: event.sequence });
      if (first) await enqueue(event);
      after = event.sequence;
    }
  }
}
