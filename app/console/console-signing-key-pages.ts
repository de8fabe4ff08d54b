import { html } from "hono/html";
import { JWKS_MAX_AGE_S, KEY_OVERLAP_S } from "../../lib/webhook/outbound/webhook-signing-keys.ts";
import { layout, tokenField, until, untilText, type PageContext } from "./console-layout.ts";

/** One ed25519 signing key, as `GET /v3/webhook-signing-keys` lists it. */
export interface SigningKey {
  id: string;
  account: string | null;
  signsFrom: string;
  publishedUntil: string | null;
  created: string;
}

/** Whose keys: an account's, or (admins) the global webhooks'. */
export type KeyScope = "account" | "global";

/** The graces the console offers a key rotation, in seconds, with their names; the API's default is chosen. */
export const KEY_ROTATION_GRACES = [
  [0, "none — they leave when the new key starts signing"],
  [3_600, "1 hour"],
  [86_400, "24 hours"],
  [604_800, "7 days"],
] as const;

/** Where receivers fetch the public key set: at the site's root, no token. */
export const keySetPath = (account: string | null) => `/webhook-keys/${account ?? "global"}/jwks.json`;

/** The keys page of a scope, under `base`, with `query` (already encoded) after it. */
export function keysPagePath(base: string, scope: KeyScope, query = ""): string {
  const params = [scope === "global" ? "scope=global" : "", query].filter(Boolean).join("&");
  return `${base}/signing-keys${params ? `?${params}` : ""}`;
}

const published = (key: SigningKey, now: Date) =>
  key.publishedUntil === null || Date.parse(key.publishedUntil) > now.getTime();

/**
 * The key that signs at `now`, as the lane picks it (`createSigningKeyStore`): of the published keys whose time has
 * come, the first in the lane's order, latest `signsFrom` first and then the greater id.
 */
export function signingKeyAt(keys: SigningKey[], now: Date): SigningKey | undefined {
  return keys
    .filter((key) => published(key, now) && Date.parse(key.signsFrom) <= now.getTime())
    .sort((a, b) => Date.parse(b.signsFrom) - Date.parse(a.signsFrom) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))[0];
}

/** Where a key is in its life at `now`. */
export type KeyState =
  | { state: "signing"; until?: string; retiringUntil?: string }
  | { state: "next"; signsFrom: string }
  | { state: "retiring"; until: string | null }
  | { state: "retired" };

/**
 * Each key's state at `now`: `retired` once it left the key set; `next` while it waits to sign; `signing` for the
 * one that signs (with when its successor takes over and until when it stays published, once replaced);
 * `retiring` for a replaced key still published, so what it signed still verifies. `newest` is every key that
 * may sign, newest first (on an older page, the first page's too), so the signer is found across pages.
 */
export function keyState(key: SigningKey, newest: SigningKey[], now: Date): KeyState {
  if (!published(key, now)) return { state: "retired" };
  if (Date.parse(key.signsFrom) > now.getTime()) return { state: "next", signsFrom: key.signsFrom };
  if (signingKeyAt(newest, now)?.id !== key.id) return { state: "retiring", until: key.publishedUntil };
  if (key.publishedUntil === null) return { state: "signing" };
  // Replaced: it signs until its successor starts, the earliest of the keys waiting to sign.
  const successor = newest
    .filter((k) => published(k, now) && Date.parse(k.signsFrom) > now.getTime())
    .map((k) => k.signsFrom)
    .sort()[0];
  return { state: "signing", ...(successor ? { until: successor } : {}), retiringUntil: key.publishedUntil };
}

function stateCell(state: KeyState, now: Date) {
  const upTo = (at: string | null | undefined, words: string) => (at ? html`${words} ${until(at, now)}` : "");
  switch (state.state) {
    case "signing": {
      const then = upTo(state.retiringUntil, state.until ? ", then retiring until" : ", retiring until");
      return html`<span class="status-active">signing</span>${upTo(state.until, " until")}${then}`;
    }
    case "next":
      return html`<span class="status-pending">next</span>: signs at ${until(state.signsFrom, now)}`;
    case "retiring":
      return html`<span class="status-pending">retiring</span>${upTo(state.until, " until")}`;
    case "retired":
      return html`<span>retired</span>`;
  }
}

/**
 * The notice after a rotation: when the new key signs, and until when the keys it replaced stay published (read
 * again after it, so a key already leaving sooner is told as it is). `keys`: the scope's keys after the rotation,
 * undefined when they could not be read.
 */
