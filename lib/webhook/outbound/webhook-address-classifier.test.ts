import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { classifyAddress } from "./webhook-address-classifier.ts";
import { CallbackUrlError, validateCallbackUrl } from "./webhook-callback-url.ts";
import { formatIpv4, formatIpv6, parseIpv4, parseIpv6 } from "./webhook-ip-literal.ts";

// [address in some notation, "public" or a word of the range that refuses it]
const TABLE: ReadonlyArray<readonly [string, string]> = [
  // IPv4 special-purpose registry, multicast, reserved, broadcast
  ["0.0.0.0", "this network"],
  ["0.1.2.3", "this network"],
  ["10.0.0.1", "private-use"],
  ["10.255.255.255", "private-use"],
  ["100.64.0.1", "CGNAT"],
  ["100.127.255.254", "CGNAT"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["169.254.169.254", "link-local"],
  ["169.254.0.1", "link-local"],
  ["172.16.0.1", "private-use"],
  ["172.31.255.255", "private-use"],
  ["192.0.0.8", "IETF protocol assignments"],
  ["192.0.0.170", "IETF protocol assignments"],
  ["192.0.2.1", "documentation"],
  ["192.31.196.1", "AS112"],
  ["192.52.193.1", "AMT"],
  ["192.88.99.1", "6to4 relay"],
  ["192.168.1.1", "private-use"],
  ["192.175.48.1", "AS112"],
  ["198.18.0.1", "benchmarking"],
  ["198.19.255.255", "benchmarking"],
  ["198.51.100.7", "documentation"],
  ["203.0.113.9", "documentation"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.254", "reserved"],
  ["255.255.255.255", "broadcast"],
  // Odd IPv4 notations
  ["2130706433", "loopback"],
  ["0x7f000001", "loopback"],
  ["017700000001", "loopback"],
  ["0x7f.0.0.1", "loopback"],
  ["0177.0.0.1", "loopback"],
  ["0177.0000.0000.0001", "loopback"],
  ["127.1", "loopback"],
  ["127.0.1", "loopback"],
  ["0x7F.1", "loopback"],
  ["127.0.0.1.", "loopback"],
  ["0", "this network"],
  ["0x0", "this network"],
  ["0xa9fea9fe", "link-local"],
  ["2852039166", "link-local"],
  ["0251.0376.0251.0376", "link-local"],
  ["169.254.43518", "link-local"],
  ["169.16689662", "link-local"],
  ["0xa.0x0.0x0.0x1", "private-use"],
  ["012.1", "private-use"],
  ["3232235777", "private-use"],
  ["0xc0.0xa8.1.1", "private-use"],
  // IPv6 special-purpose registry
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback"],
  ["[::1]", "loopback"],
  ["100::1", "discard-only"],
  ["100:0:0:1::1", "dummy prefix"],
  ["2001:2::1", "IETF protocol assignments"],
  ["2001:10::1", "IETF protocol assignments"],
  ["2001:db8::1", "documentation"],
  ["2001:DB8:0:0:0:0:0:1", "documentation"],
  ["3fff::1", "documentation"],
  ["2620:4f:8000::53", "AS112"],
  ["5f00::1", "SRv6"],
  ["fc00::1", "unique-local"],
  ["fd12:3456:789a::1", "unique-local"],
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local"],
  ["febf:ffff::1", "link-local"],
  ["fec0::1", "site-local"],
  ["ff02::1", "multicast"],
  ["ff05::1:3", "multicast"],
  ["4000::1", "reserved"],
  ["::2:0:0:1", "reserved"],
  // Embedded IPv4, judged by the IPv4 inside
  ["::ffff:127.0.0.1", "IPv4-mapped"],
  ["::ffff:7f00:1", "IPv4-mapped"],
  ["0:0:0:0:0:ffff:169.254.169.254", "IPv4-mapped"],
  ["::FFFF:A9FE:A9FE", "IPv4-mapped"],
  ["::ffff:10.0.0.1", "private-use"],
  ["::127.0.0.1", "IPv4-compatible"],
  ["::a00:1", "IPv4-compatible"],
  ["::ffff:0:192.168.0.1", "IPv4-translated"],
  ["64:ff9b::10.0.0.1", "NAT64"],
  ["64:ff9b::a9fe:a9fe", "NAT64"],
  ["64:ff9b:1::192.168.1.1", "local-use NAT64"],
  ["64:ff9b:1:abcd::7f00:1", "local-use NAT64"],
  ["2002:a00:1::", "6to4"],
  ["2002:7f00:1:1234::1", "6to4"],
  ["2002:c0a8:101::1", "6to4"],
  ["2001:0:a00:1::808:808", "Teredo"], // server 10.0.0.1
  ["2001:0:808:808::f5ff:fffe", "Teredo"], // client 10.0.0.1 (inverted)
  ["2001:0:808:808:0:0:3fff:fdd2", "Teredo"], // client 192.0.2.45
  // Public controls
  ["8.8.8.8", "public"],
  ["1.1.1.1", "public"],
  ["9.255.255.255", "public"],
  ["11.0.0.0", "public"],
  ["100.63.255.255", "public"],
  ["100.128.0.0", "public"],
  ["126.255.255.255", "public"],
  ["128.0.0.0", "public"],
  ["169.253.255.255", "public"],
  ["169.255.0.0", "public"],
  ["172.15.255.255", "public"],
  ["172.32.0.0", "public"],
  ["192.0.1.255", "public"],
  ["192.167.255.255", "public"],
  ["192.169.0.0", "public"],
  ["198.17.255.255", "public"],
  ["198.20.0.0", "public"],
  ["223.255.255.255", "public"],
  ["134744072", "public"],
  ["0x8.0x8.0x8.0x8", "public"],
  ["2001:4860:4860::8888", "public"],
  ["2606:4700:4700::1111", "public"],
  ["2001:200::1", "public"],
  ["2a00:1450:4001::200e", "public"],
  ["::ffff:8.8.8.8", "public"],
  ["64:ff9b::8.8.8.8", "public"],
  ["64:ff9b:1::1.1.1.1", "public"],
  ["2002:808:808::1", "public"],
  ["2001:0:808:808::f7f7:f7f7", "public"], // server 8.8.8.8, client 8.8.8.8
];

describe("the address classifier", () => {
  it(`classifies a table of ${TABLE.length} addresses`, () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(80);
    const wrong = TABLE.flatMap(([address, expected]) => {
      const verdict = classifyAddress(address);
      const ok = expected === "public" ? verdict.public : !verdict.public && verdict.range.includes(expected);
      return ok ? [] : [{ address, expected, verdict }];
    });
    expect(wrong).toEqual([]);
  });

  it("never calls text that is not an address public", () => {
    for (const text of ["example.com", "", "1.2.3.4.5", "::1::", "1:2:3:4:5:6:7:8:9", "08.0.0.1", "::ffff:1.2.3.04"]) {
      expect(classifyAddress(text), text).toMatchObject({ public: false, range: "not an IP address" });
    }
  });
});

// The blocked space, stated here independently of the implementation.
const BLOCKED_V4 = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.31.196.0/24",
  "192.52.193.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "192.175.48.0/24",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
];
const BLOCKED_V6 = [
  "::1/128",
  "100::/64",
  "2001:db8::/32",
  "3fff::/20",
  "fc00::/7",
  "fe80::/10",
  "fec0::/10",
  "ff00::/8",
];

