import { and, eq, sql, type AnyColumn, type SQL } from "drizzle-orm";
import type { ApiContext } from "../../../lib/api/handler.ts";
import { ApiError } from "../../../lib/api/problem.ts";
import type { Principal } from "../../../lib/auth/jwt.ts";
import { preparedPerDatabase } from "../../../lib/db/prepared.ts";
import { account } from "../../../lib/db/schema.ts";

/**
 * The condition that keeps a caller to its own account's rows; undefined (no
 * restriction) for an admin. Combine with `and()`, which skips undefined, so a
 * row of another account simply is not found and answers 404.
 */
export function visibleTo(principal: Principal, accountColumn: AnyColumn): SQL | undefined {
  return principal.admin ? undefined : eq(accountColumn, principal.account);
}

/** The row named by the `:id` path parameter, if the caller may see it. */
export function requestedRow(c: ApiContext, idColumn: AnyColumn, accountColumn: AnyColumn): SQL | undefined {
  return and(eq(idColumn, c.req.param("id") ?? ""), visibleTo(c.get("principal"), accountColumn));
}

const accountExists = preparedPerDatabase((db) =>
  db
    .select({ id: account.id })
    .from(account)
    .where(eq(account.id, sql.placeholder("id")))
    .prepare("account_exists"),
);

/**
 * The account a new row belongs to: an admin may name one, everyone else gets
 * their own whatever they send. Throws a 422 naming `account` when it does not exist.
 */
export async function owningAccount(c: ApiContext, requested: string | undefined): Promise<string> {
  const principal = c.get("principal");
  const id = principal.admin && requested ? requested : principal.account;
  const [row] = await accountExists(c.get("database").db).execute({ id });
  if (!row) {
    const errors = [{ field: "account", message: "no such account" }];
    throw new ApiError(422, "Unprocessable Content", "account: no such account", { errors });
  }
  return id;
}