export function rotatedNotice(created: SigningKey, keys: SigningKey[] | undefined, now = new Date()): string {
  const signs =
    Date.parse(created.signsFrom) <= now.getTime()
      ? `New key ${created.id} signs now.`
      : `New key ${created.id} signs from ${untilText(created.signsFrom, now)}; receivers have it in the key set first.`;
  if (!keys) return signs;
  const others = keys.filter((key) => key.id !== created.id);
  if (others.length === 0) return `${signs} It is the first key: there was none to replace.`;
  const staying = others
    .filter((key) => published(key, now))
    .map((key) => key.publishedUntil)
    .filter((at): at is string => at !== null)
    .sort();
  const last = staying.at(-1);
  if (!last) return `${signs} The keys it replaces have left the key set: what they signed no longer verifies.`;
  return `${signs} The keys it replaces stay published until ${untilText(last, now)}, so what they signed verifies until then.`;
}

export function signingKeysPage(input: {
  scope: KeyScope;
  keys: SigningKey[];
  /** Every key of the first page, newest first: the signer is found there when this page is an older one. */
  newest: SigningKey[];
  nextCursor: string | null;
  cursor: string | undefined;
  /** `https://…` where this console is served, for the key set's address. */
  origin: string;
  notice: string | undefined;
  context: PageContext;
  now?: Date;
}) {
  const { scope, keys, context } = input;
  const { csrf, base } = context;
  const now = input.now ?? new Date();
  // The key set's account: the keys name it; the global set is always at `global`.
  const account = scope === "global" ? null : (input.newest[0]?.account ?? keys[0]?.account);
  const jwks = account === undefined ? undefined : `${input.origin}${keySetPath(account)}`;
  const scopeField = scope === "global" ? html`<input type="hidden" name="scope" value="global" />` : "";
  return layout(
    scope === "global" ? "Signing keys of the global webhooks" : "Signing keys",
    html`<p>
        The ed25519 keys that sign <code>v1a</code> for
        ${scope === "global" ? "the global webhooks" : "this account's webhooks"} with the
        <code>standard-webhooks</code> scheme and the ed25519 signature on. Receivers verify with the public key set
        alone, holding no secret.
      </p>
      <dl class="facts">
        ${
          account === undefined
            ? ""
            : html`<dt>Keys of</dt>
                <dd>${account === null ? "the global webhooks" : html`account <code>${account}</code>`}</dd>`
        }
        <dt>Public key set (JWKS)</dt>
        <dd>
          ${
            jwks
              ? html`<a href="${jwks}">${jwks}</a>`
              : html`none yet: the first webhook that signs <code>v1a</code> makes the first key`
          }
        </dd>
      </dl>
      ${
        keys.length === 0
          ? html`<p>No signing keys yet.</p>`
          : html`<table>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Status</th>
                  <th scope="col">Signs from</th>
                  <th scope="col">Published until</th>
                </tr>
              </thead>
              <tbody>
                ${keys.map(
                  (key) =>
                    html`<tr id="${key.id}">
                      <td data-label="Key"><code>${key.id}</code></td>
                      <td data-label="Status">${stateCell(keyState(key, input.newest, now), now)}</td>
                      <td data-label="Signs from">${until(key.signsFrom, now)}</td>
                      <td data-label="Published until">
                        ${key.publishedUntil === null ? "while newest" : until(key.publishedUntil, now)}
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
      <p>
        ${input.cursor ? html`<a href="${keysPagePath(base, scope)}">Newest</a> ` : ""}
        ${
          input.nextCursor
            ? html`<a href="${keysPagePath(base, scope, `cursor=${encodeURIComponent(input.nextCursor)}`)}"
                >Older keys →</a
              >`
            : ""
        }
      </p>
      <h2>Rotate</h2>
      <p>
        The new key is in the key set at once and starts signing ${JWKS_MAX_AGE_S / 60} minutes later (how long
        receivers may cache the set), so they have it before a delivery needs it. The keys it replaces stay published
        for the grace chosen after that, so what they signed still verifies; then they leave the set.
      </p>
      <form class="filters" method="post" action="${base}/signing-keys/rotate">
        ${tokenField(csrf)}${scopeField}
        <label
          >Keep the replaced keys published for
          <select name="grace">
            ${KEY_ROTATION_GRACES.map(([seconds, name]) =>
              seconds === KEY_OVERLAP_S
                ? html`<option value="${seconds}" selected>${name} (default)</option>`
                : html`<option value="${seconds}">${name}</option>`,
            )}
          </select></label
        >
        <button>Rotate key</button>
      </form>
      <section class="warning" aria-labelledby="leaked-title">
        <h2 id="leaked-title">A key leaked?</h2>
        <p>
          Replace it now: the new key signs at once and every other key leaves the key set now, so what they signed no
          longer verifies. Receivers holding a cached set refuse deliveries until they fetch it again (within
          ${JWKS_MAX_AGE_S / 60} minutes); those deliveries are retried.
        </p>
        <form class="inline" method="post" action="${base}/signing-keys/rotate">
          ${tokenField(csrf)}${scopeField}<input type="hidden" name="immediate" value="true" />
          <button class="danger">Key leaked: replace it now</button>
        </form>
      </section>`,
    { signedIn: true, ...context, notice: input.notice },
  );
}
