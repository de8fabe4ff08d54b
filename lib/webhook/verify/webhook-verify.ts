// The receiving side of a delivery: checks its signature, in either scheme, and returns the event; `receive` also
// drops a duplicate and reports the events missed before it, with a store of receipts (in memory, or a PostgreSQL
// table through any client with a `query` method). Dependency-free on purpose (Web Crypto, TextEncoder, btoa and atob only): it runs in Node, Deno, Bun and edge
// runtimes alike, and a subscriber may copy this one file.

/** A public key of a key set, as a JWKS document lists it: only OKP Ed25519 keys (`x`) verify `v1a`. */
export interface JsonWebKeyLike {
  kty?: string;
  crv?: string;
  kid?: string;
  x?: string;
}

/** The two signature schemes a webhook may use. */
export type WebhookScheme = "hooklane-v1" | "standard-webhooks";

/** The thin body every delivery carries: identifiers only; read the resource back through the API. */
export interface WebhookEvent {
  /** `evt_…`: the same on every attempt of a delivery, so the key to deduplicate on. */
  id: string;
  /** Always `event`. */
  object?: "event";
  type: string;
  created: string;
  livemode: boolean;
  /**
   * The event's place in this webhook's stream: 1, 2, 3… never skipped. A jump means events were missed
   * (`GET /v3/events?webhook=…&after=…` has them). Absent from `webhook.test` events.
   */
  sequence?: number;
  /**
   * With `resource` ordering, on an event sent after earlier events of its resource that were not delivered
   * (exhausted, or failing past the webhook's hold): their ids, oldest first.
   */
  ordering?: { skipped: string[] };
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
  "malformed-event":
    "the signed body is not a webhook event (JSON with an id, a type and, if any, a positive sequence)",
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
  secret?: string | readonly string[];
  /**
   * Instead of a secret: the sender's published key set (`GET /webhook-keys/<account>/jwks.json`, fetched and
   * cached as its `Cache-Control` says) for Standard Webhooks `v1a` (ed25519) signatures. The delivery's
   * `webhook-key-id` names the key; a key not in the set does not verify.
   */
  jwks?: { keys: readonly JsonWebKeyLike[] };
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
 * Verifies one delivery and returns its parsed event. With `jwks`, its Standard Webhooks `v1a` (ed25519) signature
 * is checked against the key `webhook-key-id` names in that set, and no secret is needed. Otherwise the scheme is
 * taken from the headers:
 * `webhook-signature` means Standard Webhooks (`webhook-id`, `webhook-timestamp`, `v1,<base64>` values
 * separated by spaces, keyed by the base64 after `whsec_`), otherwise `<Brand>-Signature` means
 * hooklane-v1 (`t=<unix>,v1=<hex>[,v1=<hex>…]`, keyed by the whole secret, as Stripe does). The delivery
 * passes when any `v1` value matches any secret (compared in constant time) and the timestamp is within
 * the tolerance of `now`. Throws `WebhookVerificationError` for a delivery it refuses, and a `TypeError`
 * for a secret that cannot be a key (empty, or not base64 after `whsec_` for Standard Webhooks).
 */
export async function verifyWebhook(input: VerifyWebhookInput): Promise<VerifiedWebhook> {
  const { brand = "Hooklane", toleranceSeconds = 300, now = Date.now() } = input;
  const header = headerReader(input.headers);
  const body = typeof input.payload === "string" ? encoder.encode(input.payload) : input.payload;
  let signed: SignatureHeaders;
  if (input.jwks) {
    signed = readSignatureHeaders(header, brand, "v1a");
    if (signed.scheme !== "standard-webhooks") throw new WebhookVerificationError("missing-headers");
    const content = concat(encoder.encode(signed.prefix), body);
    if (!(await verifiesWithKeySet(input.jwks.keys, header("webhook-key-id"), signed.candidates, content))) {
      throw new WebhookVerificationError("no-matching-signature");
    }
  } else {
    const secrets = typeof input.secret === "string" ? [input.secret] : (input.secret ?? []);
    if (secrets.length === 0 || secrets.some((secret) => secret === "")) {
      throw new TypeError("verifyWebhook needs the webhook's secret, or the sender's key set (jwks)");
    }
    signed = readSignatureHeaders(header, brand, "v1");
    const content = concat(encoder.encode(signed.prefix), body);
    let matched = false;
    for (const secret of secrets) {
      const expected = await digest(signed.scheme, secret, content);
      for (const candidate of signed.candidates) if (constantTimeEqual(candidate, expected)) matched = true;
    }
    if (!matched) throw new WebhookVerificationError("no-matching-signature");
  }
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

function readSignatureHeaders(
  header: (name: string) => string | undefined,
  brand: string,
  version: "v1" | "v1a",
): SignatureHeaders {
  const standard = header("webhook-signature");
  if (standard !== undefined) {
    const id = header("webhook-id");
    const timestamp = header("webhook-timestamp");
    if (id === undefined || timestamp === undefined) throw new WebhookVerificationError("missing-headers");
    // `<version>,<base64>` values separated by spaces; other versions are not checked here.
    const candidates = valuesNamed(standard.split(" "), ",", version);
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

/** Whether a `v1a` value is the named key's ed25519 signature of `content` (Web Crypto's Ed25519). */
async function verifiesWithKeySet(
  keys: readonly JsonWebKeyLike[],
  kid: string | undefined,
  candidates: string[],
  content: Uint8Array<ArrayBuffer>,
): Promise<boolean> {
  const jwk = keys.find((key) => key.kid === kid && key.kty === "OKP" && key.crv === "Ed25519" && key.x);
  if (kid === undefined || !jwk) return false;
  let key: Awaited<ReturnType<typeof crypto.subtle.importKey>>;
  try {
    key = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x }, { name: "Ed25519" }, false, [
      "verify",
    ]);
  } catch {
    return false;
  }
  for (const candidate of candidates) {
    let signature: Uint8Array<ArrayBuffer>;
    try {
      signature = Uint8Array.from(atob(candidate), (char) => char.charCodeAt(0));
    } catch {
      continue;
    }
    if (await crypto.subtle.verify("Ed25519", key, signature, content)) return true;
  }
  return false;
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
  if (fields.sequence !== undefined && !(Number.isSafeInteger(fields.sequence) && (fields.sequence as number) > 0)) {
    throw new WebhookVerificationError("malformed-event");
  }
  return event as WebhookEvent;
}

/** Where `receive` keeps the events it has seen, per stream (one per webhook you receive from). */
export interface ReceiptStore {
  /**
   * Records event `id` of `stream` as received unless it already is, atomically: of two deliveries of one event
   * at the same moment exactly one is `first`. Also returns the highest sequence the stream had recorded before
   * (null: none).
   */
  record(receipt: { stream: string; id: string; sequence: number | undefined }): Promise<{
    first: boolean;
    highest: number | null;
  }>;
  /** Forgets a receipt, so the event's next delivery is `first` again: for an event you failed to process. */
  forget(receipt: { stream: string; id: string }): Promise<void>;
}

/** Sequences never received: from `from` to `to`, both included. */
export interface SequenceGap {
  from: number;
  to: number;
}

export interface ReceiveInput extends VerifyWebhookInput {
  store: ReceiptStore;
  /** Which webhook's stream this endpoint receives: its `wh_…` id is a good name. "default" by default. */
  stream?: string;
}

export interface ReceivedWebhook extends VerifiedWebhook {
  /** False for an event already received (a retry after a lost answer, a manual retry): answer 2xx, do nothing. */
  first: boolean;
  /**
   * Events this stream has not received, between the highest it had and this one: fetch them with
   * `GET /v3/events?webhook=<id>&after=<from - 1>&limit=<to - from + 1>` (a delivery of one may also still be
   * on its way: its retry, or a concurrent request; dedupe makes taking both harmless). Null when none.
   */
  gap: SequenceGap | null;
  /** Forgets this receipt: call it when processing the event failed, so its next delivery is processed. */
  forget(): Promise<void>;
}

/**
 * `verifyWebhook`, then the receipt: whether this event was already received (dedupe on its id) and which
 * sequences before it were skipped. Verify, record and answer at once; process after answering (or in a queue),
 * so the sender never waits on your work. Throws as `verifyWebhook` does.
 */
export async function receive(input: ReceiveInput): Promise<ReceivedWebhook> {
  const verified = await verifyWebhook(input);
  const stream = input.stream ?? "default";
  const { id, sequence } = verified.event;
  const { first, highest } = await input.store.record({ stream, id, sequence });
  const gap =
    first && sequence !== undefined && sequence > (highest ?? 0) + 1
      ? { from: (highest ?? 0) + 1, to: sequence - 1 }
      : null;
  return { ...verified, first, gap, forget: () => input.store.forget({ stream, id }) };
}

/**
 * Receipts in this process's memory, the latest `capacity` events of each stream (older ones forgotten): for one
 * process, or tests. Lost on restart, so a restart can take a retried event as new; use `postgresReceiptStore`
 * to keep them.
 */
export function memoryReceiptStore(capacity = 100_000): ReceiptStore {
  const streams = new Map<string, { seen: Set<string>; highest: number | null }>();
  const streamOf = (name: string) => {
    let stream = streams.get(name);
    if (!stream) streams.set(name, (stream = { seen: new Set(), highest: null }));
    return stream;
  };
  return {
    async record({ stream: name, id, sequence }) {
      const stream = streamOf(name);
      const highest = stream.highest;
      if (stream.seen.has(id)) return { first: false, highest };
      stream.seen.add(id);
      if (stream.seen.size > capacity) stream.seen.delete(stream.seen.values().next().value!);
      if (sequence !== undefined && (highest === null || sequence > highest)) stream.highest = sequence;
      return { first: true, highest };
    },
    async forget({ stream, id }) {
      streamOf(stream).seen.delete(id);
    },
  };
}

/** Anything that runs SQL with `$1` parameters and answers `{ rows }`: a node-postgres `Pool` or `Client`, PGlite. */
export interface SqlClient {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/**
 * Receipts in a PostgreSQL table (`table`, by default `webhook_receipt`), shared by every process of the receiver
 * and kept across restarts. Call `setup()` once to create the table. Delete receipts older than the sender's
 * retry window (about 3 days with the default schedule) as you see fit: `delete from webhook_receipt where
 * received_at < now() - interval '7 days'`.
 */
export function postgresReceiptStore(
  client: SqlClient,
  table = "webhook_receipt",
): ReceiptStore & {
  setup(): Promise<void>;
} {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table))
    throw new TypeError("the receipt table's name must be a plain identifier");
  return {
    async setup() {
      await client.query(`create table if not exists ${table} (
        stream text not null,
        event_id text not null,
        sequence bigint,
        received_at timestamptz not null default now(),
        primary key (stream, event_id))`);
      await client.query(`create index if not exists ${table}_sequence_idx on ${table} (stream, sequence)`);
    },
    async record({ stream, id, sequence }) {
      // The highest before this receipt is read in the same statement's snapshot, before the insert.
      const { rows } = await client.query(
        `with highest as (select max(sequence) as value from ${table} where stream = $1),
           inserted as (
             insert into ${table} (stream, event_id, sequence) values ($1, $2, $3)
             on conflict (stream, event_id) do nothing returning 1)
         select (select value from highest)::text as highest, exists (select 1 from inserted) as first`,
        [stream, id, sequence ?? null],
      );
      const row = rows[0]!;
      return { first: row.first === true, highest: row.highest == null ? null : Number(row.highest) };
    },
    async forget({ stream, id }) {
      await client.query(`delete from ${table} where stream = $1 and event_id = $2`, [stream, id]);
    },
  };
}
