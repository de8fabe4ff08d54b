import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { CONSENT_SCHEDULE_MS, judgeConsent, nextConsentRequest } from "./endpoint-consent.ts";
import type { DeliveryOutcome } from "./webhook-delivery-outcome.ts";
import { createHttpSender } from "./webhook-http-sender.ts";

const ok: DeliveryOutcome = { kind: "success", statusCode: 200, responseExcerpt: null };

describe("judgeConsent", () => {
  it("takes a 2xx allowing the origin by name (in any case) or *", () => {
    expect(judgeConsent(ok, { "webhook-allowed-origin": "hooklane" }, "hooklane")).toEqual({ granted: true });
    expect(judgeConsent(ok, { "webhook-allowed-origin": "HookLane" }, "hooklane")).toEqual({ granted: true });
    expect(judgeConsent(ok, { "webhook-allowed-origin": "*" }, "hooklane")).toEqual({ granted: true });
    expect(judgeConsent(ok, { "webhook-allowed-origin": "other.example, hooklane" }, "hooklane")).toEqual({
      granted: true,
    });
  });

  it("says why anything else is not consent", () => {
    expect(judgeConsent(ok, {}, "hooklane")).toEqual({
      granted: false,
      error: "answered HTTP 200 without WebHook-Allowed-Origin",
    });
    expect(judgeConsent(ok, { "webhook-allowed-origin": "evil.example" }, "hooklane")).toEqual({
      granted: false,
      error: "answered WebHook-Allowed-Origin: evil.example, which does not allow hooklane",
    });
    const refused: DeliveryOutcome = {
      kind: "failure",
      errorClass: "http_status",
      message: "HTTP 405",
      statusCode: 405,
      responseExcerpt: null,
      gone: false,
    };
    expect(judgeConsent(refused, { "webhook-allowed-origin": "*" }, "hooklane")).toEqual({
      granted: false,
      error: "answered HTTP 405: not the consent answer",
    });
    const down: DeliveryOutcome = {
      ...refused,
      errorClass: "connection_refused",
      message: "refused",
      statusCode: null,
    };
    expect(judgeConsent(down, {}, "hooklane")).toEqual({ granted: false, error: "refused: not the consent answer" });
  });
});

describe("nextConsentRequest", () => {
  it("follows the schedule, then leaves the next request to the owner", () => {
    const at = new Date("2026-12-06T00:00:00Z");
    expect(nextConsentRequest(1, at)).toEqual(new Date(at.getTime() + 60_000));
    expect(nextConsentRequest(CONSENT_SCHEDULE_MS.length, at)).toEqual(new Date(at.getTime() + 24 * 3_600_000));
    expect(nextConsentRequest(CONSENT_SCHEDULE_MS.length + 1, at)).toBeNull();
  });
});

describe("HttpSender.options", () => {
  it("sends an OPTIONS with no body and keeps only the answer headers asked for", async () => {
    const seen: Array<{ method: string | undefined; length: string | undefined; origin: unknown }> = [];
    const server = createServer((request, response) => {
      seen.push({
        method: request.method,
        length: request.headers["content-length"],
        origin: request.headers["webhook-request-origin"],
      });
      response.setHeader("webhook-allowed-origin", "hooklane");
      response.setHeader("x-other", "dropped");
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const sender = createHttpSender({ timeoutMs: 2_000, connectionsPerOrigin: 1, allowedHosts: ["127.0.0.1"] });
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
      const answer = await sender.options(url, { "webhook-request-origin": "hooklane" }, ["webhook-allowed-origin"]);
      expect(answer.outcome).toMatchObject({ kind: "success", statusCode: 200 });
      expect(answer.headers).toEqual({ "webhook-allowed-origin": "hooklane" });
      expect(seen).toEqual([{ method: "OPTIONS", length: undefined, origin: "hooklane" }]);
    } finally {
      await sender.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
