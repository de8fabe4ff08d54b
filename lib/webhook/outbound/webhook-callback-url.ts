/** Why a callback URL was refused; the message is safe to show to the subscriber. */
export class CallbackUrlError extends Error {
  override name = "CallbackUrlError";
}

export interface CallbackUrlPolicy {
  /** Hosts allowed despite plain http: and internal addresses (`WEBHOOK_ALLOWED_HOSTS`). */
  allowedHosts: readonly string[];
}

// Names that are never a subscriber, whatever they resolve to.
const DENIED_HOSTS = [/(^|\.)localhost$/, /(^|\.)internal$/, /(^|\.)local$/, /^metadata\.google\.internal$/];

/**
 * Checks a callback URL's shape: https (http only for allowlisted hosts), no
 * credentials, no denied host names. Returns the parsed URL; throws
 * CallbackUrlError naming the rule that failed.
 */
export function validateCallbackUrl(raw: string, policy: CallbackUrlPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (error) {
    throw new CallbackUrlError("url is not a valid absolute URL", { cause: error });
  }
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  const allowlisted = policy.allowedHosts.includes(host);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && allowlisted)) {
    throw new CallbackUrlError(
      allowlisted ? "url must use http: or https:" : "url must use https: (http: is only for allowlisted hosts)",
    );
  }
  if (url.username || url.password) throw new CallbackUrlError("url must not contain credentials");
  if (url.hash) throw new CallbackUrlError("url must not contain a fragment");
  if (!allowlisted && DENIED_HOSTS.some((pattern) => pattern.test(host))) {
    throw new CallbackUrlError(`host ${host} is not allowed`);
  }
  return url;
}
