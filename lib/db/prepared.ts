import type { Db } from "./client.ts";

/**
 * A query built once per drizzle instance rather than once per request: the
 * pool's instance, and each pooled connection's (the one its transactions
 * run on), so a hot route neither rebuilds its SQL nor, with a name given to
 * `.prepare()`, has PostgreSQL parse and plan it again on a connection that
 * already did. Instances made per transaction (the embedded database's, Neon's)
 * get their own, dropped with them.
 */
export function preparedPerDatabase<Query>(build: (db: Db) => Query): (db: Db) => Query {
  const built = new WeakMap<Db, Query>();
  return (db) => {
    let query = built.get(db);
    if (query === undefined) built.set(db, (query = build(db)));
    return query;
  };
}
