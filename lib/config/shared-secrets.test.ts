import { describe, expect, it } from "vitest";
import {
  DEVELOPMENT_JWT_SECRET,
  DEVELOPMENT_SECRET_KEY,
  isDevelopmentJwtSecret,
  isDevelopmentSecretKey,
  secretTextProblem,
} from "./shared-secrets.ts";

const KEY_BYTES = Buffer.from(DEVELOPMENT_SECRET_KEY, "base64url");

/** Every spelling of the published key a base64 decoder reads as its 32 bytes. */
const developmentKeySpellings = [
  DEVELOPMENT_SECRET_KEY,
  // The last character keeps 2 bits no byte holds: M, N, O and P all end the same 32 bytes.
  ...["N", "O", "P"].map((last) => DEVELOPMENT_SECRET_KEY.slice(0, -1) + last),
  KEY_BYTES.toString("base64"),
  `${DEVELOPMENT_SECRET_KEY}=`,
  `${DEVELOPMENT_SECRET_KEY}==`,
];

describe("the published development key, by value", () => {
  it("is recognised however it is spelled", () => {
    for (const spelling of developmentKeySpellings) expect(isDevelopmentSecretKey(spelling), spelling).toBe(true);
  });

  it("is not any other key, nor a neighbour of it", () => {
    expect(isDevelopmentSecretKey("k".repeat(43))).toBe(false);
    expect(isDevelopmentSecretKey(`${DEVELOPMENT_SECRET_KEY.slice(0, -1)}Q`)).toBe(false);
    expect(isDevelopmentSecretKey(`A${DEVELOPMENT_SECRET_KEY.slice(1)}`)).toBe(false);
    expect(isDevelopmentSecretKey("")).toBe(false);
  });
});

describe("the published development JWT secret, as the HMAC key it makes", () => {
  it("is recognised with the NUL bytes HMAC pads it with", () => {
    expect(isDevelopmentJwtSecret(DEVELOPMENT_JWT_SECRET)).toBe(true);
    expect(isDevelopmentJwtSecret(`${DEVELOPMENT_JWT_SECRET}\0`)).toBe(true);
    expect(isDevelopmentJwtSecret(`${DEVELOPMENT_JWT_SECRET}\0\0\0\0`)).toBe(true);
  });

  it("is not a secret that differs by any other byte", () => {
    expect(isDevelopmentJwtSecret(`${DEVELOPMENT_JWT_SECRET} `)).toBe(false);
    expect(isDevelopmentJwtSecret(`\0${DEVELOPMENT_JWT_SECRET}`)).toBe(false);
    expect(isDevelopmentJwtSecret(DEVELOPMENT_JWT_SECRET.slice(0, -1))).toBe(false);
    expect(isDevelopmentJwtSecret(DEVELOPMENT_JWT_SECRET.padEnd(100, "x"))).toBe(false);
    expect(isDevelopmentJwtSecret("")).toBe(false);
  });
});

describe("secretTextProblem", () => {
  it("accepts a secret as a generator writes it, inner spaces and non-ASCII included", () => {
    for (const text of ["k".repeat(43), "correct horse battery staple", "pässwörd-😀-秘密", "a"]) {
      expect(secretTextProblem(text), text).toBeUndefined();
    }
  });

  it("names what clings to either end, by code point, without repeating the secret", () => {
    const cases: [string, string][] = [
      [`${DEVELOPMENT_JWT_SECRET}\0`, "ends with a control character (U+0000): remove it"],
      [`${DEVELOPMENT_JWT_SECRET}\n`, "ends with whitespace (U+000A): remove it"],
      [`${DEVELOPMENT_JWT_SECRET}\r\n`, "ends with whitespace (U+000A): remove it"],
      [` ${DEVELOPMENT_JWT_SECRET}`, "starts with whitespace (U+0020): remove it"],
      [`\uFEFF${DEVELOPMENT_JWT_SECRET}`, "starts with whitespace (U+FEFF): remove it"],
      [`${DEVELOPMENT_JWT_SECRET}\u00A0`, "ends with whitespace (U+00A0): remove it"],
      [`${DEVELOPMENT_JWT_SECRET}\u200B`, "ends with an invisible character (U+200B): remove it"],
      [`${DEVELOPMENT_JWT_SECRET}\u2028`, "ends with whitespace (U+2028): remove it"],
      [`${DEVELOPMENT_JWT_SECRET}\u{E0001}`, "ends with an invisible character (U+E0001): remove it"],
      [`${DEVELOPMENT_JWT_SECRET}\x7F`, "ends with a control character (U+007F): remove it"],
      [`${DEVELOPMENT_JWT_SECRET}\x85`, "ends with a control character (U+0085): remove it"],
      [`ab\0cd`, "contains a control character (U+0000) at character 3: remove it"],
      [`ab\x1Bcd`, "contains a control character (U+001B) at character 3: remove it"],
      [`ab\tcd`, "contains whitespace (U+0009) at character 3: remove it"],
      [`😀😀\0cd`, "contains a control character (U+0000) at character 3: remove it"],
      ["\0", "starts with a control character (U+0000): remove it"],
    ];
    for (const [text, problem] of cases) {
      expect(secretTextProblem(text), JSON.stringify(text)).toBe(problem);
      expect(problem).not.toContain(DEVELOPMENT_JWT_SECRET);
    }
  });

  it("refuses a lone surrogate, which would be encoded as another character", () => {
    expect(secretTextProblem("abc\uD800def")).toBe("is not valid Unicode (it holds a lone surrogate): set it again");
  });

  it("leaves the empty string and very long values to the variable's own rules", () => {
    expect(secretTextProblem("")).toBeUndefined();
    expect(secretTextProblem("x".repeat(1_000_000))).toBeUndefined();
    expect(secretTextProblem(`${"x".repeat(1_000_000)}\0`)).toMatch(/^ends with a control character/);
  });
});
