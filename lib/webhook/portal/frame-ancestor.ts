import { codePoint } from "../../code-point.ts";

/** Hosts a portal may be framed from over plain http: a developer's own machine. */
const LOOPBACK = new Set(["localhost", "127.0.0.1"]);
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const EXAMPLE = "https://host[:port]";

/**
 * Reads one `frameAncestors` entry of a portal session as the CSP host-source
 * it becomes in the portal's `frame-ancestors`: `https://` (or `http://` for
 * localhost and 127.0.0.1 only), a host of letters, digits and hyphens in
 * dot-separated labels (or an IPv4 address), an optional port, and nothing
 * else (one trailing `/` is dropped). The only wildcard is a leading `*.`
 * before a domain of two labels or more (`https://*.example.com`: its
 * subdomains, not the domain itself). Anything that could end the source or
 * the directive (`;`, `,`, whitespace), quote a keyword, or reach beyond the
 * origin is refused, with why. The source is lower-case, without its
 * scheme's default port, so equal origins are written once.
 */
export function parseFrameAncestor(text: string): { source: string } | { problem: string } {
  const stray = /[^\x21-\x7e]|[;,'"]/u.exec(text);
  if (stray) {
    const char = stray[0];
    if (/[;,'"]/.test(char)) return { problem: `must be ${EXAMPLE}: ${JSON.stringify(char)} is not allowed` };
    if (char.codePointAt(0)! > 0x7e && !/[\s\p{Cc}\p{Cf}]/u.test(char)) {
      return { problem: `must be ${EXAMPLE} in ASCII: write an internationalised name in punycode (xn--…)` };
    }
    return { problem: `must be ${EXAMPLE}: whitespace and control characters (${codePoint(char)}) are not allowed` };
  }
  const match = /^([a-z]+):\/\/([^/?#@]*)\/?$/i.exec(text);
  if (!match) return { problem: `must be an origin, ${EXAMPLE}, with nothing after it` };
  const scheme = match[1]!.toLowerCase();
  const [, host = "", port, extra] = /^([^:]*)(?::([^:]*))?(:.*)?$/s.exec(match[2]!.toLowerCase())!;
  if (scheme !== "https" && !(scheme === "http" && LOOPBACK.has(host))) {
    return { problem: `must be ${EXAMPLE} (http:// only for localhost and 127.0.0.1)` };
  }
  const wildcard = host.startsWith("*.");
  const labels = (wildcard ? host.slice(2) : host).split(".");
  if (host.includes("*") && (!wildcard || labels.includes("*") || labels.length < 2)) {
    return {
      problem:
        "may use a wildcard only as a leading *. before a domain of two labels or more, e.g. https://*.example.com",
    };
  }
  if (!labels.every((label) => LABEL.test(label))) {
    return { problem: "must name a host: letters, digits and hyphens in dot-separated labels, or an IPv4 address" };
  }
  const portNumber = port === undefined ? undefined : /^\d{1,5}$/.test(port) ? Number(port) : NaN;
  if (extra !== undefined || (portNumber !== undefined && !(portNumber >= 1 && portNumber <= 65_535))) {
    return { problem: "must have a port from 1 to 65535, or none" };
  }
  const defaultPort = scheme === "https" ? 443 : 80;
  const portPart = portNumber === undefined || portNumber === defaultPort ? "" : `:${portNumber}`;
  return { source: `${scheme}://${host}${portPart}` };
}

/** Whether `source` is exactly what `parseFrameAncestor` writes: the only text a `frame-ancestors` header may carry. */
export function isFrameAncestorSource(source: string): boolean {
  const parsed = parseFrameAncestor(source);
  return "source" in parsed && parsed.source === source;
}
