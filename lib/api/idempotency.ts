import { createHash } from "node:crypto";
import type { Principal } from "../auth/jwt.ts";
import type { Database } from "../db/client.ts";
import { findIdempotencyKey, lockIdempotencyKey, storeIdempotencyKey } from "../db/sql/idempotency-keys.ts";
import type { SecretSealer } from "../webhook/outbound/webhook-secret-seal.ts";
import type { ApiContext } from "./handler.ts";
import { ApiError } from "./problem.ts";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
/** Set on an answer that was replayed from an earlier request with the same key. */
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";

// Visible ASCII, no spaces: a UUID, a ULID, or any token the client keeps.
const KEY = /^[\x21-\x7e]{1,255}$/;

/** A mutating request sent with an `Idempotency-Key`: whose key it is, who sent it, and what was asked. */
export interface IdempotentRequest {
  account: string;
  key: string;
  /** SHA-256 of the method, the path with its query, and the body (JSON compared by value). */
  fingerprint: string;
  /** SHA-256 of the caller (`principalFingerprint`). */
  principal: string;
}

/**
 * The request's idempotency key, scoped to the caller's account and bound to
 * the caller, or undefined when it sent none. Reads the body (Hono keeps it
 * for the route). Throws a 422 naming the header when the key is not 1-255
 * visible ASCII characters.
 */
export async function idempotentRequest(c: ApiContext): Promise<IdempotentRequest | undefined> {
  const key = c.req.header(IDEMPOTENCY_KEY_HEADER);
  if (key === undefined) return undefined;
  if (!KEY.test(key)) throw keyRefused("must be 1-255 visible ASCII characters without spaces, e.g. a UUID");
  const url = new URL(c.req.url);
  const hash = createHash("sha256").update(`${c.req.method} ${url.pathname}${url.search}\n`);
  hash.update(canonicalBody(await c.req.text()));
  const principal = c.get("principal");
  return {
    account: principal.account,
    key,
    fingerprint: hash.digest("hex"),
    principal: principalFingerprint(principal),
  };
}

/**
 * SHA-256 of every claim a route's authorization reads: the subject, the
 * account and the role. A stored answer is replayed before the route runs,
 * so without its role and tenancy checks: it may go only to the caller it
 * first went to.
 */
function principalFingerprint(principal: Principal): string {
  // Each claim by name: one added to Principal fails to compile here until it is bound too.
  const claims: Required<Principal> = {
    sub: principal.sub,
    account: principal.account,
    admin: principal.admin,
    support: principal.support,
  };
  return createHash("sha256").update(JSON.stringify(claims)).digest("hex");
}

/**
 * Inside the request's transaction, before the route runs: takes the key's
 * lock and looks for its answer. Returns the stored answer (status, type and
 * body as first sent) when this caller already sent this request; undefined
 * when it is the first. Throws a 409 when a request with the key is still
 * running, and a 422 when the key answered another caller (whatever it
 * asked: the refusal tells nothing of the first request) or a different
 * request.
 */
export async function earlierAnswer(
  c: ApiContext,
  tx: Database,
  request: IdempotentRequest,
  secrets: SecretSealer,
): Promise<Response | undefined> {
  if (!(await lockIdempotencyKey(tx, request.account, request.key))) {
    throw new ApiError(
      409,
      "Conflict",
      `A request with this ${IDEMPOTENCY_KEY_HEADER} is still in progress; retry once it has finished.`,
    );
  }
  const stored = await findIdempotencyKey(tx, request.account, request.key);
  if (!stored) return undefined;
  // A row stored before callers were bound has no principal: it matches nobody.
  if (stored.principal !== request.principal) {
    throw keyRefused("was already used by another caller (another subject or role) in the last 24 h; use a new key");
  }
  if (stored.fingerprint !== request.fingerprint) {
    throw keyRefused("was already used for a different request in the last 24 h; use a new key for a new request");
  }
  const body = stored.sealed ? await secrets.unseal(stored.body) : stored.body;
  c.header(IDEMPOTENT_REPLAYED_HEADER, "true");
  if (stored.contentType) c.header("content-type", stored.contentType);
  return body === "" ? c.body(null, stored.status as 204) : c.body(body, stored.status as 200);
}

/**
 * Stores `answer` as the key's answer, in the transaction that commits the
 * mutation: after a commit the answer is there even if the process dies
 * before sending it. `seal` encrypts an answer that shows a secret.
 */
export async function rememberAnswer(
  tx: Database,
  request: IdempotentRequest,
  answer: Response,
  seal: SecretSealer | undefined,
): Promise<void> {
  const body = await answer.clone().text();
  await storeIdempotencyKey(tx, {
    ...request,
    status: answer.status,
    contentType: answer.headers.get("content-type"),
    body: seal ? await seal.seal(body) : body,
    sealed: seal !== undefined,
  });
}

/** 422 naming the header: the key cannot be used for this request. */
function keyRefused(message: string): ApiError {
  return new ApiError(422, "Unprocessable Content", `${IDEMPOTENCY_KEY_HEADER}: ${message}`, {
    errors: [{ field: IDEMPOTENCY_KEY_HEADER, message }],
  });
}

/** JSON compared by value (key order and spacing do not matter); anything else byte for byte. */
function canonicalBody(text: string): string {
  if (text.trim() === "") return "";
  try {
    return JSON.stringify(JSON.parse(text), (_key, value: unknown) =>
      value !== null && typeof value === "object" && !Array.isArray(value)
        ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : value,
    );
  } catch {
    return text;
  }
}
