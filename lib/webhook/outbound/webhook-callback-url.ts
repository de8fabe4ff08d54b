import { classifyIp } from "./webhook-address-classifier.ts";
import { formatIp, parseIpLiteral } from "./webhook-ip-literal.ts";

/** Why a callback URL was refused; the message is safe to show to the subscriber. */
export class CallbackUrlError extends Error {
  override name = "CallbackUrlError";
}

export interface CallbackUrlPolicy {
  /**
   * Hosts exempt from the address checks and the name denylist, and allowed
   * plain http: (`WEBHOOK_ALLOWED_HOSTS`). Every other rule still applies.
   */
  allowedHosts: readonly string[];
}

// Names that are never a subscriber, whatever they resolve to: loopback,
// multicast-DNS and private-network suffixes, cloud metadata endpoints.
const DENIED_HOSTS = [
  /(^|\.)localhost$/,
  /(^|\.)local$/,
  /(^|\.)localdomain$/,
  /(^|\.)internal$/,
  /(^|\.)intranet$/,
  /(^|\.)lan$/,
  /(^|\.)home\.arpa$/,
  /(^|\.)in-addr\.arpa$/,
  /(^|\.)ip6\.arpa$/,
  /^metadata$/,
  /^instance-data$/,
];

// Special-use names (RFC 6761, RFC 7686, RFC 9476) that never reach a real
// subscriber: whatever a resolver answers for them is somebody's local setup.
const SPECIAL_USE_TLDS = ["invalid", "test", "example", "localhost", "onion", "alt"];

// Services found inside networks that never receive webhooks: databases,
// caches, brokers, cluster control planes, remote desktops, proxies, and the
// ports browsers refuse to fetch from. Below 1024 only 80 and 443 are allowed.
const DENIED_PORTS = new Set([
  1080, 1433, 1521, 1719, 1720, 1723, 2049, 2375, 2376, 2379, 2380, 3128, 3306, 3389, 3659, 4045, 4190, 4369, 5060,
  5061, 5432, 5672, 5900, 5984, 6000, 6379, 6443, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 8500, 9042, 9092,
  9200, 9300, 10080, 10250, 10255, 11211, 15672, 27017,
]);

/**
 * A URL host in one spelling: lower case, no brackets, no trailing dot, IP
 * literals in canonical form (`0x7f.1` and `127.0.0.1` are the same host).
 */
export function canonicalHost(host: string): string {
  const bare = host
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
  const ip = parseIpLiteral(bare);
  return ip ? formatIp(ip) : bare;
}

/** True when `host` is on the allowlist (both sides compared in canonical form). */
export function isAllowlistedHost(host: string, allowedHosts: readonly string[]): boolean {
  const canonical = canonicalHost(host);
  return allowedHosts.some((allowed) => canonicalHost(allowed) === canonical);
}

/**
 * Checks a callback URL before it is stored and again before every POST:
 * https (http only for allowlisted hosts), no credentials or fragment, an
 * allowed port, and — unless the host is allowlisted — no denied,
 * special-use (`.test`, `.invalid`, `.onion`, …) or single-label name and
 * no IP literal outside public unicast space. Names
 * are judged by their addresses when the sender connects. Returns the parsed
 * URL; throws CallbackUrlError naming the rule that failed.
 */
export function validateCallbackUrl(raw: string, policy: CallbackUrlPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (error) {
    throw new CallbackUrlError("url is not a valid absolute URL", { cause: error });
  }
  const host = canonicalHost(url.hostname);
  const allowlisted = isAllowlistedHost(host, policy.allowedHosts);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && allowlisted)) {
    throw new CallbackUrlError(
      allowlisted ? "url must use http: or https:" : "url must use https: (http: is only for allowlisted hosts)",
    );
  }
  if (url.username || url.password) throw new CallbackUrlError("url must not contain credentials");
  if (url.hash) throw new CallbackUrlError("url must not contain a fragment");
  // URL drops the scheme's default port, so an explicit one is never 443 on https: or 80 on http:.
  const port = url.port === "" ? null : Number(url.port);
  if (port !== null && ((port < 1024 && port !== 80 && port !== 443) || DENIED_PORTS.has(port))) {
    throw new CallbackUrlError(`port ${port} is not allowed`);
  }
  if (allowlisted) return url;
  const ip = parseIpLiteral(host);
  if (ip) {
    const verdict = classifyIp(ip);
    if (!verdict.public)
      throw new CallbackUrlError(`host ${verdict.address} is not a public address (${verdict.range})`);
    return url;
  }
  const tld = host.slice(host.lastIndexOf(".") + 1);
  if (SPECIAL_USE_TLDS.includes(tld)) {
    throw new CallbackUrlError(`host ${host} is not allowed: .${tld} is a special-use domain name`);
  }
  if (DENIED_HOSTS.some((pattern) => pattern.test(host))) throw new CallbackUrlError(`host ${host} is not allowed`);
  // A single label is completed by the resolver's search domains: an internal name.
  if (!host.includes(".")) throw new CallbackUrlError(`host ${host} is not a fully qualified domain name`);
  return url;
}

/** Verdicts remembered per allowlist (the configuration's array) and URL. */
const verdicts = new WeakMap<readonly string[], Map<string, string | null>>();
const VERDICT_LIMIT = 10_000;

/**
 * validateCallbackUrl's verdict on `raw`: the refusal's message, or null when
 * the URL passes. The deliver stage asks before every POST; the rules are
 * fixed for the life of a process (code and configuration), so each URL's
 * verdict is worked out once, in a bounded cache.
 */
export function callbackUrlRefusal(raw: string, policy: CallbackUrlPolicy): string | null {
  let cache = verdicts.get(policy.allowedHosts);
  if (!cache) verdicts.set(policy.allowedHosts, (cache = new Map()));
  const known = cache.get(raw);
  if (known !== undefined) return known;
  let refusal: string | null = null;
  try {
    validateCallbackUrl(raw, policy);
  } catch (error) {
    if (!(error instanceof CallbackUrlError)) throw error;
    refusal = error.message;
  }
  if (cache.size >= VERDICT_LIMIT) cache.delete(cache.keys().next().value!);
  cache.set(raw, refusal);
  return refusal;
}
