import { Hono, type Context } from "hono";
import type { HooklaneEnv } from "../../../lib/api/hono-env.ts";
import { JWKS_MAX_AGE_S, keySetEtag, publishedKeys } from "../../../lib/webhook/outbound/webhook-signing-keys.ts";

/** How long a process answers a key set from memory: well inside a rotation's lead, so nobody misses a key. */
const READ_EVERY_MS = 10_000;
/** Names kept at most (anyone may ask for any name): beyond it, the memory starts again. */
const KEPT_NAMES = 10_000;

/** An account id as the API makes them, or `global` for global webhooks' keys. */
const KEY_SET_NAME = /^(acc_[A-Za-z0-9_-]{1,64}|global)$/;

/**
 * `GET /webhook-keys/:account/jwks.json`: the public keys an account's webhooks sign `v1a` with (`global`: global
 * webhooks'), for receivers, without a token: public keys are not secrets. Every process answers the same bytes
 * (rows in key order; each process reads them at most every 10 s), with `Cache-Control` and an ETag; a name that is not an account's answers an empty set, so the
 * document says nothing about which accounts exist.
 */
export function keySetRoutes(): Hono<HooklaneEnv> {
  // Anyone may ask, without a token: each name is read from the database at most once per READ_EVERY_MS here.
  const recent = new Map<string, { at: number; body: Promise<string> }>();
  const bodyOf = (c: Context<HooklaneEnv>, name: string): Promise<string> => {
    const kept = recent.get(name);
    if (kept && Date.now() - kept.at < READ_EVERY_MS) return kept.body;
    if (recent.size >= KEPT_NAMES) recent.clear();
    const body = publishedKeys(c.get("hooklane").database, name === "global" ? null : name).then((keys) =>
      JSON.stringify(keys),
    );
    recent.set(name, { at: Date.now(), body });
    body.catch(() => recent.delete(name));
    return body;
  };
  return new Hono<HooklaneEnv>().get("/webhook-keys/:account/jwks.json", async (c) => {
    const name = c.req.param("account");
    const body = KEY_SET_NAME.test(name) ? await bodyOf(c, name) : JSON.stringify({ keys: [] });
    const etag = keySetEtag(body);
    c.header("cache-control", `public, max-age=${JWKS_MAX_AGE_S}`);
    c.header("etag", etag);
    if (c.req.header("if-none-match") === etag) return c.body(null, 304);
    return c.body(body, 200, { "content-type": "application/jwk-set+json" });
  });
}
