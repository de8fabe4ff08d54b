import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isFrameAncestorSource, parseFrameAncestor } from "./frame-ancestor.ts";

const problem = (text: string) => {
  const parsed = parseFrameAncestor(text);
  return "problem" in parsed ? parsed.problem : undefined;
};

describe("parseFrameAncestor", () => {
  it("reads an origin as the host-source written to frame-ancestors: lower case, no default port, no slash", () => {
    const cases: [string, string][] = [
      ["https://app.example.com", "https://app.example.com"],
      ["https://app.example.com/", "https://app.example.com"],
      ["HTTPS://App.Example.COM", "https://app.example.com"],
      ["https://app.example.com:443", "https://app.example.com"],
      ["https://app.example.com:8443", "https://app.example.com:8443"],
      ["https://app.example.com:08443", "https://app.example.com:8443"],
      ["https://xn--bcher-kva.example", "https://xn--bcher-kva.example"],
      ["https://203.0.113.7:9000", "https://203.0.113.7:9000"],
      ["https://*.example.com", "https://*.example.com"],
      ["https://*.eu.example.com:8443", "https://*.eu.example.com:8443"],
      ["http://localhost:3000", "http://localhost:3000"],
      ["http://127.0.0.1:80", "http://127.0.0.1"],
      ["http://LOCALHOST", "http://localhost"],
      ["https://localhost", "https://localhost"],
    ];
    for (const [text, source] of cases) expect(parseFrameAncestor(text), text).toEqual({ source });
  });

  it("refuses what would end the source or the directive, or quote a keyword", () => {
    expect(problem("https://x;report-uri")).toBe('must be https://host[:port]: ";" is not allowed');
    expect(problem("https://x; script-src *")).toBe('must be https://host[:port]: ";" is not allowed');
    expect(problem("https://a.example,https://b.example")).toBe('must be https://host[:port]: "," is not allowed');
    expect(problem("'self'")).toBe(`must be https://host[:port]: "'" is not allowed`);
    expect(problem('https://a"b.example')).toBe('must be https://host[:port]: "\\"" is not allowed');
    for (const [text, code] of [
      ["https://a.example https://b.example", "U+0020"],
      [" https://a.example", "U+0020"],
      ["https://a.example\n", "U+000A"],
      ["https://a.exa\tmple", "U+0009"],
      ["https://a.example\0", "U+0000"],
      ["https://a.example\r\nX-Injected: 1", "U+000D"],
      ["https://a.example\u00A0", "U+00A0"],
      ["\uFEFFhttps://a.example", "U+FEFF"],
      ["https://a.exa\u200Bmple", "U+200B"],
    ] as const) {
      expect(problem(text), JSON.stringify(text)).toBe(
        `must be https://host[:port]: whitespace and control characters (${code}) are not allowed`,
      );
    }
  });

  it("refuses any wildcard but a leading *. before a domain of two labels or more", () => {
    const message =
      "may use a wildcard only as a leading *. before a domain of two labels or more, e.g. https://*.example.com";
    for (const text of [
      "https://*",
      "https://*:443",
      "https://*.com",
      "https://*.*.example.com",
      "https://a.*.example.com",
      "https://*example.com",
      "https://app.example.*",
      "https://*.",
    ]) {
      expect(problem(text), text).toBe(message);
    }
    expect(problem("*")).toBe("must be an origin, https://host[:port], with nothing after it");
    expect(problem("https:")).toBe("must be an origin, https://host[:port], with nothing after it");
    expect(problem("https://app.example.com:*")).toBe("must have a port from 1 to 65535, or none");
  });

  it("refuses other schemes, plain http beyond localhost, and anything past the origin", () => {
    const scheme = "must be https://host[:port] (http:// only for localhost and 127.0.0.1)";
    for (const text of [
      "http://app.example.com",
      "http://*.localhost",
      "ftp://a.example",
      "data://x",
      "javascript://x",
    ]) {
      expect(problem(text), text).toBe(scheme);
    }
    const origin = "must be an origin, https://host[:port], with nothing after it";
    for (const text of [
      "app.example.com",
      "//app.example.com",
      "https://app.example.com/path",
      "https://app.example.com//",
      "https://app.example.com?x=1",
      "https://app.example.com#top",
      "https://user:pass@app.example.com",
      "https:/app.example.com",
      "",
    ]) {
      expect(problem(text), text).toBe(origin);
    }
  });

  it("refuses a host or a port that is not one", () => {
    const host = "must name a host: letters, digits and hyphens in dot-separated labels, or an IPv4 address";
    for (const text of [
      "https://",
      "https://:443",
      "https://a..example",
      "https://a.example.",
      "https://-a.example",
      "https://a_b.example",
      "https://a%2eb.example",
      "https://[::1]",
      "https://a\\b.example",
      `https://${"a".repeat(64)}.example`,
    ]) {
      expect(problem(text), text).toBe(host);
    }
    const port = "must have a port from 1 to 65535, or none";
    for (const text of [
      "https://a.example:0",
      "https://a.example:65536",
      "https://a.example:",
      "https://a.example:1:2",
    ]) {
      expect(problem(text), text).toBe(port);
    }
    expect(problem("https://bücher.example")).toBe(
      "must be https://host[:port] in ASCII: write an internationalised name in punycode (xn--…)",
    );
    expect(problem("https://a.example\u{1F600}")).toMatch(/in ASCII/);
  });
});

describe("whatever it is given", () => {
  // A CSP host-source as this module writes it: scheme, host (a leading *. at most), optional port.
  const HOST_SOURCE = /^https?:\/\/(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*(:[1-9][0-9]{0,4})?$/;
  const near = fc.oneof(
    fc.string({ unit: "binary", maxLength: 40 }),
    fc
      .tuple(
        fc.constantFrom("https://", "http://", "HTTPS://", "ftp://", "", "https:/"),
        fc.array(
          fc.constantFrom("a", "b", "Z", "0", "9", "-", ".", "*", ":", "/", ";", ",", "'", " ", "é", "\0", "["),
          {
            maxLength: 20,
          },
        ),
      )
      .map(([scheme, chars]) => scheme + chars.join("")),
  );

  it("accepts only a host-source that reads back as itself", () => {
    fc.assert(
      fc.property(near, (text) => {
        const parsed = parseFrameAncestor(text);
        if ("problem" in parsed) return;
        expect(parsed.source).toMatch(HOST_SOURCE);
        expect(parsed.source).not.toMatch(/^https?:\/\/\*\.[^.]+$/);
        expect(isFrameAncestorSource(parsed.source)).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });
});

describe("isFrameAncestorSource", () => {
  it("holds for exactly what parseFrameAncestor writes", () => {
    for (const source of ["https://app.example.com", "https://*.example.com:8443", "http://localhost:3000"]) {
      expect(isFrameAncestorSource(source), source).toBe(true);
    }
    for (const text of [
      "https://App.example.com",
      "https://app.example.com/",
      "https://app.example.com:443",
      "https://x;report-uri",
      "https://*",
      "'none'",
      "*",
      "",
    ]) {
      expect(isFrameAncestorSource(text), text).toBe(false);
    }
  });
});
