import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import type { OwnerStrategy } from "../catalogue/catalogue-entry.ts";

/**
 * Resolves the account that owns a mutated resource, reading the source row
 * once, at route time. Returns null for `none`, and for a row that no longer
 * exists (then only global webhooks hear the event). Table and column names
 * come from the reviewed catalogue, never from a request.
 */
export async function resolveOwnerAccount(
  database: Database,
  owner: OwnerStrategy,
  resourceId: string,
): Promise<string | null> {
  switch (owner.kind) {
    case "self":
      return resourceId;
    case "none":
      return null;
    case "direct": {
      const [row] = await database.rows<{ account: string | null }>(sql`
        select ${sql.identifier(owner.column)}::text as account
        from ${sql.identifier(owner.table)}
        where id = ${resourceId}
      `);
      return row?.account ?? null;
    }
    case "via": {
      const [row] = await database.rows<{ account: string | null }>(sql`
        select p.${sql.identifier(owner.column)}::text as account
        from ${sql.identifier(owner.table)} t
        join ${sql.identifier(owner.parentTable)} p on p.id = t.${sql.identifier(owner.reference)}
        where t.id = ${resourceId}
      `);
      return row?.account ?? null;
    }
  }
}
