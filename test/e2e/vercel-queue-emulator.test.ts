import { BadRequestError, TooManyRequestsError, type QueueClient } from "@vercel/queue";
import { afterEach, describe, expect, it } from "vitest";
import { startVercelQueueEmulator, type VercelQueueEmulator } from "../support/vercel-queue-emulator.ts";

const DAY_S = 86_400;

/** The emulator holds the SDK to the service's documented behaviour; these drive it through the real SDK. */
describe("the Vercel Queue emulator", () => {
  let emulator: VercelQueueEmulator;
  afterEach(async () => {
    await emulator.close();
  });
  const start = () => (emulator = startVercelQueueEmulator());

  /** A consumer that records what it is pushed and answers with `directive` when it throws. */
  function consumer(
    client: QueueClient,
    options: { fail?: boolean; afterSeconds?: number; hold?: Promise<void> } = {},
  ) {
    const seen: unknown[] = [];
    const handler = client.handleCallback(
      async (message) => {
        seen.push(message);
        await options.hold;
        if (options.fail) throw new Error("not yet");
      },
      { retry: () => (options.afterSeconds === undefined ? undefined : { afterSeconds: options.afterSeconds }) },
    );
    return { seen, handler };
  }

  it("refuses a delay beyond the message's retention, and a retention beyond 7 days", async () => {
    const { client, refusals } = start();
    await expect(client.send("t", {}, { delaySeconds: DAY_S + 1 })).rejects.toThrow(BadRequestError);
    await expect(client.send("t", {}, { retentionSeconds: 7 * DAY_S + 1 })).rejects.toThrow(BadRequestError);
    await expect(client.send("t", {}, { idempotencyKey: "k".repeat(257) })).rejects.toThrow(BadRequestError);
    await expect(client.send("t", {}, { delaySeconds: 2 * DAY_S, retentionSeconds: 7 * DAY_S })).resolves.toEqual({
      messageId: expect.any(String),
    });
    expect(refusals.map((r) => r.status)).toEqual([400, 400, 400]);
  });

  it("refuses a visibility change beyond one hour", async () => {
    const { client, refusals } = start();
    const { handler } = consumer(client, { fail: true, afterSeconds: 7_200 });
    emulator.consume(["t"], handler);
    await client.send("t", { n: 1 });
    await emulator.drained();
    expect(refusals).toEqual([expect.objectContaining({ operation: "visibility", status: 400 })]);
  });

  it("delivers a repeated idempotency key once within min(retention, 24 h), and again after", async () => {
    const { client } = start();
    const first = await client.send("t", { n: 1 }, { idempotencyKey: "same" });
    expect(await client.send("t", { n: 2 }, { idempotencyKey: "same" })).toEqual(first);
    expect(emulator.messages).toHaveLength(1);
    emulator.advance(DAY_S * 1_000);
    await client.send("t", { n: 3 }, { idempotencyKey: "same" });
    expect(emulator.payloads("t")).toEqual([{ n: 1 }, { n: 3 }]);
    // A short retention shortens the window.
    await client.send("t", { n: 4 }, { idempotencyKey: "short", retentionSeconds: 60 });
    emulator.advance(61_000);
    await client.send("t", { n: 5 }, { idempotencyKey: "short" });
    expect(emulator.messages).toHaveLength(4);
  });

  it("lets a message expire at the end of its retention", async () => {
    const { client } = start();
    await client.send("t", { n: 1 }, { delaySeconds: 60, retentionSeconds: 60 });
    const { seen, handler } = consumer(client);
    emulator.consume(["t"], handler);
    emulator.advance(61_000);
    await emulator.drained();
    expect(seen).toEqual([]);
  });

  it("answers 429 when rate limited, and 202 for a message accepted without an id", async () => {
    const { client } = start();
    emulator.throttle(1, 7);
    await expect(client.send("t", {})).rejects.toThrow(TooManyRequestsError);
    expect(emulator.refusals).toEqual([{ operation: "send", status: 429, reason: "rate limited" }]);
    emulator.deferSends = true;
    expect(await client.send("t", { n: 1 })).toEqual({ messageId: null });
    const batch = await client.experimental_sendBatch("t", [{ payload: { n: 2 } }, { payload: { n: 3 } }]);
    expect(batch.map((r) => r.status)).toEqual(["deferred", "deferred"]);
    expect(emulator.payloads("t")).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  it("judges each message of a batch on its own", async () => {
    const { client } = start();
    const results = await client.experimental_sendBatch("t", [
      { payload: { n: 1 }, idempotencyKey: "a" },
      { payload: { n: 2 }, delaySeconds: 2 * DAY_S },
      { payload: { n: 3 }, idempotencyKey: "a" },
    ]);
    expect(results).toEqual([
      { status: "sent", messageId: expect.any(String) },
      expect.objectContaining({ status: "failed", statusCode: 400 }),
      { status: "sent", messageId: (results[0] as { messageId: string }).messageId },
    ]);
    expect(emulator.payloads("t")).toEqual([{ n: 1 }]);
  });

  it("pushes a pinned message only to its deployment, never once that deployment is gone", async () => {
    start();
    const old = emulator.clientFor("dpl_old");
    const current = emulator.clientFor("dpl_new");
    const atOld = consumer(old);
    const atNew = consumer(current);
    emulator.consume(["t"], atOld.handler, { deploymentId: "dpl_old" });
    emulator.consume(["t"], atNew.handler, { deploymentId: "dpl_new" });
    await old.send("t", { from: "old" }, { delaySeconds: 3_600 });
    await old.send("t", { from: "old, later" }, { delaySeconds: 7_200 });
    await current.send("t", { from: "new" });
    emulator.advance(3_600_000);
    await emulator.drained();
    expect(atOld.seen).toEqual([{ from: "old" }]);
    expect(atNew.seen).toEqual([{ from: "new" }]);
    emulator.retire("dpl_old");
    emulator.advance(3_600_000);
    await emulator.drained();
    expect(atOld.seen).toEqual([{ from: "old" }]);
    expect(atNew.seen).toEqual([{ from: "new" }]);
  });

  it("pushes no more at once than the trigger's maxConcurrency", async () => {
    const { client } = start();
    let release = () => {};
    const hold = new Promise<void>((resolve) => (release = resolve));
    const { seen, handler } = consumer(client, { hold });
    emulator.consume(["t"], handler, { maxConcurrency: 3 });
    await client.experimental_sendBatch(
      "t",
      Array.from({ length: 10 }, (_, n) => ({ payload: { n } })),
    );
    expect(emulator.peakPushes).toBe(3);
    expect(seen).toHaveLength(3);
    release();
    await emulator.drained();
    expect(seen).toHaveLength(10);
    expect(emulator.peakPushes).toBe(3);
  });
});
