import { randomBytes } from "node:crypto";
import { CLOUD_EVENT_TYPE_V2BETA, QueueClient } from "@vercel/queue";
import { http, HttpResponse } from "msw";
import { setupServer } from "msw/node";

/** One message as the emulated service holds it. */
export interface EmulatedMessage {
  id: string;
  topic: string;
  body: Uint8Array;
  contentType: string;
  idempotencyKey: string | undefined;
  delaySeconds: number;
  createdAt: number;
  visibleAt: number;
  deliveryCount: number;
  receiptHandle: string | undefined;
  acknowledged: boolean;
}

export interface VercelQueueEmulator {
  /** A real SDK client whose requests this emulator answers. */
  readonly client: QueueClient;
  readonly messages: EmulatedMessage[];
  /** Push consumers, as `vercel.json` triggers would register them: topic → function handler. */
  consume(topics: readonly string[], handler: (request: Request) => Promise<Response>): void;
  /** While true, every send answers 500, as during an outage. */
  failSends: boolean;
  /**
   * While true, sends get no answer at all: the sender's forward never
   * completes, as in a process frozen or killed mid-send. Nothing is queued.
   */
  holdSends: boolean;
  /** Answers every held send with 500; the senders see a failure (nothing was queued). */
  releaseHeld(): void;
  /** Payloads of a topic's messages, parsed. */
  payloads(topic: string): unknown[];
  /** Resolves when no message is visible or in a push (future-delayed ones may remain). */
  drained(): Promise<void>;
  /** Stops pushing, waits for pushes in flight, and goes away. */
  close(): Promise<void>;
}

const REGION = "iad1";
const VISIBILITY_SECONDS = 30;
/** What `retryAfterSeconds` in vercel.json would give: redelivery after a failed push without a directive. */
const RETRY_AFTER_SECONDS = 1;

// One interceptor per process; emulators are told apart by the token their client sends.
const emulators = new Map<string, Emulator>();
let server: ReturnType<typeof setupServer> | undefined;

function interceptor(): ReturnType<typeof setupServer> {
  if (server) return server;
  const base = "https://*.vercel-queue.com/api/v3/topic";
  const emulatorOf = (request: Request) => emulators.get(request.headers.get("authorization") ?? "");
  server = setupServer(
    http.post(`${base}/:topic`, async ({ request, params }) => {
      const emulator = emulatorOf(request);
      if (!emulator) return HttpResponse.text("unknown token", { status: 401 });
      return emulator.send(String(params.topic), request);
    }),
    http.delete(`${base}/:topic/consumer/:group/lease/:handle`, ({ request, params }) => {
      return emulatorOf(request)?.acknowledge(String(params.handle)) ?? HttpResponse.text("", { status: 401 });
    }),
    http.patch(`${base}/:topic/consumer/:group/lease/:handle`, async ({ request, params }) => {
      const { visibilityTimeoutSeconds } = (await request.json()) as { visibilityTimeoutSeconds: number };
      return (
        emulatorOf(request)?.changeVisibility(String(params.handle), visibilityTimeoutSeconds) ??
        HttpResponse.text("", { status: 401 })
      );
    }),
  );
  // Deliveries to subscribers go through undici directly and are never intercepted.
  server.listen({ onUnhandledRequest: "bypass" });
  return server;
}

