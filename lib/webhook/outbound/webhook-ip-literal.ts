/** An IP address as a number: IPv4 as an unsigned 32-bit integer, IPv6 as a 128-bit bigint. */
export type IpLiteral = { family: 4; value: number } | { family: 6; value: bigint };

const IPV4_PART = /^(?:0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*)$/;

/**
 * Parses an IPv4 literal the way URL parsers and `inet_aton` do: one to four
 * parts, each decimal, octal (`0177`) or hex (`0x7f`), the last part filling
 * the remaining bytes (`127.1`, `2130706433`), one trailing dot allowed.
 * Returns the address as an unsigned integer, or null when `text` is not one.
 */
export function parseIpv4(text: string): number | null {
  const parts = text.split(".");
  if (parts.length > 1 && parts.at(-1) === "") parts.pop();
  if (parts.length === 0 || parts.length > 4) return null;
  const numbers: number[] = [];
  for (const part of parts) {
    if (!IPV4_PART.test(part)) return null;
    const lower = part.toLowerCase();
    if (lower.startsWith("0x")) numbers.push(lower.length === 2 ? 0 : Number.parseInt(lower.slice(2), 16));
    else if (part.length > 1 && part.startsWith("0")) numbers.push(Number.parseInt(part.slice(1), 8));
    else numbers.push(Number(part));
  }
  const last = numbers.pop()!;
  if (numbers.some((n) => n > 255) || last >= 256 ** (4 - numbers.length)) return null;
  return numbers.reduce((sum, n, i) => sum + n * 256 ** (3 - i), last);
}

// Inside an IPv6 literal the IPv4 tail is strict: four decimal parts, no leading zeros.
const STRICT_DOTTED_QUAD = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/**
 * Parses an IPv6 literal: optional brackets, `::` compression, a dotted IPv4
 * tail (`::ffff:10.0.0.1`), and a zone (`fe80::1%eth0`, dropped: the address
 * alone decides). Returns the address as a bigint, or null when `text` is not one.
 */
export function parseIpv6(text: string): bigint | null {
  let s = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = s.indexOf("%");
  if (zone !== -1) s = s.slice(0, zone);
  if (!s.includes(":")) return null;
  if (s.includes(".")) {
    const colon = s.lastIndexOf(":");
    const tail = s.slice(colon + 1);
    if (!STRICT_DOTTED_QUAD.test(tail)) return null;
    const v4 = parseIpv4(tail)!;
    s = `${s.slice(0, colon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] === "" ? [] : halves[0]!.split(":");
  const tail = halves.length === 1 || halves[1] === "" ? [] : halves[1]!.split(":");
  const groups = halves.length === 2 ? head.length + tail.length : head.length;
  if (halves.length === 2 ? groups > 7 : groups !== 8) return null;
  if (![...head, ...tail].every((group) => HEX_GROUP.test(group))) return null;
  const all = [...head, ...Array<string>(8 - groups).fill("0"), ...tail];
  return all.reduce((value, group) => (value << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

/** Parses an IPv4 or IPv6 literal in any notation `parseIpv4`/`parseIpv6` accept; null for a host name. */
export function parseIpLiteral(text: string): IpLiteral | null {
  const v6 = parseIpv6(text);
  if (v6 !== null) return { family: 6, value: v6 };
  const v4 = parseIpv4(text);
  return v4 === null ? null : { family: 4, value: v4 };
}

/** `a.b.c.d` for an unsigned 32-bit integer. */
export function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join(".");
}

/** The canonical text of an IPv6 address (lower case, longest zero run compressed, as URL hosts show it). */
export function formatIpv6(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let end = i;
    while (end < 8 && groups[end] === 0) end++;
    if (end - i > bestLength) [bestStart, bestLength] = [i, end - i];
    i = end;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart === -1) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/** The canonical text of an address. */
export function formatIp(ip: IpLiteral): string {
  return ip.family === 4 ? formatIpv4(ip.value) : formatIpv6(ip.value);
}
