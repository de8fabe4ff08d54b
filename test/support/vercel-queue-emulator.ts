import { randomBytes } from "node:crypto";
import { CLOUD_EVENT_TYPE_V2BETA, QueueClient } from "@vercel/queue";
import { http, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import { vercelProjectConfig } from "../../lib/webhook/transport/vercel/vercel-project.ts";

/**
 * The service's documented limits, restated here from the SDK's README
 * ("Service Limits & Constraints") and type definitions rather than taken
 * from the product's own module, so the emulator checks the product against
 * the documentation instead of against itself.
 */
const DOCUMENTED = {
  /** retentionSeconds: default 24 h, 60 s to 7 d. */
  retention: { default: 86_400, min: 60, max: 604_800 },
  /** delaySeconds: 0 to 7 d, "cannot exceed retention". */
  maxDelay: 604_800,
  /** visibilityTimeoutSeconds: default 300, at most 3,600. */
  visibility: { default: 300, max: 3_600 },
  /** idempotencyKey: at most 256 characters; "Dedup window: min(retention, 24h)". */
  idempotencyKey: { maxLength: 256, maxWindow: 86_400 },
  /** experimental_sendBatch: "up to 100 messages". */
  batchSize: 100,
  /** "Payload size: 100 MB". */
  maxPayloadBytes: 100 * 1024 * 1024,
} as const;

/** One message as the emulated service holds it. Times are the emulator's clock. */
export interface EmulatedMessage {
  id: string;
  topic: string;
  body: Uint8Array;
  contentType: string;
  idempotencyKey: string | undefined;
  delaySeconds: number;
  retentionSeconds: number;
  /** The deployment the send was pinned to (`Vqs-Deployment-Id`), or null when unpinned. */
  deploymentId: string | null;
  createdAt: number;
  expiresAt: number;
  visibleAt: number;
  deliveryCount: number;
  receiptHandle: string | undefined;
  acknowledged: boolean;
  /** When each push of it started. */
  pushedAt: number[];
}

/** A request the service refused, as the documentation says it would. */
export interface Refusal {
  operation: "send" | "batch" | "visibility" | "acknowledge";
  status: number;
  reason: string;
}

export interface ConsumerOptions {
  /** The trigger's `maxConcurrency`: pushes in flight at once, at most. */
  maxConcurrency?: number;
  /** The trigger's `retryAfterSeconds`: redelivery after a failed push that left no directive. */
  retryAfterSeconds?: number;
  /** The deployment this consumer belongs to; messages pinned to another deployment never reach it. */
  deploymentId?: string;
}

export interface VercelQueueEmulator {
  /** A real SDK client whose requests this emulator answers; its sends are unpinned. */
  readonly client: QueueClient;
  /** A client of deployment `deploymentId`, whose sends are pinned to it (the SDK's default on Vercel). */
  clientFor(deploymentId: string): QueueClient;
  readonly messages: EmulatedMessage[];
  readonly refusals: Refusal[];
  /** Send requests (single and batch) answered, and the most open at once. */
  readonly requests: { sends: number; batches: number; peakInFlight: number; peakInFlightMessages: number };
  /** The most pushes in flight at once, over all consumers. */
  readonly peakPushes: number;
  /** The most pushes in flight at once to the consumer of `topic`. */
  peakPushesTo(topic: string): number;
  /** The service's clock: real time plus whatever `advance` added. */
  now(): number;
  /** Moves the service's clock forward: delayed and invisible messages whose time came are pushed. */
  advance(ms: number): void;
  /** Push consumers, as the project's queue triggers register them: topic patterns (`prefix-*`) → function handler. */
  consume(topics: readonly string[], handler: (request: Request) => Promise<Response>, options?: ConsumerOptions): void;
  /** Deletes a deployment: messages pinned to it are never pushed again. */
  retire(deploymentId: string): void;
  /** Makes a message visible now, as an at-least-once service may redeliver early. */
  redeliverNow(messageId: string): void;
  /** While true, every send answers 500, as during an outage. */
  failSends: boolean;
  /** While true, single sends answer 202 (accepted for deferred processing, no id) and batch entries `deferred`. */
  deferSends: boolean;
  /** Real milliseconds every send request takes to answer (network time). */
  sendLatencyMs: number;
  /** The next `count` send requests answer 429 with `Retry-After: retryAfterSeconds`. */
  throttle(count: number, retryAfterSeconds: number): void;
  /** Send requests hang, unanswered, until the returned function is called. */
  stallSends(): () => void;
  /**
   * While true, sends get no answer at all: the sender's forward never
   * completes, as in a process frozen or killed mid-send. Nothing is queued.
   */
  holdSends: boolean;
  /** Answers every held send with 500; the senders see a failure (nothing was queued). */
  releaseHeld(): void;
  /** Payloads of a topic's messages, parsed. */
  payloads(topic: string): unknown[];
  /** Resolves when no message is visible to a consumer and no push is in flight (delayed ones may remain). */
  drained(): Promise<void>;
  /** Stops pushing, waits for pushes in flight, and goes away. */
  close(): Promise<void>;
}

const REGION = "iad1";

// One interceptor per process; emulators are told apart by the token their clients send.
const emulators = new Map<string, Emulator>();
let server: ReturnType<typeof setupServer> | undefined;

function interceptor(): ReturnType<typeof setupServer> {
  if (server) return server;
  const base = "https://*.vercel-queue.com/api/v3/topic";
  const emulatorOf = (request: Request) => emulators.get(request.headers.get("authorization") ?? "");
  const unknown = (): Response => HttpResponse.text("unknown token", { status: 401 });
  server = setupServer(
    http.post(`${base}/:topic/batch`, async ({ request, params }) => {
      return emulatorOf(request)?.sendBatch(String(params.topic), request) ?? unknown();
    }),
    http.post(`${base}/:topic`, async ({ request, params }) => {
      return emulatorOf(request)?.send(String(params.topic), request) ?? unknown();
    }),
    http.delete(`${base}/:topic/consumer/:group/lease/:handle`, async ({ request, params }) => {
      return emulatorOf(request)?.acknowledge(String(params.handle)) ?? unknown();
    }),
    http.patch(`${base}/:topic/consumer/:group/lease/:handle`, async ({ request, params }) => {
      const emulator = emulatorOf(request);
      if (!emulator) return unknown();
      const { visibilityTimeoutSeconds } = (await request.json()) as { visibilityTimeoutSeconds: number };
      return emulator.changeVisibility(String(params.handle), visibilityTimeoutSeconds);
    }),
  );
  // Deliveries to subscribers go through undici directly and are never intercepted.
  server.listen({ onUnhandledRequest: "bypass" });
  return server;
}

interface Consumer {
  patterns: readonly string[];
  handler: (request: Request) => Promise<Response>;
  maxConcurrency: number;
  retryAfterSeconds: number;
  deploymentId: string | null;
  inFlight: number;
  peak: number;
}

type Accepted = { ok: true; message: EmulatedMessage | undefined; duplicateOf?: string } | Refused;
type Refused = { ok: false; status: number; reason: string };

class Emulator implements VercelQueueEmulator {
  readonly messages: EmulatedMessage[] = [];
  readonly refusals: Refusal[] = [];
  readonly requests = { sends: 0, batches: 0, peakInFlight: 0, peakInFlightMessages: 0 };
  readonly client: QueueClient;
  failSends = false;
  deferSends = false;
  sendLatencyMs = 0;
  peakPushes = 0;
  holdSends = false;
  readonly #held: Array<() => void> = [];
  readonly #token = `Bearer emulator-${randomBytes(8).toString("hex")}`;
  readonly #consumers: Consumer[] = [];
  readonly #retired = new Set<string>();
  readonly #deduplication = new Map<string, { messageId: string; until: number }>();
  readonly #inFlight = new Set<Promise<void>>();
  readonly #drainWaiters: Array<() => void> = [];
  #offset = 0;
  #throttled = { count: 0, retryAfterSeconds: 0 };
  #stalled: Promise<void> | undefined;
  #release: (() => void) | undefined;
  #openRequests = 0;
  #openMessages = 0;
  #pushing = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor() {
    interceptor();
    emulators.set(this.#token, this);
    this.client = new QueueClient({ region: REGION, token: this.#token.slice(7), deploymentId: null });
  }

  clientFor(deploymentId: string): QueueClient {
    return new QueueClient({ region: REGION, token: this.#token.slice(7), deploymentId });
  }

  now(): number {
    return Date.now() + this.#offset;
  }

  advance(ms: number): void {
    this.#offset += ms;
    this.#schedule();
  }

  consume(
    topics: readonly string[],
    handler: (request: Request) => Promise<Response>,
    options: ConsumerOptions = {},
  ): void {
    this.#consumers.push({
      patterns: topics,
      handler,
      maxConcurrency: options.maxConcurrency ?? Infinity,
      retryAfterSeconds: options.retryAfterSeconds ?? 1,
      deploymentId: options.deploymentId ?? null,
      inFlight: 0,
      peak: 0,
    });
    this.#schedule();
  }

  peakPushesTo(topic: string): number {
    return Math.max(0, ...this.#consumers.filter((c) => matches(c.patterns, topic)).map((c) => c.peak));
  }

  retire(deploymentId: string): void {
    this.#retired.add(deploymentId);
  }

  redeliverNow(messageId: string): void {
    const message = this.messages.find((m) => m.id === messageId);
    if (message && !message.acknowledged) message.visibleAt = this.now();
    this.#schedule();
  }

  throttle(count: number, retryAfterSeconds: number): void {
    this.#throttled = { count, retryAfterSeconds };
  }

  stallSends(): () => void {
    this.#stalled ??= new Promise<void>((resolve) => (this.#release = resolve));
    return () => {
      this.#release?.();
      this.#stalled = undefined;
    };
  }

  payloads(topic: string): unknown[] {
    return this.messages.filter((m) => m.topic === topic).map((m) => JSON.parse(Buffer.from(m.body).toString("utf8")));
  }

  async send(topic: string, request: Request): Promise<Response> {
    if (this.holdSends) {
      return new Promise((resolve) => this.#held.push(() => resolve(HttpResponse.text("gone", { status: 500 }))));
    }
    return this.#answer("send", 1, async () => {
      const body = new Uint8Array(await request.arrayBuffer());
      const accepted = this.#accept(topic, request.headers, body);
      if (!accepted.ok) return this.#refuse("send", accepted);
      if (this.deferSends) return new HttpResponse(null, { status: 202 });
      return HttpResponse.json({ messageId: accepted.message?.id ?? accepted.duplicateOf }, { status: 201 });
    });
  }

  async sendBatch(topic: string, request: Request): Promise<Response> {
    const parts = parseMultipart(request.headers.get("content-type") ?? "", await request.arrayBuffer());
    return this.#answer("batch", parts.length, async () => {
      if (parts.length < 1 || parts.length > DOCUMENTED.batchSize) {
        return this.#refuse("batch", { ok: false, status: 400, reason: `a batch holds 1 to ${DOCUMENTED.batchSize}` });
      }
      const results = parts.map((part) => {
        const accepted = this.#accept(topic, part.headers, part.body);
        if (!accepted.ok) {
          this.refusals.push({ operation: "batch", status: accepted.status, reason: accepted.reason });
          return { status: "failed", statusCode: accepted.status, error: accepted.reason, retryable: false };
        }
        if (this.deferSends) return { status: "deferred", messageId: null };
        return { status: "sent", messageId: accepted.message?.id ?? accepted.duplicateOf };
      });
      return HttpResponse.json({ results });
    });
  }

  releaseHeld(): void {
    for (const answer of this.#held.splice(0)) answer();
  }

  acknowledge(handle: string): Response {
    const message = this.messages.find((m) => m.receiptHandle === handle);
    if (!message) return this.#refuse("acknowledge", { ok: false, status: 409, reason: "stale receipt handle" });
    if (message.acknowledged) return HttpResponse.text("", { status: 410 });
    message.acknowledged = true;
    return new HttpResponse(null, { status: 204 });
  }

  changeVisibility(handle: string, seconds: number): Response {
    if (!Number.isFinite(seconds) || seconds < 0 || seconds > DOCUMENTED.visibility.max) {
      return this.#refuse("visibility", {
        ok: false,
        status: 400,
        reason: `visibilityTimeoutSeconds ${seconds} is outside 0–${DOCUMENTED.visibility.max}`,
      });
    }
    const message = this.messages.find((m) => m.receiptHandle === handle && !m.acknowledged);
    if (!message) return this.#refuse("visibility", { ok: false, status: 409, reason: "stale receipt handle" });
    message.visibleAt = this.now() + seconds * 1_000;
    this.#schedule();
    return HttpResponse.json({ success: true });
  }

  drained(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#drainWaiters.push(resolve);
      this.#checkDrained();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.releaseHeld();
    clearTimeout(this.#timer);
    this.#release?.();
    // Let pushes in flight finish their acknowledgements before the service goes away.
    while (this.#inFlight.size > 0) await Promise.allSettled(this.#inFlight);
    emulators.delete(this.#token);
    for (const resolve of this.#drainWaiters.splice(0)) resolve();
  }

  /** Counts a send request, applies outages, throttling, stalls and latency, then answers it. */
  async #answer(operation: "send" | "batch", messages: number, answer: () => Promise<Response>): Promise<Response> {
    this.requests[operation === "send" ? "sends" : "batches"]++;
    this.#openRequests++;
    this.#openMessages += messages;
    this.requests.peakInFlight = Math.max(this.requests.peakInFlight, this.#openRequests);
    this.requests.peakInFlightMessages = Math.max(this.requests.peakInFlightMessages, this.#openMessages);
    try {
      if (this.#stalled) await this.#stalled;
      if (this.sendLatencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.sendLatencyMs));
      if (this.#closed || this.failSends) return HttpResponse.text("service unavailable", { status: 500 });
      if (this.#throttled.count > 0) {
        this.#throttled.count--;
        this.refusals.push({ operation, status: 429, reason: "rate limited" });
        return HttpResponse.text("too many requests", {
          status: 429,
          headers: { "retry-after": String(this.#throttled.retryAfterSeconds) },
        });
      }
      return await answer();
    } finally {
      this.#openRequests--;
      this.#openMessages -= messages;
    }
  }

  #refuse(operation: Refusal["operation"], refused: Refused): Response {
    this.refusals.push({ operation, status: refused.status, reason: refused.reason });
    return HttpResponse.text(refused.reason, { status: refused.status });
  }

  /** One message of a send, judged by the documented limits; a repeated idempotency key is accepted but kept once. */
  #accept(topic: string, headers: Headers, body: Uint8Array): Accepted {
    const retentionSeconds = Number(headers.get("vqs-retention-seconds") ?? DOCUMENTED.retention.default);
    const delaySeconds = Number(headers.get("vqs-delay-seconds") ?? 0);
    const idempotencyKey = headers.get("vqs-idempotency-key") ?? undefined;
    const { min, max } = DOCUMENTED.retention;
    if (!Number.isInteger(retentionSeconds) || retentionSeconds < min || retentionSeconds > max) {
      return { ok: false, status: 400, reason: `retentionSeconds ${retentionSeconds} is outside ${min}–${max}` };
    }
    if (!Number.isInteger(delaySeconds) || delaySeconds < 0 || delaySeconds > DOCUMENTED.maxDelay) {
      return { ok: false, status: 400, reason: `delaySeconds ${delaySeconds} is outside 0–${DOCUMENTED.maxDelay}` };
    }
    if (delaySeconds > retentionSeconds) {
      return {
        ok: false,
        status: 400,
        reason: `delaySeconds ${delaySeconds} exceeds retentionSeconds ${retentionSeconds}`,
      };
    }
    if (idempotencyKey && idempotencyKey.length > DOCUMENTED.idempotencyKey.maxLength) {
      return { ok: false, status: 400, reason: `idempotencyKey longer than ${DOCUMENTED.idempotencyKey.maxLength}` };
    }
    if (body.byteLength > DOCUMENTED.maxPayloadBytes) return { ok: false, status: 413, reason: "payload too large" };
    const now = this.now();
    const dedupKey = `${topic}\u0000${idempotencyKey}`;
    const seen = idempotencyKey ? this.#deduplication.get(dedupKey) : undefined;
    if (seen && now < seen.until) return { ok: true, message: undefined, duplicateOf: seen.messageId };
    const message: EmulatedMessage = {
      id: `msg_${randomBytes(6).toString("hex")}`,
      topic,
      body,
      contentType: headers.get("content-type") ?? "application/json",
      idempotencyKey,
      delaySeconds,
      retentionSeconds,
      deploymentId: headers.get("vqs-deployment-id"),
      createdAt: now,
      expiresAt: now + retentionSeconds * 1_000,
      visibleAt: now + delaySeconds * 1_000,
      deliveryCount: 0,
      receiptHandle: undefined,
      acknowledged: false,
      pushedAt: [],
    };
    if (idempotencyKey) {
      const window = Math.min(retentionSeconds, DOCUMENTED.idempotencyKey.maxWindow) * 1_000;
      this.#deduplication.set(dedupKey, { messageId: message.id, until: now + window });
    }
    this.messages.push(message);
    this.#schedule();
    return { ok: true, message };
  }

  /** The consumer a message goes to: its pinned deployment's, or the newest one for the topic. */
  #consumerOf(message: EmulatedMessage): Consumer | undefined {
    if (message.deploymentId && this.#retired.has(message.deploymentId)) return undefined;
    const matching = this.#consumers.filter((c) => matches(c.patterns, message.topic));
    return message.deploymentId ? matching.find((c) => c.deploymentId === message.deploymentId) : matching.at(-1);
  }

  #deliverable(message: EmulatedMessage, now: number): boolean {
    return !message.acknowledged && now < message.expiresAt && this.#consumerOf(message) !== undefined;
  }

  /** Pushes every visible message its consumer has room for, then sleeps until the next becomes visible. */
  #schedule(): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    const now = this.now();
    let next = Infinity;
    for (const message of this.messages) {
      if (!this.#deliverable(message, now)) continue;
      if (message.visibleAt > now) {
        next = Math.min(next, message.visibleAt);
        continue;
      }
      const consumer = this.#consumerOf(message)!;
      if (consumer.inFlight < consumer.maxConcurrency) this.#push(message, consumer);
    }
    if (next !== Infinity) this.#timer = setTimeout(() => this.#schedule(), Math.max(0, next - now));
    this.#checkDrained();
  }

  #checkDrained(): void {
    if (this.#drainWaiters.length === 0) return;
    const now = this.now();
    const visible = this.messages.some((m) => this.#deliverable(m, now) && m.visibleAt <= now);
    if (visible || this.#inFlight.size > 0) return;
    for (const resolve of this.#drainWaiters.splice(0)) resolve();
  }

  #push(message: EmulatedMessage, consumer: Consumer): void {
    const now = this.now();
    message.deliveryCount++;
    message.pushedAt.push(now);
    message.receiptHandle = `rh_${randomBytes(8).toString("hex")}`;
    message.visibleAt = now + DOCUMENTED.visibility.default * 1_000;
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
        "ce-vqsexpiresat": new Date(message.expiresAt).toISOString(),
        "ce-vqsvisibilitydeadline": new Date(message.visibleAt).toISOString(),
        "ce-vqsregion": REGION,
        "content-type": message.contentType,
      },
      body: message.body,
    });
    consumer.inFlight++;
    consumer.peak = Math.max(consumer.peak, consumer.inFlight);
    this.#pushing++;
    this.peakPushes = Math.max(this.peakPushes, this.#pushing);
    const failed = () => {
      // A failure that left no directive (visibility unchanged) is redelivered after the trigger's retryAfterSeconds.
      if (!message.acknowledged && message.visibleAt === visibleAtPush) {
        message.visibleAt = this.now() + consumer.retryAfterSeconds * 1_000;
      }
    };
    const push = consumer
      .handler(request)
      .then(async (response) => {
        await response.text();
        if (!response.ok) failed();
      }, failed)
      .finally(() => {
        consumer.inFlight--;
        this.#pushing--;
        this.#inFlight.delete(push);
        this.#schedule();
      });
    this.#inFlight.add(push);
  }
}

/** The parts of a `multipart/mixed` batch send: each message's headers and body. */
function parseMultipart(contentType: string, raw: ArrayBuffer): Array<{ headers: Headers; body: Uint8Array }> {
  const boundary = /boundary=([^;]+)/.exec(contentType)?.[1];
  if (!boundary) return [];
  const bytes = Buffer.from(raw);
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Array<{ headers: Headers; body: Uint8Array }> = [];
  let at = bytes.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (bytes.subarray(start, start + 2).toString() === "--") break;
    const next = bytes.indexOf(delimiter, start);
    if (next === -1) break;
    const part = bytes.subarray(start + 2, next - 2); // after "\r\n", before the "\r\n" that ends the body
    const split = part.indexOf("\r\n\r\n");
    const headers = new Headers();
    for (const line of part.subarray(0, split).toString("utf8").split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon > 0) headers.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    parts.push({ headers, body: new Uint8Array(part.subarray(split + 4)) });
    at = next;
  }
  return parts;
}

/** Whether a trigger's topic patterns (`prefix-*` or exact) take `topic`. */
const matches = (patterns: readonly string[], topic: string) =>
  patterns.some((p) => p === topic || (p.endsWith("*") && topic.startsWith(p.slice(0, -1))));

/** The lane functions' queue triggers, as the project configuration (vercel.ts) registers them for `env`. */
function laneTriggers(env: Record<string, string> = {}): Array<{ topic: string; options: ConsumerOptions }> {
  return Object.values(vercelProjectConfig(env).functions).flatMap((settings) =>
    (settings.experimentalTriggers ?? []).map((trigger) => ({
      topic: trigger.topic,
      options: { maxConcurrency: trigger.maxConcurrency, retryAfterSeconds: trigger.retryAfterSeconds },
    })),
  );
}

/**
 * The platform's part for the lane: each lane function's trigger (for `env`,
 * or only those of `topics`) pushes its topic to `handler`.
 */
export function consumeLane(
  queue: VercelQueueEmulator,
  handler: (request: Request) => Promise<Response>,
  options: { env?: Record<string, string>; topics?: readonly string[]; deploymentId?: string } = {},
): void {
  for (const { topic, options: trigger } of laneTriggers(options.env)) {
    if (options.topics && !options.topics.includes(topic)) continue;
    queue.consume([topic], handler, {
      ...trigger,
      ...(options.deploymentId === undefined ? {} : { deploymentId: options.deploymentId }),
    });
  }
}

/**
 * A Vercel Queue service emulated behind msw, with the documented limits
 * (retention and expiry, maximum delay and visibility refused beyond them, a
 * finite deduplication window, batch sends, 202 and 429 answers), push
 * consumers with their trigger's concurrency, deployment pinning, and a
 * clock tests can move forward.
 */
export function startVercelQueueEmulator(): VercelQueueEmulator {
  return new Emulator();
}
