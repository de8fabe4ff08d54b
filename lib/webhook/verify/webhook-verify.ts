// The receiving side of a delivery: checks its signature, in either scheme, and returns the event.
// Dependency-free on purpose (Web Crypto, TextEncoder, btoa and atob only): it runs in Node, Deno, Bun and edge
// runtimes alike, and a subscriber may copy this one file.

/** The two signature schemes a webhook may use. */
export type WebhookScheme = "hooklane-v1" | "standard-webhooks";

/** The thin body every delivery carries: identifiers only; read the resource back through the API. */
export interface WebhookEvent {
  /** `evt_…`: the same on every attempt of a delivery, so the key to deduplicate on. */
  id: string;
  type: string;
  created: string;
  livemode: boolean;
  data: { object: string; id: string; account: string | null };
}

/** Why a delivery was refused; `reason` is stable, for code to branch on. */
export type WebhookVerificationFailure =
  "missing-headers" | "malformed-headers" | "no-matching-signature" | "timestamp-outside-tolerance" | "malformed-event";

// Fixed sentences: a message never carries a received or expected signature, a secret or the body.
const MESSAGES: Record<WebhookVerificationFailure, string> = {
  "missing-headers":
    "no signature headers: expected <Brand>-Signature, or webhook-id, webhook-timestamp and webhook-signature",
  "malformed-headers": "the signature headers are malformed: no timestamp or no v1 signature",
  "no-matching-signature": "no signature matches the body and the secret",
  "timestamp-outside-tolerance": "the signature is genuine but its timestamp is too far from now (replayed or late)",
  "malformed-event": "the signed body is not a webhook event (JSON with an id and a type)",
};

/** The only error `verifyWebhook` throws for a delivery it refuses. Answer it with a 4xx. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
  readonly reason: WebhookVerificationFailure;

  constructor(reason: WebhookVerificationFailure) {
    super(MESSAGES[reason]);
    this.reason = reason;
  }
}

/** A Fetch API `Headers`, or a plain record such as Node's `req.headers`; names are matched case-insensitively. */
export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;

export interface VerifyWebhookInput {
  /** The raw body exactly as received: the signature covers these bytes, never a re-serialised object. */
  payload: string | Uint8Array;
  headers: WebhookHeaders;
  /** The webhook's `whsec_…` secret, or several while you rotate your own copy: any one may match. */
  secret: string | readonly string[];
  /** The sender's brand, the prefix of `<Brand>-Signature`: "Hooklane" by default. */
  brand?: string;
  /** How far the signature's timestamp may be from `now`, either way: 300 seconds by default. */
  toleranceSeconds?: number;
  /** Milliseconds since the epoch: `Date.now()` by default. */
  now?: number;
}

export interface VerifiedWebhook {
  event: WebhookEvent;
  /** The scheme the delivery was signed with, told apart by its headers. */
  scheme: WebhookScheme;
  /** When it was signed, in Unix seconds. */
  timestamp: number;
}

/**
 * Verifies one delivery and returns its parsed event. The scheme is taken from the headers:
 * `webhook-signature` means Standard Webhooks (`webhook-id`, `webhook-timestamp`, `v1,<base64>` values
 * separated by spaces, keyed by the base64 after `whsec_`), otherwise `<Brand>-Signature` means
 * hooklane-v1 (`t=<unix>,v1=<hex>[,v1=<hex>…]`, keyed by the whole secret, as Stripe does). The delivery
 * passes when any `v1` value matches any secret (compared in constant time) and the timestamp is within
 * the tolerance of `now`. Throws `WebhookVerificationError` for a delivery it refuses, and a `TypeError`
 * for a secret that cannot be a key (empty, or not base64 after `whsec_` for Standard Webhooks).
 */
