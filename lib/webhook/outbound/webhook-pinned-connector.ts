import { lookup as dnsLookup } from "node:dns/promises";
import { isIP, type LookupFunction } from "node:net";
import { buildConnector } from "undici";
import type { AddressClassifier } from "./webhook-address-classifier.ts";
import { isAllowlistedHost } from "./webhook-callback-url.ts";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Every A and AAAA answer for a host name; injectable so tests control what a name resolves to. */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (getaddrinfo, so /etc/hosts counts), every address it answers. */
export const systemResolve: ResolveHost = async (hostname) =>
  (await dnsLookup(hostname, { all: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/** A connection refused because its host is, or resolves to, a non-public address. */
export class BlockedAddressError extends Error {
  override name = "BlockedAddressError";
  readonly code = "ERR_HOOKLANE_BLOCKED_ADDRESS";
}

export interface AddressPolicy {
  resolve: ResolveHost;
  classify: AddressClassifier;
  /** Hosts whose addresses are not checked (`WEBHOOK_ALLOWED_HOSTS`). */
  allowedHosts: readonly string[];
}

/**
 * Resolves `hostname` once and returns the answers to connect to, after
 * requiring every one of them to be public (one private answer refuses the
 * whole name). Allowlisted hosts skip the address check. Throws
 * BlockedAddressError, or an error with code ENOTFOUND for no answer.
 */
export async function checkedAddresses(hostname: string, policy: AddressPolicy): Promise<ResolvedAddress[]> {
  const answers = await policy.resolve(hostname);
  if (answers.length === 0) {
    throw Object.assign(new Error(`${hostname} has no A or AAAA record`), { code: "ENOTFOUND" });
  }
  const allowlisted = isAllowlistedHost(hostname, policy.allowedHosts);
  return answers.map(({ address }) => {
    const family = isIP(address);
    if (family === 0) throw new BlockedAddressError(`${hostname} resolves to ${address}, which is not an IP address`);
    if (!allowlisted) {
      const verdict = policy.classify(address);
      if (!verdict.public) {
        throw new BlockedAddressError(
          `${hostname} resolves to ${verdict.address}, not a public address (${verdict.range})`,
        );
      }
    }
    return { address, family: family as 4 | 6 };
  });
}

export interface PinnedConnectorOptions extends AddressPolicy {
  /** Connect (and TLS handshake) deadline. */
  timeoutMs: number;
  /** Certificate authorities to trust instead of the system's (tests bring their own). */
  ca?: string | Buffer | Array<string | Buffer>;
}

/**
 * An undici connector that only connects to checked addresses. A host name is
 * resolved once per connection, inside the socket's own `lookup`, and the
 * socket goes to exactly the answers that passed (so a name that rebinds
 * between check and connect cannot swap them); TLS still sends the host name
 * as SNI and verifies the certificate against it. IP literals, which sockets
 * never look up, are judged directly. Failures reach undici as
 * BlockedAddressError (or the resolver's error).
 */
export function createPinnedConnector(options: PinnedConnectorOptions): buildConnector.connector {
  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    checkedAddresses(hostname, options).then(
      (addresses) => {
        const family = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0;
        const usable = family === 0 ? addresses : addresses.filter((answer) => answer.family === family);
        if (usable.length === 0) {
          callback(Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: "ENOTFOUND" }), "", 0);
        } else if (lookupOptions.all) {
          callback(null, usable);
        } else {
          callback(null, usable[0]!.address, usable[0]!.family);
        }
      },
      (error: NodeJS.ErrnoException) => callback(error, "", 0),
    );
  };
  const connect = buildConnector({
    timeout: options.timeoutMs,
    lookup,
    ...(options.ca ? { ca: options.ca } : {}),
  });
  return (connectOptions, callback) => {
    if (isIP(connectOptions.hostname) && !isAllowlistedHost(connectOptions.hostname, options.allowedHosts)) {
      const verdict = options.classify(connectOptions.hostname);
      if (!verdict.public) {
        callback(new BlockedAddressError(`${verdict.address} is not a public address (${verdict.range})`), null);
        return;
      }
    }
    connect(connectOptions, callback);
  };
}
