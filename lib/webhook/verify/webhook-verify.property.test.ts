// verifyWebhook, our signer, the stripe SDK and the standardwebhooks library must agree on every input: each
// accepts what the others sign, and all refuse the same tampered bodies, wrong secrets and stale timestamps.
import fc from "fast-check";
import Stripe from "stripe";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { signatureHeaders } from "../outbound/webhook-signature.ts";
import { verifyWebhook, WebhookVerificationError, type WebhookScheme } from "./webhook-verify.ts";

const stripe = new Stripe("sk_test_x");
const TOLERANCE = 300;
const RUNS = 200;

const secretArb = fc
  .uint8Array({ minLength: 16, maxLength: 64 })
  .map((key) => `whsec_${btoa(String.fromCharCode(...key))}`);
const eventArb = fc.record({
  id: fc.stringMatching(/^evt_[A-Za-z0-9_-]{1,24}$/),
  type: fc.stringMatching(/^[a-z-]{1,12}(\.[a-z-]{1,12}){1,2}$/),
  created: fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
  livemode: fc.boolean(),
  data: fc.dictionary(fc.string(), fc.jsonValue({ stringUnit: "grapheme" })),
});
// Seconds from now; the libraries read the clock themselves, so nothing lands within 5 s of the tolerance's edge.
const offsetArb = fc.oneof(
  fc.integer({ min: -(TOLERANCE - 5), max: TOLERANCE - 5 }),
  fc.integer({ min: TOLERANCE + 5, max: 10 ** 7 }),
  fc.integer({ min: -(10 ** 7), max: -(TOLERANCE + 5) }),
);
type Fault = "none" | "tampered-body" | "wrong-secret" | "altered-signature";
const caseArb = fc.record({
  event: eventArb,
  indent: fc.constantFrom(undefined, 2),
  // The signer's secrets, active first; the receiver holds the one at `held` (modulo their number).
  secrets: fc.uniqueArray(secretArb, { minLength: 1, maxLength: 3 }),
  held: fc.nat(),
  offset: offsetArb,
  fault: fc.constantFrom<Fault>("none", "tampered-body", "wrong-secret", "altered-signature"),
  wrongSecret: secretArb,
  position: fc.nat(),
});
type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;

/** The body, headers and secret a receiver sees for `c`, from headers some signer made for the real body. */
function received(c: Case, signed: { payload: string; headers: Record<string, string> }, signatureHeader: string) {
  const headers = { ...signed.headers };
  if (c.fault === "altered-signature") {
    // Every signature in the header, so that no secret of a rotation still matches.
    headers[signatureHeader] = headers[signatureHeader]!.replace(/(?<=v1[=,])[^, ]+/g, (value) =>
      alter(value, c.position),
    );
  }
  const payload = c.fault === "tampered-body" ? alter(signed.payload, c.position) : signed.payload;
  const held = c.secrets[c.held % c.secrets.length]!;
  const secret = c.fault === "wrong-secret" && !c.secrets.includes(c.wrongSecret) ? c.wrongSecret : held;
  const genuine = c.fault === "none" || (c.fault === "wrong-secret" && secret === held);
  return { payload, headers, secret, genuine };
}

/** `text` with one character changed. */
function alter(text: string, position: number): string {
  const at = position % text.length;
  return text.slice(0, at) + (text[at] === "a" ? "b" : "a") + text.slice(at + 1);
}

async function ours(
  scheme: WebhookScheme,
  input: { payload: string; headers: Record<string, string>; secret: string },
) {
  try {
    const verified = await verifyWebhook(input);
    expect(verified.scheme).toBe(scheme);
    return "accepted";
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason;
    throw error;
  }
}

function accepts(verify: () => unknown): boolean {
  try {
    verify();
    return true;
  } catch {
    return false;
  }
}

/** What verifyWebhook must say: a genuine signature is judged by its age, anything else is refused. */
function expected(genuine: boolean, offset: number) {
  if (!genuine) return "no-matching-signature";
  return Math.abs(offset) <= TOLERANCE ? "accepted" : "timestamp-outside-tolerance";
}

/** What our signer sends for `c`, signed `c.offset` seconds from now, and the secret the receiver holds. */
function signedByUs(c: Case, scheme: WebhookScheme) {
  const payload = JSON.stringify(c.event, null, c.indent);
  const timestamp = Math.floor(Date.now() / 1_000) + c.offset;
  const { headers } = signatureHeaders({
    scheme,
    brand: "Hooklane",
    eventId: c.event.id,
    attempt: 1,
    payload,
    secrets: c.secrets,
    timestamp,
  });
  return { payload, timestamp, headers, held: c.secrets[c.held % c.secrets.length]! };
}

describe("verifyWebhook against the signer and the reference libraries", () => {
  it(`hooklane-v1: agrees with the stripe SDK on our signer's headers and on stripe's (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const header = "Hooklane-Signature";
        const { payload, timestamp, headers, held } = signedByUs(c, "hooklane-v1");
        const stripeHeader = stripe.webhooks.generateTestHeaderString({ payload, secret: held, timestamp });
        const deliveries = [
          received(c, { payload, headers }, header),
          received(c, { payload, headers: { [header]: stripeHeader } }, header),
        ];
        for (const r of deliveries) {
          const verdict = await ours("hooklane-v1", r);
          expect(verdict).toBe(expected(r.genuine, c.offset));
          // Stripe, unlike us, accepts a timestamp from the future however far ahead.
          const byStripe = accepts(() => stripe.webhooks.constructEvent(r.payload, r.headers[header]!, r.secret));
          expect(byStripe).toBe(verdict === "accepted" || (r.genuine && c.offset > 0));
        }
      }),
      { numRuns: RUNS },
    );
  });

  it(`standard-webhooks: agrees with the standardwebhooks library on our signer's headers and on its own (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const header = "webhook-signature";
        const { payload, timestamp, headers, held } = signedByUs(c, "standard-webhooks");
        const librarySigned = {
          "webhook-id": c.event.id,
          "webhook-timestamp": String(timestamp),
          [header]: new Webhook(held).sign(c.event.id, new Date(timestamp * 1_000), payload),
        };
        const deliveries = [
          received(c, { payload, headers }, header),
          received(c, { payload, headers: librarySigned }, header),
        ];
        for (const r of deliveries) {
          const verdict = await ours("standard-webhooks", r);
          expect(verdict).toBe(expected(r.genuine, c.offset));
          expect(accepts(() => new Webhook(r.secret).verify(r.payload, r.headers))).toBe(verdict === "accepted");
        }
      }),
      { numRuns: RUNS },
    );
  });
});
