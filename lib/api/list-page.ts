import { and, desc, eq, type SQL } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { afterCursor } from "../db/sql/keyset-cursor.ts";
import { ApiError } from "./problem.ts";

/** The query every list takes: `limit` (1-100, default 50) and `cursor` (the previous page's `nextCursor`). */
export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(50).describe("Page size, 1-100."),
  cursor: z.string().min(1).max(100).optional().describe("`nextCursor` of the previous page."),
};

/** The one list shape: `{ object: "list", data, nextCursor }`, with an example built from the item's. */
export function listOf<T extends z.ZodType>(item: T) {
  const example = (item.meta()?.examples as unknown[] | undefined)?.[0];
  return z
    .strictObject({
      object: z.literal("list").describe("Always `list`."),
      data: z.array(item).describe("This page's items, in the list's order (newest first unless the operation says)."),
      nextCursor: z.string().nullable().describe("Pass as `cursor` for the next page; null on the last."),
    })
    .meta(example === undefined ? {} : { examples: [{ object: "list", data: [example], nextCursor: null }] });
}

export interface ListPage<Item> {
  object: "list";
  data: Item[];
  nextCursor: string | null;
}

/**
 * One page from `limit + 1` rows read in page order: the extra row only
 * tells that another page follows, whose cursor is this page's last id.
 */
export function listPage<Row extends { id: string }, Item>(
  rows: Row[],
  limit: number,
  present: (row: Row) => Item,
): ListPage<Item> {
  const page = rows.slice(0, limit);
  return { object: "list", data: page.map(present), nextCursor: rows.length > limit ? page.at(-1)!.id : null };
}

/** A `cursor` that names no row the caller may page from: a 422 naming `cursor`. */
export const unknownCursor = () =>
  new ApiError(422, "Unprocessable Content", "cursor: unknown cursor", {
    errors: [{ field: "cursor", message: "unknown cursor" }],
  });

type Keyed = PgTable & { createdAt: PgColumn; id: PgColumn };

/**
 * Reads one newest-first page of `table` (by `created_at`, then `id`): the
 * rows `scope` lets the caller see, narrowed by `filter`, after the row the
 * cursor names. Throws `unknownCursor()` when the cursor is not a row in
 * `scope`. Returns up to `limit + 1` rows, for `listPage`.
 */
export async function readNewestFirst<T extends Keyed>(
  db: Db,
  table: T,
  options: { scope: SQL | undefined; filter?: SQL | undefined; limit: number; cursor?: string | undefined },
): Promise<T["$inferSelect"][]> {
  const { scope, filter, limit, cursor } = options;
  if (cursor) {
    const [found] = await db
      .select({ id: table.id })
      .from(table as PgTable)
      .where(and(eq(table.id, cursor), scope));
    if (!found) throw unknownCursor();
  }
  // A table passed generically loses drizzle's row typing; the return type restores it.
  return (await db
    .select()
    .from(table as PgTable)
    .where(and(scope, filter, cursor ? afterCursor(table, table, cursor) : undefined))
    .orderBy(desc(table.createdAt), desc(table.id))
    .limit(limit + 1)) as T["$inferSelect"][];
}
