import { describe, expect, it } from "vitest";
import { signatureHeaders } from "./webhook-signature.ts";
import { attemptRequestHeaders } from "./webhook-request-headers.ts";

describe("an attempt's request headers, as the log shows them", () => {
  for (const scheme of ["hooklane-v1", "standard-webhooks"] as const) {
    it(`${scheme}: the signed headers' names and manifest, every signature value redacted`, () => {
      const input = {
        scheme,
        brand: "Hooklane",
        eventId: "evt_1",
        attempt: 2,
        payload: "{}",
        timestamp: 1_796_117_400,
      };
      const secrets = [
        "whsec_" + Buffer.alloc(32, 1).toString("base64"),
        "whsec_" + Buffer.alloc(32, 2).toString("base64"),
      ];
      const signed = signatureHeaders({ ...input, secrets });
      const shown = attemptRequestHeaders({
        brand: "Hooklane",
        eventId: "evt_1",
        attempt: 2,
        manifest: signed.manifest,
      });
      expect(Object.keys(shown).sort()).toEqual(["content-type", "user-agent", ...Object.keys(signed.headers)].sort());
      for (const [name, value] of Object.entries(signed.headers)) {
        const redacted = value.replace(/(v1[=,])[^, ]+/g, "$1[redacted]");
        expect(shown[name], name).toBe(redacted);
      }
      expect(JSON.stringify(shown)).not.toMatch(/[0-9a-f]{64}|[A-Za-z0-9+/]{43}=/);
    });
  }
});
