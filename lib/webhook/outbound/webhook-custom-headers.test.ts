import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  customHeadersInput,
  customHeadersRefusal,
  openHeaders,
  presentHeaders,
  sealHeaders,
} from "./webhook-custom-headers.ts";
import { createSecretSealer } from "./webhook-secret-seal.ts";

const sealer = createSecretSealer(randomBytes(32).toString("base64url"));

describe("a webhook's own headers", () => {
  it("refuses the names a delivery owns, without regard to case, under the deployment's brand", () => {
    for (const name of [
      "HOST",
      "content-length",
      "Transfer-Encoding",
      "user-agent",
      "Traceparent",
      "Webhook-Id",
      "Forwarded",
      "X-Forwarded-For",
      "Via",
    ]) {
      expect(customHeadersRefusal({ [name]: "x" }, "Acme"), name).toMatchObject({ field: `headers.${name}` });
    }
    expect(customHeadersRefusal({ "Acme-Signature": "x" }, "Acme")).toMatchObject({ field: "headers.Acme-Signature" });
    // Another brand's prefix is only a name.
    expect(customHeadersRefusal({ "Hooklane-Team": "x" }, "Acme")).toBeNull();
    expect(customHeadersRefusal({ "X-A": "1", "x-a": "2" }, "Acme")).toMatchObject({ message: "x-a is given twice" });
    expect(customHeadersRefusal({ "X-A": "a".repeat(4_096), "X-B": "b".repeat(4_096) }, "Acme")).toEqual({
      field: "headers",
      message: "at most 8192 bytes of names and values (8198 given)",
    });
    expect(customHeadersRefusal(Object.fromEntries([...Array(21).keys()].map((i) => [`X-${i}`, "v"])), "Acme")).toEqual(
      { field: "headers", message: "at most 20 headers (21 given)" },
    );
  });

  it("accepts visible ASCII values with inner spaces, and nothing that could end the line", () => {
    const parse = (value: unknown) => customHeadersInput.safeParse({ "X-A": value }).success;
    expect(parse("Bearer abc.def")).toBe(true);
    for (const bad of ["", " lead", "trail ", "a\r\nb: c", "a\nb", "tab\there", "caf\u00e9", "a\u0000b"]) {
      expect(parse(bad), JSON.stringify(bad)).toBe(false);
    }
    expect(customHeadersInput.safeParse({ "Bad Name": "v" }).success).toBe(false);
    expect(parse({ value: "v", secret: false })).toBe(false);
  });

  it("seals a secret, shows it only as {secret: true}, keeps it when an update names it so, and opens it to send", async () => {
    const stored = await sealHeaders(
      { "X-Team": "billing", Authorization: { value: "Bearer s3cr3t-hdr-value", secret: true } },
      sealer,
    );
    expect(JSON.stringify(stored)).not.toContain("s3cr3t-hdr-value");
    expect(presentHeaders(stored)).toEqual({ "X-Team": "billing", Authorization: { secret: true } });
    expect(customHeadersRefusal({ Authorization: { secret: true } }, "Acme", stored)).toBeNull();
    expect(customHeadersRefusal({ Other: { secret: true } }, "Acme", stored)).toMatchObject({ field: "headers.Other" });
    // Kept under another case of its name too.
    expect(customHeadersRefusal({ authorization: { secret: true } }, "Acme", stored)).toBeNull();
    const kept = await sealHeaders({ "X-Team": "ops", authorization: { secret: true } }, sealer, stored);
    expect(await openHeaders(kept, sealer, "Acme")).toEqual({
      headers: { "X-Team": "ops", authorization: "Bearer s3cr3t-hdr-value" },
      secrets: ["Bearer s3cr3t-hdr-value"],
    });
    expect(await openHeaders(null, sealer, "Acme")).toEqual({ headers: {}, secrets: [] });
    // A name the brand of the day refuses is not sent, whatever was stored.
    expect(
      (await openHeaders({ "Acme-Signature": { value: "forged" }, "X-A": { value: "1" } }, sealer, "Acme")).headers,
    ).toEqual({ "X-A": "1" });
  });
});
