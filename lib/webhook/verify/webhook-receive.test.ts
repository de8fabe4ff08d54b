import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildEventBody } from "../outbound/webhook-event-body.ts";
import { generateWebhookSecret, signatureHeaders } from "../outbound/webhook-signature.ts";
import {
  memoryReceiptStore,
  postgresReceiptStore,
  receive,
  WebhookVerificationError,
  type ReceiptStore,
} from "./webhook-verify.ts";

const secret = generateWebhookSecret();

/** A delivery of event `evt_<n>` at `sequence` n (none for a test event), signed with the webhook's secret. */
function delivery(n: number, options: { sequence?: number | null; secret?: string } = {}) {
  const id = `evt_${n}`;
  const payload = buildEventBody({
    id,
    type: options.sequence === null ? "webhook.test" : "payment-debt.created",
    created: "2026-12-01T00:00:00.000Z",
    livemode: true,
    object: "payment-debt",
    resourceId: `pd_${n}`,
    account: "acc_1",
    ...(options.sequence === null ? {} : { sequence: options.sequence ?? n }),
  });
  const { headers } = signatureHeaders({
    scheme: "hooklane-v1",
    brand: "Hooklane",
    eventId: id,
    attempt: 1,
    payload,
    secrets: [options.secret ?? secret],
    timestamp: Math.floor(Date.now() / 1_000),
  });
  return { payload, headers, secret };
}

let pglite: PGlite;
beforeAll(async () => {
  pglite = await PGlite.create("memory://");
});
afterAll(() => pglite?.close());

const stores: Array<[string, () => Promise<ReceiptStore>]> = [
  ["in memory", async () => memoryReceiptStore()],
  [
    "in PostgreSQL",
    async () => {
      const table = `receipts_${Math.random().toString(36).slice(2, 8)}`;
      const store = postgresReceiptStore(pglite, table);
      await store.setup();
      await store.setup(); // Twice: setting up an existing table changes nothing.
      return store;
    },
  ],
];

describe.each(stores)("receive() with receipts %s", (_, makeStore) => {
  it("takes each event once, reports each jump with the range missed, and takes the missed ones late", async () => {
    const store = await makeStore();
    const take = async (n: number, stream = "wh_a") => {
      const got = await receive({ ...delivery(n), store, stream });
      return { id: got.event.id, first: got.first, gap: got.gap };
    };
    expect(await take(1)).toEqual({ id: "evt_1", first: true, gap: null });
    expect(await take(2)).toEqual({ id: "evt_2", first: true, gap: null });
    expect(await take(2)).toEqual({ id: "evt_2", first: false, gap: null });
    expect(await take(6)).toEqual({ id: "evt_6", first: true, gap: { from: 3, to: 5 } });
    // The missed ones, late (a retry, or fetched from GET /v3/events): first, and no gap below the highest.
    for (const n of [4, 3, 5]) expect(await take(n)).toEqual({ id: `evt_${n}`, first: true, gap: null });
    expect(await take(4)).toEqual({ id: "evt_4", first: false, gap: null });
    expect(await take(7)).toEqual({ id: "evt_7", first: true, gap: null });
    // Another stream is another webhook: its own sequence, from its own start.
    expect(await take(3, "wh_b")).toEqual({ id: "evt_3", first: true, gap: { from: 1, to: 2 } });
  });

  it("starts a stream's first gap at 1, and never reports one for a test event", async () => {
    const store = await makeStore();
    const first = await receive({ ...delivery(4), store });
    expect(first.gap).toEqual({ from: 1, to: 3 });
    const test = await receive({ ...delivery(99, { sequence: null }), store });
    expect([test.first, test.gap, test.event.sequence]).toEqual([true, null, undefined]);
  });

  it("forgets an event whose processing failed, so its next delivery is first again", async () => {
    const store = await makeStore();
    const got = await receive({ ...delivery(1), store });
    await got.forget();
    expect((await receive({ ...delivery(1), store })).first).toBe(true);
    expect((await receive({ ...delivery(1), store })).first).toBe(false);
  });

  it("records nothing for a delivery that fails verification", async () => {
    const store = await makeStore();
    await expect(receive({ ...delivery(1, { secret: generateWebhookSecret() }), secret, store })).rejects.toThrow(
      WebhookVerificationError,
    );
    expect((await receive({ ...delivery(1), store })).first).toBe(true);
  });
});

describe("receive()", () => {
  it("refuses a signed body whose sequence is not a positive integer", async () => {
    for (const sequence of [0, -1, 1.5, "3"]) {
      const payload = JSON.stringify({ id: "evt_x", type: "payment-debt.created", sequence });
      const { headers } = signatureHeaders({
        scheme: "hooklane-v1",
        brand: "Hooklane",
        eventId: "evt_x",
        attempt: 1,
        payload,
        secrets: [secret],
        timestamp: Math.floor(Date.now() / 1_000),
      });
      await expect(receive({ payload, headers, secret, store: memoryReceiptStore() })).rejects.toMatchObject({
        reason: "malformed-event",
      });
    }
  });

  it("keeps the latest receipts of a stream in memory up to its capacity", async () => {
    const store = memoryReceiptStore(2);
    for (const n of [1, 2, 3]) await receive({ ...delivery(n), store });
    expect((await receive({ ...delivery(3), store })).first).toBe(false);
    expect((await receive({ ...delivery(1), store })).first).toBe(true);
  });

  it("refuses a table name that is not a plain identifier", () => {
    expect(() => postgresReceiptStore(pglite, "receipts; drop table x")).toThrow(TypeError);
  });
});
