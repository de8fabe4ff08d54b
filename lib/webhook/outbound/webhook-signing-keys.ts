import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import type { SecretSealer } from "./webhook-secret-seal.ts";

/**
 * Ed25519 signing keys, one set per account (and one for global webhooks),
 * for Standard Webhooks `v1a` signatures that receivers verify from the
 * published key set (JWKS) alone, holding no secret. A rotation publishes
 * the new key at once and lets it sign only JWKS_MAX_AGE_S later, so every
 * receiver's cached copy has it before a delivery needs it; the key it
 * replaces stays published for KEY_OVERLAP_S after that, then a signature
 * by it no longer verifies.
 */

/** How long receivers may cache a key set (`Cache-Control: max-age`). */
export const JWKS_MAX_AGE_S = 300;
/** How long a replaced key stays published after its successor starts signing: late deliveries still verify. */
export const KEY_OVERLAP_S = 3_600;

/** One JSON Web Key of an account's set (RFC 8037, OKP). */
export interface SigningJwk {
  kty: "OKP";
  crv: "Ed25519";
  alg: "EdDSA";
  use: "sig";
  kid: string;
  x: string;
}

interface KeyRow {
  id: string;
  public_key: string;
  private_key_sealed: string;
  signs_from: Date | string;
}

const ofAccount = (account: string | null) => (account === null ? sql`account is null` : sql`account = ${account}`);

/** The lock key an account's key changes take turns under (one per account, transaction-scoped). */
const SIGNING_KEY_LOCK = 7_207_316;

/** Takes the account's key lock for the rest of `tx`, then says whether it has a key yet. */
async function lockAccountKeys(tx: Database, account: string | null): Promise<boolean> {
  await tx.rows(sql`select pg_advisory_xact_lock(${SIGNING_KEY_LOCK}, hashtext(coalesce(${account}::text, '')))`);
  const [existing] = await tx.rows<{ id: string }>(
    sql`select id from webhook_signing_key where ${ofAccount(account)} limit 1`,
  );
  return existing !== undefined;
}

/** Makes an account's first key, signing now, unless it has one: taken under a lock of its account, once. */
export async function ensureSigningKey(tx: Database, account: string | null, secrets: SecretSealer): Promise<void> {
  if (!(await lockAccountKeys(tx, account))) await insertKey(tx, account, secrets, 0);
}

/**
 * Rotates an account's key: a new one, published now and signing JWKS_MAX_AGE_S from now (at once for an account's
 * first key); the keys it replaces stay published `graceSeconds` after that (KEY_OVERLAP_S unless given), then leave
 * the set, and what they signed stops verifying. `immediate` (a leaked key): the new one signs at once and the
 * others stay only for the grace given (none unless given), and one yet to sign leaves now; receivers holding a cached set refuse deliveries until
 * they fetch it again (at most its max-age), and those deliveries are retried; workers sign with the new key within
 * KEYS_TTL_MS. A key already leaving sooner is not kept longer. Returns the new key's id, when it starts signing, and
 * until when the keys it replaces stay published.
 */
export async function rotateSigningKey(
  tx: Database,
  account: string | null,
  secrets: SecretSealer,
  options: { immediate?: boolean; graceSeconds?: number } = {},
): Promise<{ kid: string; signsFrom: Date; createdAt: Date; previousUntil: Date }> {
  // An account's first key has no predecessor to overlap with, and nobody can have cached its set: it signs at once.
  const immediate = options.immediate === true || !(await lockAccountKeys(tx, account));
  const created = await insertKey(tx, account, secrets, immediate ? 0 : JWKS_MAX_AGE_S);
  const grace = options.graceSeconds ?? (options.immediate ? 0 : KEY_OVERLAP_S);
  const previousUntil = new Date(created.signsFrom.getTime() + grace * 1_000);
  await tx.rows(sql`
    update webhook_signing_key set published_until = ${previousUntil}
    where ${ofAccount(account)} and id <> ${created.kid}
      and (published_until is null or published_until > ${previousUntil})
  `);
  // A leak: a key an earlier rotation made that has not signed yet would take over from the new one when its time
  // came (the newest whose time has come signs). It has signed nothing, so it leaves now, whatever the grace.
  if (options.immediate) {
    await tx.rows(sql`
      update webhook_signing_key set published_until = now()
      where ${ofAccount(account)} and id <> ${created.kid} and signs_from > now()
    `);
  }
  return { ...created, previousUntil };
}