const cidrV4 = (cidr: string) => {
  const [base, bits] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  return fc.integer({ min: 0, max: size - 1 }).map((offset) => parseIpv4(base!)! + offset);
};
const cidrV6 = (cidr: string) => {
  const [base, bits] = cidr.split("/");
  const size = 1n << BigInt(128 - Number(bits));
  return fc.bigInt({ min: 0n, max: size - 1n }).map((offset) => parseIpv6(base!)! + offset);
};
const blockedV4 = fc.oneof(...BLOCKED_V4.map(cidrV4));
const blockedV6 = fc.oneof(...BLOCKED_V6.map(cidrV6));
const anyV4 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const anyV6 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n });

const bytes = (v: number) => [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255];
const radix = (n: number, r: 8 | 10 | 16) =>
  r === 8 ? `0${n.toString(8)}` : r === 16 ? `0x${n.toString(16)}` : String(n);
const hex32 = (v: number) => `${(v >>> 16).toString(16)}:${(v & 0xffff).toString(16)}`;

/** The same IPv4 address in every spelling URL parsers and inet_aton accept. */
function ipv4Notations(v: number, radixes: Array<8 | 10 | 16>): string[] {
  const [a, b, c, d] = bytes(v) as [number, number, number, number];
  return [
    formatIpv4(v),
    `${formatIpv4(v)}.`,
    String(v),
    radix(v, 16),
    radix(v, 8),
    [a, b, c, d].map((n, i) => radix(n, radixes[i]!)).join("."),
    [a, b, c * 256 + d].map((n, i) => radix(n, radixes[i]!)).join("."),
    [a, b * 65536 + c * 256 + d].map((n, i) => radix(n, radixes[i]!)).join("."),
    [a, b, c, d].map((n) => radix(n, 16).toUpperCase().replace("0X", "0x")).join("."),
  ];
}