class Emulator implements VercelQueueEmulator {
  readonly messages: EmulatedMessage[] = [];
  readonly client: QueueClient;
  failSends = false;
  holdSends = false;
  readonly #held: Array<() => void> = [];
  readonly #token = `Bearer emulator-${randomBytes(8).toString("hex")}`;
  readonly #consumers = new Map<string, (request: Request) => Promise<Response>>();
  readonly #inFlight = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor() {
    interceptor();
    emulators.set(this.#token, this);
    this.client = new QueueClient({ region: REGION, token: this.#token.slice(7), deploymentId: null });
  }

  consume(topics: readonly string[], handler: (request: Request) => Promise<Response>): void {
    for (const topic of topics) this.#consumers.set(topic, handler);
    this.#schedule();
  }

  payloads(topic: string): unknown[] {
    return this.messages.filter((m) => m.topic === topic).map((m) => JSON.parse(Buffer.from(m.body).toString("utf8")));
  }

  async send(topic: string, request: Request): Promise<Response> {
    if (this.holdSends) {
      return new Promise((resolve) => this.#held.push(() => resolve(HttpResponse.text("gone", { status: 500 }))));
    }
    if (this.failSends) return HttpResponse.text("service unavailable", { status: 500 });
    const idempotencyKey = request.headers.get("vqs-idempotency-key") ?? undefined;
    const duplicate =
      idempotencyKey && this.messages.find((m) => m.topic === topic && m.idempotencyKey === idempotencyKey);
    if (duplicate) return HttpResponse.json({ messageId: duplicate.id }, { status: 201 });
    const delaySeconds = Number(request.headers.get("vqs-delay-seconds") ?? 0);
    if (!Number.isInteger(delaySeconds) || delaySeconds < 0 || delaySeconds > 604_800) {
      return HttpResponse.text("invalid delay", { status: 400 });
    }
    const now = Date.now();
    const message: EmulatedMessage = {
      id: `msg_${randomBytes(6).toString("hex")}`,
      topic,
      body: new Uint8Array(await request.arrayBuffer()),
      contentType: request.headers.get("content-type") ?? "application/json",
      idempotencyKey,
      delaySeconds,
      createdAt: now,
      visibleAt: now + delaySeconds * 1_000,
      deliveryCount: 0,
      receiptHandle: undefined,
      acknowledged: false,
    };
    this.messages.push(message);
    this.#schedule();
    return HttpResponse.json({ messageId: message.id }, { status: 201 });
  }

  releaseHeld(): void {
    for (const answer of this.#held.splice(0)) answer();
  }

  acknowledge(handle: string): Response {
    const message = this.messages.find((m) => m.receiptHandle === handle);
    if (!message) return HttpResponse.text("", { status: 404 });
    if (message.acknowledged) return HttpResponse.text("", { status: 409 });
    message.acknowledged = true;
    return new HttpResponse(null, { status: 204 });
  }

  changeVisibility(handle: string, seconds: number): Response {
    const message = this.messages.find((m) => m.receiptHandle === handle && !m.acknowledged);
    if (!message) return HttpResponse.text("", { status: 404 });
    message.visibleAt = Date.now() + seconds * 1_000;
    this.#schedule();
    return HttpResponse.json({ success: true });
  }

  async drained(): Promise<void> {
    for (;;) {
      while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
      const now = Date.now();
      const visible = this.messages.some((m) => !m.acknowledged && m.visibleAt <= now && this.#consumers.has(m.topic));
      if (!visible && this.#inFlight.size === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.releaseHeld();
    clearTimeout(this.#timer);
    // Let pushes in flight finish their acknowledgements before the service goes away.
    while (this.#inFlight.size > 0) await Promise.allSettled(this.#inFlight);
    emulators.delete(this.#token);
  }

  /** Pushes every visible message, then sleeps until the next becomes visible. */
  #schedule(): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    const now = Date.now();
    let next = Infinity;
    for (const message of this.messages) {
      if (message.acknowledged || !this.#consumers.has(message.topic)) continue;
      if (message.visibleAt <= now) this.#push(message);
      else next = Math.min(next, message.visibleAt);
    }
    if (next !== Infinity) this.#timer = setTimeout(() => this.#schedule(), next - now);
  }

  #push(message: EmulatedMessage): void {
    const handler = this.#consumers.get(message.topic)!;
    const now = Date.now();
    message.deliveryCount++;
    message.receiptHandle = `rh_${randomBytes(8).toString("hex")}`;
    message.visibleAt = now + VISIBILITY_SECONDS * 1_000;
    const visibleAtPush = message.visibleAt;
    const request = new Request("https://hooklane.test/api/webhook-out", {
      method: "POST",
      headers: {
        "ce-type": CLOUD_EVENT_TYPE_V2BETA,
        "ce-vqsqueuename": message.topic,
        "ce-vqsconsumergroup": "api_Swebhook-out_Dts",
        "ce-vqsmessageid": message.id,
        "ce-vqsreceipthandle": message.receiptHandle,
        "ce-vqsdeliverycount": String(message.deliveryCount),
        "ce-vqscreatedat": new Date(message.createdAt).toISOString(),
        "ce-vqsexpiresat": new Date(message.createdAt + 86_400_000).toISOString(),
        "ce-vqsvisibilitydeadline": new Date(message.visibleAt).toISOString(),
        "ce-vqsregion": REGION,
        "content-type": message.contentType,
      },
      body: message.body,
    });
    const push = handler(request)
      .then(async (response) => {
        await response.text();
        // A failure with no directive (visibility unchanged) is redelivered after retryAfterSeconds.
        if (!response.ok && !message.acknowledged && message.visibleAt === visibleAtPush) {
          message.visibleAt = Date.now() + RETRY_AFTER_SECONDS * 1_000;
        }
      })
      .catch(() => {
        if (!message.acknowledged) message.visibleAt = Date.now() + RETRY_AFTER_SECONDS * 1_000;
      })
      .finally(() => {
        this.#inFlight.delete(push);
        this.#schedule();
      });
    this.#inFlight.add(push);
  }
}

/** A Vercel Queue service emulated behind msw: send with delay and idempotency, push as CloudEvents, visibility, acknowledge, redelivery. */
export function startVercelQueueEmulator(): VercelQueueEmulator {
  return new Emulator();
}
