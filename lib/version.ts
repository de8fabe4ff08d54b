import packageJson from "../package.json" with { type: "json" };

export const VERSION: string = packageJson.version;
/** Sent on every delivery; names the product and its version. */
export const USER_AGENT = `Hooklane-Webhooks/${VERSION}`;
