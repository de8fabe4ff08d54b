import { formatIpv4, formatIpv6, parseIpLiteral, parseIpv4, parseIpv6, type IpLiteral } from "./webhook-ip-literal.ts";

/** Whether an address may be a subscriber; when not, which special-purpose range it is in. */
export type AddressVerdict = { public: true; address: string } | { public: false; address: string; range: string };

/** Judges one address; injectable so tests can make a loopback address count as public. */
export type AddressClassifier = (address: string) => AddressVerdict;

interface Range<T> {
  base: T;
  bits: number;
  label: string;
}

const v4 = (cidr: string, name: string): Range<number> => {
  const [base, bits] = cidr.split("/");
  return { base: parseIpv4(base!)!, bits: Number(bits), label: `${name} ${cidr}` };
};
const v6 = (cidr: string, name: string): Range<bigint> => {
  const [base, bits] = cidr.split("/");
  return { base: parseIpv6(base!)!, bits: Number(bits), label: `${name} ${cidr}` };
};

// The IANA IPv4 Special-Purpose Address Registry, every entry whatever its
// "globally reachable" flag (none of them is a webhook receiver), plus
// multicast and the reserved class E, which hold no subscriber either.
const IPV4_BLOCKED: readonly Range<number>[] = [
  v4("0.0.0.0/8", "this network"),
  v4("10.0.0.0/8", "private-use"),
  v4("100.64.0.0/10", "shared address space (CGNAT)"),
  v4("127.0.0.0/8", "loopback"),
  v4("169.254.0.0/16", "link-local (cloud metadata)"),
  v4("172.16.0.0/12", "private-use"),
  v4("192.0.0.0/24", "IETF protocol assignments"),
  v4("192.0.2.0/24", "documentation (TEST-NET-1)"),
  v4("192.31.196.0/24", "AS112-v4"),
  v4("192.52.193.0/24", "AMT"),
  v4("192.88.99.0/24", "deprecated 6to4 relay anycast"),
  v4("192.168.0.0/16", "private-use"),
  v4("192.175.48.0/24", "direct delegation AS112"),
  v4("198.18.0.0/15", "benchmarking"),
  v4("198.51.100.0/24", "documentation (TEST-NET-2)"),
  v4("203.0.113.0/24", "documentation (TEST-NET-3)"),
  v4("224.0.0.0/4", "multicast"),
  v4("255.255.255.255/32", "limited broadcast"),
  v4("240.0.0.0/4", "reserved"),
];

// The IANA IPv6 Special-Purpose Address Registry, plus multicast and the
// deprecated site-local block, in order: the first range that holds an
// address decides. The forms that carry an IPv4 address are judged by the
// IPv4 inside, since that is where the packets end up (through a translator,
// a tunnel or the dual-stack socket itself); the NAT64 prefixes are read in
// the /96 layout RFC 6052 recommends and DNS64 deployments use. Outside
// global unicast 2000::/3 nothing is assigned to a subscriber at all.
type Ipv6Rule = { range: Range<bigint>; ipv4?: (value: bigint) => number[] };
const last32 = (value: bigint) => [Number(value & 0xffffffffn)];
const IPV6_RULES: readonly Ipv6Rule[] = [
  { range: v6("::/128", "unspecified") },
  { range: v6("::1/128", "loopback") },
  { range: v6("::ffff:0:0/96", "IPv4-mapped"), ipv4: last32 },
  { range: v6("::ffff:0:0:0/96", "IPv4-translated (SIIT)"), ipv4: last32 },
  { range: v6("::/96", "IPv4-compatible"), ipv4: last32 },
  { range: v6("64:ff9b::/96", "NAT64"), ipv4: last32 },
  { range: v6("64:ff9b:1::/48", "local-use NAT64"), ipv4: last32 },
  { range: v6("100::/64", "discard-only") },
  { range: v6("100:0:0:1::/64", "dummy prefix") },
  {
    // The server's address, and the client's public address stored inverted.
    range: v6("2001::/32", "Teredo"),
    ipv4: (value) => [Number((value >> 64n) & 0xffffffffn), Number(~value & 0xffffffffn)],
  },
  { range: v6("2001::/23", "IETF protocol assignments") },
  { range: v6("2001:db8::/32", "documentation") },
  { range: v6("2002::/16", "6to4"), ipv4: (value) => [Number((value >> 80n) & 0xffffffffn)] },
  { range: v6("2620:4f:8000::/48", "direct delegation AS112") },
  { range: v6("3fff::/20", "documentation") },
  { range: v6("5f00::/16", "segment routing (SRv6) SIDs") },
  { range: v6("fc00::/7", "unique-local") },
  { range: v6("fe80::/10", "link-local") },
  { range: v6("fec0::/10", "site-local (deprecated)") },
  { range: v6("ff00::/8", "multicast") },
];
const GLOBAL_UNICAST = v6("2000::/3", "global unicast");

const inV4 = (value: number, range: Range<number>) =>
  range.bits === 0 || value >>> (32 - range.bits) === range.base >>> (32 - range.bits);
const inV6 = (value: bigint, range: Range<bigint>) =>
  value >> BigInt(128 - range.bits) === range.base >> BigInt(128 - range.bits);

function blockedIpv4(value: number): string | undefined {
  return IPV4_BLOCKED.find((range) => inV4(value, range))?.label;
}

function blockedIpv6(value: bigint): string | undefined {
  const rule = IPV6_RULES.find((candidate) => inV6(value, candidate.range));
  if (!rule) return inV6(value, GLOBAL_UNICAST) ? undefined : `reserved (outside ${GLOBAL_UNICAST.label})`;
  if (!rule.ipv4) return rule.range.label;
  for (const ipv4 of rule.ipv4(value)) {
    const label = blockedIpv4(ipv4);
    if (label) return `${rule.range.label} embedding ${formatIpv4(ipv4)} (${label})`;
  }
  return undefined;
}

/** Judges a parsed address against the special-purpose registries. */
export function classifyIp(ip: IpLiteral): AddressVerdict {
  const address = ip.family === 4 ? formatIpv4(ip.value) : formatIpv6(ip.value);
  const range = ip.family === 4 ? blockedIpv4(ip.value) : blockedIpv6(ip.value);
  return range === undefined ? { public: true, address } : { public: false, address, range };
}

/**
 * Judges an address given as text, in any notation (`10.0.0.1`, `167772161`,
 * `0xa.0.0.1`, `012.1`, `::ffff:a00:1`, `[::1]`). Text that is not an IP
 * address is never public: callers resolve names first.
 */
export const classifyAddress: AddressClassifier = (text) => {
  const ip = parseIpLiteral(text);
  return ip ? classifyIp(ip) : { public: false, address: text, range: "not an IP address" };
};
