import { describe, expect, it } from "vitest";
import { PoisonMessageError } from "../../outbound/webhook-message-errors.ts";
import { laneRetryDirective } from "./vercel-lane-handler.ts";

describe("laneRetryDirective", () => {
  it("acknowledges poison instead of retrying it", () => {
    expect(laneRetryDirective(new PoisonMessageError("bad"), { deliveryCount: 1 })).toEqual({ acknowledge: true });
  });

  it("always answers with its own backoff, never leaving it to the platform", () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 20].map((deliveryCount) =>
      laneRetryDirective(new Error("db down"), { deliveryCount }),
    );
    expect(delays).toEqual([5, 10, 20, 40, 80, 160, 300, 300].map((afterSeconds) => ({ afterSeconds })));
  });
});