export async function verifyWebhook(input: VerifyWebhookInput): Promise<VerifiedWebhook> {
  const { brand = "Hooklane", toleranceSeconds = 300, now = Date.now() } = input;
  const secrets = typeof input.secret === "string" ? [input.secret] : input.secret;
  if (secrets.length === 0 || secrets.some((secret) => secret === "")) {
    throw new TypeError("verifyWebhook needs the webhook's secret");
  }
  const signed = readSignatureHeaders(headerReader(input.headers), brand);
  const body = typeof input.payload === "string" ? encoder.encode(input.payload) : input.payload;
  const content = concat(encoder.encode(signed.prefix), body);

  let matched = false;
  for (const secret of secrets) {
    const expected = await digest(signed.scheme, secret, content);
    for (const candidate of signed.candidates) if (constantTimeEqual(candidate, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError("no-matching-signature");
  // Checked after the signature, so this reason only ever describes a genuine delivery.
  if (Math.abs(Math.floor(now / 1_000) - signed.timestamp) > toleranceSeconds) {
    throw new WebhookVerificationError("timestamp-outside-tolerance");
  }
  return { event: parseEvent(body), scheme: signed.scheme, timestamp: signed.timestamp };
}

const encoder = new TextEncoder();
const SECRET_PREFIX = "whsec_";

interface SignatureHeaders {
  scheme: WebhookScheme;
  timestamp: number;
  /** What the signed content holds before the body. */
  prefix: string;
  candidates: string[];
}

function readSignatureHeaders(header: (name: string) => string | undefined, brand: string): SignatureHeaders {
  const standard = header("webhook-signature");
  if (standard !== undefined) {
    const id = header("webhook-id");
    const timestamp = header("webhook-timestamp");
    if (id === undefined || timestamp === undefined) throw new WebhookVerificationError("missing-headers");
    // `v1,<base64>` values separated by spaces; other versions (such as v1a) are not ours to check.
    const candidates = valuesNamed(standard.split(" "), ",", "v1");
    return checked("standard-webhooks", [timestamp], candidates, `${id}.`);
  }
  const hooklane = header(`${brand}-Signature`);
  if (hooklane === undefined) throw new WebhookVerificationError("missing-headers");
  const elements = hooklane.split(",").map((element) => element.trim());
  return checked("hooklane-v1", valuesNamed(elements, "=", "t"), valuesNamed(elements, "=", "v1"), "");
}

/** The values of the `<name><separator><value>` elements called `name`. */
function valuesNamed(elements: string[], separator: string, name: string): string[] {
  const prefix = name + separator;
  return elements.filter((element) => element.startsWith(prefix)).map((element) => element.slice(prefix.length));
}

/** Both schemes sign `<prefix><timestamp>.<body>`, with exactly one timestamp and at least one `v1` signature. */
function checked(scheme: WebhookScheme, timestamps: string[], candidates: string[], prefix: string): SignatureHeaders {
  const [timestamp] = timestamps;
  if (timestamps.length !== 1 || !/^\d{1,15}$/.test(timestamp!) || candidates.length === 0) {
    throw new WebhookVerificationError("malformed-headers");
  }
  return { scheme, timestamp: Number(timestamp), prefix: `${prefix}${timestamp}.`, candidates };
}

function headerReader(headers: WebhookHeaders): (name: string) => string | undefined {
  if (isFetchHeaders(headers)) return (name) => headers.get(name) ?? undefined;
  const byName = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    // A repeated header reads as Headers.get() would read it: the values joined by ", ".
    if (value !== undefined) byName.set(name.toLowerCase(), typeof value === "string" ? value : value.join(", "));
  }
  return (name) => byName.get(name.toLowerCase());
}

function isFetchHeaders(headers: WebhookHeaders): headers is Headers {
  return typeof (headers as Headers).get === "function";
}

/** The signature a genuine delivery carries, encoded as its scheme writes it. */
async function digest(scheme: WebhookScheme, secret: string, content: Uint8Array<ArrayBuffer>): Promise<string> {
  const key = scheme === "hooklane-v1" ? encoder.encode(secret) : standardWebhooksKey(secret);
  const cryptoKey = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", cryptoKey, content));
  if (scheme === "standard-webhooks") return btoa(String.fromCharCode(...mac));
  return Array.from(mac, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function standardWebhooksKey(secret: string): Uint8Array<ArrayBuffer> {
  let binary: string;
  try {
    binary = atob(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
  } catch {
    binary = "";
  }
  if (binary === "") throw new TypeError("a Standard Webhooks secret is whsec_ followed by base64");
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

/** Compares every character whatever the first difference, so the time taken says nothing about the expected value. */
function constantTimeEqual(given: string, expected: string): boolean {
  if (given.length !== expected.length) return false;
  let difference = 0;
  for (let i = 0; i < expected.length; i++) difference |= given.charCodeAt(i) ^ expected.charCodeAt(i);
  return difference === 0;
}

function concat(head: Uint8Array, tail: Uint8Array): Uint8Array<ArrayBuffer> {
  const joined = new Uint8Array(head.length + tail.length);
  joined.set(head);
  joined.set(tail, head.length);
  return joined;
}

function parseEvent(body: Uint8Array): WebhookEvent {
  let event: unknown;
  try {
    event = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new WebhookVerificationError("malformed-event");
  }
  const fields = typeof event === "object" && event !== null ? (event as Record<string, unknown>) : {};
  if (typeof fields.id !== "string" || typeof fields.type !== "string") {
    throw new WebhookVerificationError("malformed-event");
  }
  return event as WebhookEvent;
}
