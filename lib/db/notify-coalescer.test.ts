import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { NotifyCoalescer } from "./pipelined-transaction.ts";

/** A NotifyCoalescer whose own NOTIFYs are recorded and settled by hand. */
function coalescer() {
  const sends: Array<{ resolve(): void; reject(): void }> = [];
  const notifier = new NotifyCoalescer(
    () => new Promise<void>((resolve, reject) => sends.push({ resolve, reject: () => reject(new Error("down")) })),
    { delayMs: 2, retryMs: 1_000 },
  );
  return { notifier, sends };
}

describe("NOTIFYs shared by concurrent commits", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it("lets one COMMIT at a time carry the NOTIFY; the next one to claim covers those that went without", async () => {
    const { notifier, sends } = coalescer();
    const first = notifier.claim();
    expect(first).toBeDefined();
    expect(notifier.claim()).toBeUndefined();
    notifier.committedQuietly();
    notifier.committedQuietly();
    notifier.carried(first!, true);
    // A COMMIT claims within the delay: it carries the NOTIFY for the two, nothing is sent on its own.
    const next = notifier.claim();
    expect(next).toBeDefined();
    await vi.advanceTimersByTimeAsync(10);
    expect(sends.length).toBe(0);
    notifier.carried(next!, true);
    await vi.advanceTimersByTimeAsync(10);
    expect(sends.length).toBe(0);
  });

  it("sends one of its own when no COMMIT claims within the delay, and then nothing more", async () => {
    const { notifier, sends } = coalescer();
    const first = notifier.claim()!;
    notifier.committedQuietly();
    notifier.carried(first, true);
    await vi.advanceTimersByTimeAsync(1);
    expect(sends.length).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(sends.length).toBe(1);
    // While it is on its way, commits go without; once it is delivered they still need one.
    expect(notifier.claim()).toBeUndefined();
    notifier.committedQuietly();
    sends[0]!.resolve();
    await vi.advanceTimersByTimeAsync(10);
    expect(sends.length).toBe(2);
    sends[1]!.resolve();
    await vi.advanceTimersByTimeAsync(10);
    expect(sends.length).toBe(2);
    expect(notifier.claim()).toBeDefined();
  });

  it("covers the commits whose carrier failed, and retries a failed NOTIFY after a while", async () => {
    const { notifier, sends } = coalescer();
    const carrier = notifier.claim()!;
    notifier.committedQuietly();
    notifier.carried(carrier, false);
    await vi.advanceTimersByTimeAsync(2);
    expect(sends.length).toBe(1);
    sends[0]!.reject();
    await vi.advanceTimersByTimeAsync(999);
    expect(sends.length).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sends.length).toBe(2);
  });
});