/** The IPv6 forms that carry this IPv4 address where packets would reach it. */
function embeddings(v: number, other: number, word: number): string[] {
  const dotted = formatIpv4(v);
  const w = word.toString(16);
  const inverted = (~v >>> 0) as number;
  return [
    `::ffff:${dotted}`,
    `::ffff:${hex32(v)}`,
    `0:0:0:0:0:FFFF:${dotted}`,
    `::${dotted}`,
    `::ffff:0:${dotted}`,
    `64:ff9b::${dotted}`,
    `64:ff9b::${hex32(v)}`,
    `64:ff9b:1:${w}::${dotted}`,
    `2002:${hex32(v)}:${w}::1`,
    `2001:0:${hex32(v)}::${hex32(~other >>> 0)}`,
    `2001:0:${hex32(other)}:8000:${w}:${hex32(inverted)}`,
  ];
}

function ipv6Notations(v: bigint, v4Tail: boolean): string[] {
  const groups = Array.from({ length: 8 }, (_, i) => Number((v >> BigInt(112 - 16 * i)) & 0xffffn));
  const full = groups.map((g) => g.toString(16).padStart(4, "0")).join(":");
  const canonical = formatIpv6(v);
  const spelled = [
    full,
    groups.map((g) => g.toString(16)).join(":"),
    canonical,
    canonical.toUpperCase(),
    `[${canonical}]`,
  ];
  if (v4Tail)
    spelled.push(
      `${groups
        .slice(0, 6)
        .map((g) => g.toString(16))
        .join(":")}:${formatIpv4(Number(v & 0xffffffffn))}`,
    );
  return spelled;
}

const asUrl = (host: string) => `https://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}/hook`;
const refusedAsUrl = (host: string) => {
  try {
    validateCallbackUrl(asUrl(host), { allowedHosts: [] });
    return false;
  } catch (error) {
    return error instanceof CallbackUrlError;
  }
};

const radixes = fc.array(fc.constantFrom<8 | 10 | 16>(8, 10, 16), { minLength: 4, maxLength: 4 });
const PUBLIC_V4 = parseIpv4("8.8.8.8")!;

describe("the address classifier, property-based", () => {
  it("refuses every address of a blocked IPv4 range in every notation, and as a callback URL", () => {
    fc.assert(
      fc.property(blockedV4, radixes, fc.integer({ min: 0, max: 0xffff }), (v, r, word) => {
        for (const text of [...ipv4Notations(v, r), ...embeddings(v, PUBLIC_V4, word)]) {
          expect(classifyAddress(text).public, text).toBe(false);
          expect(refusedAsUrl(text), text).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("refuses every address of a blocked IPv6 range in every notation, and as a callback URL", () => {
    fc.assert(
      fc.property(blockedV6, fc.boolean(), (v, tail) => {
        for (const text of ipv6Notations(v, tail)) {
          expect(classifyAddress(text).public, text).toBe(false);
          expect(refusedAsUrl(text), text).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("gives an IPv4 address one verdict whatever its notation, and parses it as URL hosts do", () => {
    fc.assert(
      fc.property(anyV4, radixes, (v, r) => {
        const expected = classifyAddress(formatIpv4(v));
        for (const text of ipv4Notations(v, r)) {
          expect(classifyAddress(text), text).toEqual(expected);
          expect(new URL(`http://${text}/`).hostname, text).toBe(formatIpv4(v));
        }
      }),
      { numRuns: 500 },
    );
  });

  it("gives an IPv6 address one verdict whatever its notation, and parses it as URL hosts do", () => {
    fc.assert(
      fc.property(anyV6, fc.boolean(), (v, tail) => {
        const expected = classifyAddress(formatIpv6(v));
        for (const text of ipv6Notations(v, tail)) {
          expect(classifyAddress(text), text).toEqual(expected);
          expect(new URL(asUrl(text)).hostname, text).toBe(`[${formatIpv6(v)}]`);
        }
      }),
      { numRuns: 500 },
    );
  });
});
