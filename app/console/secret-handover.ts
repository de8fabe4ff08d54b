import { and, eq, gt, sql } from "drizzle-orm";
import { createHash, randomBytes } from "node:crypto";
import type { Hooklane } from "../../lib/hooklane.ts";
import { secretHandover } from "../../lib/db/schema.ts";

/** How long a secret waits for its page: the redirect follows at once, so this only bounds what nobody took. */
const HANDOVER_MS = 10 * 60_000;

/** A token as `handOverSecret` makes it: 32 random bytes, base64url. Anything else names no handover. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

const hashOf = (token: string) => createHash("sha256").update(token).digest("base64url");

/**
 * Keeps `secret` (sealed) for the page that shows it and returns that page's
 * token. The form that created the webhook or rotated its secret redirects
 * there (Post/Redirect/Get), so a reload shows a page, never runs the action.
 */
export async function handOverSecret(
  hooklane: Hooklane,
  handover: { webhookId: string; secret: string; rotated: boolean },
): Promise<string> {
  const token = randomBytes(32).toString("base64url");
  await hooklane.database.db.insert(secretHandover).values({
    idHash: hashOf(token),
    webhookId: handover.webhookId,
    secretSealed: await hooklane.secrets.seal(handover.secret),
    rotated: handover.rotated,
    expiresAt: new Date(Date.now() + HANDOVER_MS),
  });
  return token;
}

/**
 * The secret `token` handed over for `webhookId`, taken: the row is deleted
 * as it is read, so the page shows it once. Undefined when the token is
 * malformed, unknown, already taken, expired or for another webhook.
 */
export async function takeSecret(
  hooklane: Hooklane,
  token: string,
  webhookId: string,
): Promise<{ secret: string; rotated: boolean } | undefined> {
  if (!TOKEN.test(token)) return undefined;
  const [row] = await hooklane.database.db
    .delete(secretHandover)
    .where(
      and(
        eq(secretHandover.idHash, hashOf(token)),
        eq(secretHandover.webhookId, webhookId),
        gt(secretHandover.expiresAt, sql`now()`),
      ),
    )
    .returning({ secretSealed: secretHandover.secretSealed, rotated: secretHandover.rotated });
  return row && { secret: await hooklane.secrets.unseal(row.secretSealed), rotated: row.rotated };
}
