import { sql, type AnyColumn, type SQL } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";

/**
 * For newest-first pages ordered by (created_at, id): rows that come after
 * the row `cursorId` names. Compared inside the database, so timestamps keep
 * their microseconds (a JavaScript Date would round them and skip rows).
 * Matches nothing when `cursorId` does not exist.
 */
export function afterCursor(table: PgTable, columns: { createdAt: AnyColumn; id: AnyColumn }, cursorId: string): SQL {
  return sql`(${columns.createdAt}, ${columns.id}) < (select ${columns.createdAt}, ${columns.id} from ${table} where ${columns.id} = ${cursorId})`;
}