async function insertKey(
  tx: Database,
  account: string | null,
  secrets: SecretSealer,
  leadSeconds: number,
): Promise<{ kid: string; signsFrom: Date; createdAt: Date }> {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x!;
  const sealed = await secrets.seal(privateKey.export({ format: "der", type: "pkcs8" }).toString("base64"));
  const [row] = await tx.rows<{ id: string; signs_from: Date | string; created_at: Date | string }>(sql`
    insert into webhook_signing_key (account, public_key, private_key_sealed, signs_from)
    values (${account}, ${x}, ${sealed}, now() + ${leadSeconds} * interval '1 second')
    returning id, signs_from, created_at
  `);
  return { kid: row!.id, signsFrom: new Date(row!.signs_from), createdAt: new Date(row!.created_at) };
}

/** An account's published key set, oldest first: the same bytes from every process. */
export async function publishedKeys(database: Database, account: string | null): Promise<{ keys: SigningJwk[] }> {
  const rows = await database.rows<{ id: string; public_key: string }>(sql`
    select id, public_key from webhook_signing_key
    where ${ofAccount(account)} and (published_until is null or published_until > now())
    order by signs_from, id
  `);
  return {
    keys: rows.map((row) => ({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig", kid: row.id, x: row.public_key })),
  };
}

/** A strong validator for a key set's bytes. */
export const keySetEtag = (body: string) => `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;

/** The key an account signs with now. */
export interface Signer {
  kid: string;
  key: KeyObject;
}

export interface SigningKeyStore {
  /** The key `account` signs with at `at`: the newest whose `signs_from` has come; throws when it has none. */
  signer(account: string | null, at: Date): Promise<Signer>;
}

/**
 * How long a process keeps an account's keys before reading them again: far inside a rotation's lead, and the
 * longest a worker goes on signing with a key an immediate rotation withdrew.
 */
export const KEYS_TTL_MS = 5_000;

/**
 * The lane's view of the signing keys: each account's keys read once per KEYS_TTL_MS and unsealed once, the one
 * that signs chosen at each attempt by its `signs_from`. A rotation's key is read here minutes before it signs.
 */
export function createSigningKeyStore(database: Database, secrets: SecretSealer): SigningKeyStore {
  const cache = new Map<string, { readAt: number; keys: Promise<Array<Signer & { signsFrom: number }>> }>();
  const load = async (account: string | null) => {
    const rows = await database.rows<KeyRow>(sql`
      select id, public_key, private_key_sealed, signs_from from webhook_signing_key
      where ${ofAccount(account)} and (published_until is null or published_until > now())
      order by signs_from desc, id desc
    `);
    return Promise.all(
      rows.map(async (row) => ({
        kid: row.id,
        key: createPrivateKey({
          key: Buffer.from(await secrets.unseal(row.private_key_sealed), "base64"),
          format: "der",
          type: "pkcs8",
        }),
        signsFrom: new Date(row.signs_from).getTime(),
      })),
    );
  };
  return {
    async signer(account, at) {
      const name = account ?? "";
      let entry = cache.get(name);
      if (!entry || Date.now() - entry.readAt > KEYS_TTL_MS) {
        entry = { readAt: Date.now(), keys: load(account) };
        cache.set(name, entry);
        entry.keys.catch(() => cache.delete(name));
      }
      const signer = (await entry.keys).find((key) => key.signsFrom <= at.getTime());
      if (!signer) throw new Error(`no ed25519 signing key signs for ${account ?? "global webhooks"} yet`);
      return { kid: signer.kid, key: signer.key };
    },
  };
}
