import { and, eq, sql, type AnyColumn, type SQL } from "drizzle-orm";
import { lastStatements, type ApiContext } from "../../../lib/api/handler.ts";
import { ApiError } from "../../../lib/api/problem.ts";
import type { Principal } from "../../../lib/auth/jwt.ts";
import type { Database, Db } from "../../../lib/db/client.ts";
import { preparedPerDatabase } from "../../../lib/db/prepared.ts";
import { account } from "../../../lib/db/schema.ts";
import { newRowId } from "./resource-fields.ts";

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
  const id = ownerOf(c, requested);
  const [row] = await accountExists(c.get("database").db).execute({ id });
  if (!row) throw noSuchAccount();
  return id;
}

/**
 * Inserts a new row `prefix_…` of the account `owningAccount` names, with
 * `insert(db, owner, id)`, and returns its result: the route's last
 * statement, answered with the row. The account check and the insert go to
 * the database together, in one transaction that COMMIT closes in the same
 * write on node-postgres: the request's own when its 2xx publishes (with the
 * event's message, `lastStatements()`), otherwise one of their own (on PGlite
 * and Neon, the check and then the insert). The row's account column
 * must reference `account`: an insert for an account that does not exist
 * fails on that foreign key, the COMMIT is answered with ROLLBACK, and the
 * 422 comes with nothing committed.
 */
export async function insertForOwner<T>(
  c: ApiContext,
  requested: string | undefined,
  prefix: string,
  insert: (db: Db, owner: string, id: string) => Promise<T>,
): Promise<T> {
  const id = newRowId(prefix);
  const owner = ownerOf(c, requested);
  const checkAndInsert = async (tx: Database) => {
    const [found, inserted] = await Promise.allSettled([
      accountExists(tx.db).execute({ id: owner }),
      insert(tx.db, owner, id),
    ]);
    // The insert's foreign key found the account (the check, with a snapshot of its own, may have run before the
    // account committed): COMMIT may have gone with it, so its success is the answer.
    if (inserted.status === "fulfilled") return inserted.value;
    if (found.status === "rejected") throw found.reason;
    if (found.value.length === 0) throw noSuchAccount();
    throw inserted.reason;
  };
  const database = c.get("database");
  if (database !== c.get("hooklane").database) return lastStatements(c, id, 2, () => checkAndInsert(database));
  // Nobody listening. Where transactions are not pipelined (PGlite, Neon) one would cost round trips of its own.
  if (!database.pipelined) return insert(database.db, await owningAccount(c, requested), id);
  return database.transaction(async (tx) => {
    tx.commitAfter(2);
    return checkAndInsert(tx);
  });
}

function ownerOf(c: ApiContext, requested: string | undefined): string {
  const principal = c.get("principal");
  return principal.admin && requested ? requested : principal.account;
}

/** The 422 for a row of an account that does not exist, naming the `account` field. */
export function noSuchAccount(): ApiError {
  const errors = [{ field: "account", message: "no such account" }];
  return new ApiError(422, "Unprocessable Content", "account: no such account", { errors });
}
