import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../lib/db/client.ts";
import { createTestDatabase } from "../support/postgres.ts";
import { countSocketWrites } from "../support/socket-writes.ts";

// Transactions on node-postgres send BEGIN with their first statement and the
// `beforeCommit` statements with COMMIT: the outcomes must be an ordinary transaction's.
describe("pipelined transactions on PostgreSQL", () => {
  let created: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  const values = async () =>
    (await database.rows<{ v: string }>(sql`select v from pipelined_probe order by v`)).map((row) => row.v);

  beforeAll(async () => {
    created = await createTestDatabase();
    // One connection: every transaction reuses it, so one left dirty would show in the next.
    database = await openDatabase({ databaseUrl: created.url, schema: "as-is", poolMax: 1 });
    await database.rows(sql`create table pipelined_probe (v text primary key)`);
  });
  afterAll(async () => {
    await database?.close();
    await created?.drop();
  });
  beforeEach(async () => {
    await database.rows(sql`truncate pipelined_probe`);
  });

  it("commits its statements and the ones queued for the commit together, and nothing before", async () => {
    const seenInside: string[][] = [];
    await database.transaction(async (tx) => {
      await tx.rows(sql`insert into pipelined_probe values ('a')`);
      await tx.beforeCommit(sql`insert into pipelined_probe values ('b')`);
      seenInside.push((await tx.rows<{ v: string }>(sql`select v from pipelined_probe`)).map((row) => row.v));
    });
    // 'b' went with the COMMIT, after everything the transaction itself ran.
    expect(seenInside).toEqual([["a"]]);
    expect(await values()).toEqual(["a", "b"]);
    // The connection went back to the pool outside any transaction.
    const [row] = await database.rows<{ open: boolean }>(
      sql`select pg_current_xact_id_if_assigned() is not null as open`,
    );
    expect(row!.open).toBe(false);
  });

  it("sends a named statement queued for the commit as one the connection prepares once", async () => {
    for (const v of ["n1", "n2", "n3"]) {
      await database.transaction(async (tx) => {
        await tx.beforeCommit(sql`insert into pipelined_probe values (${v})`, "pipelined_probe_insert");
      });
    }
    expect(await values()).toEqual(["n1", "n2", "n3"]);
    // The pool's one connection holds it, prepared once and executed for every commit.
    const prepared = await database.rows<{ statement: string }>(
      sql`select statement from pg_prepared_statements where name = 'pipelined_probe_insert'`,
    );
    expect(prepared.map((row) => row.statement)).toEqual(["insert into pipelined_probe values ($1)"]);
    // Failing, it rolls back like any other.
    const failed = database.transaction(async (tx) => {
      await tx.rows(sql`insert into pipelined_probe values ('n4')`);
      await tx.beforeCommit(sql`insert into pipelined_probe values (${"n1"})`, "pipelined_probe_insert");
    });
    await expect(failed).rejects.toThrow();
    expect(await values()).toEqual(["n1", "n2", "n3"]);
  });

  it("rolls everything back when a statement queued for the commit fails, and the connection stays usable", async () => {
    const failed = database.transaction(async (tx) => {
      await tx.rows(sql`insert into pipelined_probe values ('a')`);
      await tx.beforeCommit(sql`insert into pipelined_probe values ('a')`); // a duplicate key
    });
    await expect(failed).rejects.toThrow();
    expect(await values()).toEqual([]);
    await database.transaction(async (tx) => {
      await tx.rows(sql`insert into pipelined_probe values ('c')`);
    });
    expect(await values()).toEqual(["c"]);
  });

  it("rolls back when the work throws, and a savepoint undoes only its own part", async () => {
    await expect(
      database.transaction(async (tx) => {
        await tx.rows(sql`insert into pipelined_probe values ('a')`);
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    expect(await values()).toEqual([]);
    await database.transaction(async (tx) => {
      await tx.rows(sql`insert into pipelined_probe values ('outer')`);
      await expect(
        tx.transaction(async (inner) => {
          await inner.rows(sql`insert into pipelined_probe values ('inner')`);
          throw new Error("inner only");
        }),
      ).rejects.toThrow("inner only");
      await tx.transaction(async (inner) => {
        await inner.rows(sql`insert into pipelined_probe values ('kept')`);
      });
    });
    expect(await values()).toEqual(["kept", "outer"]);
  });

  it("follows concurrent commits that asked for a NOTIFY with one delivered after the last of them", async () => {
    const concurrent = await openDatabase({ databaseUrl: created.url, schema: "as-is", poolMax: 10 });
    const listener = new pg.Client({ connectionString: created.url });
    await listener.connect();
    try {
      // Each NOTIFY's handler counts the rows: the last one must see every committed row.
      const seen: number[] = [];
      listener.on("notification", () => {
        void concurrent
          .rows<{ n: number }>(sql`select count(*)::int as n from pipelined_probe`)
          .then(([row]) => seen.push(row!.n));
      });
      await listener.query("listen probe_wake");
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          concurrent.transaction(async (tx) => {
            await tx.rows(sql`insert into pipelined_probe values (${`r${i}`})`);
            await tx.notifyAtCommit("probe_wake");
          }),
        ),
      );
      const deadline = Date.now() + 5_000;
      while (Math.max(0, ...seen) < 40 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(Math.max(0, ...seen)).toBe(40);
      expect(seen.length).toBeLessThanOrEqual(40);
    } finally {
      await listener.end();
      await concurrent.close();
    }
  });

  it("sends nothing for a transaction that ran no statement, and BEGIN and COMMIT around one that did", async () => {
    const before = database.queryCount;
    await database.transaction(async () => undefined);
    expect(database.queryCount).toBe(before);
    await database.transaction(async (tx) => {
      await tx.rows(sql`select 1`);
    });
    expect(database.queryCount - before).toBe(3);
  });

  describe("with its last statements announced (commitAfter)", () => {
    const port = () => Number(new URL(created.url).port || 5432);

    /** Two inserts and one queued for the commit, told ahead or not; returns the writes it took. */
    const twoAndQueued = async (v: [string, string, string], ahead: boolean) => {
      const writes = countSocketWrites(port());
      try {
        await database.transaction(async (tx) => {
          await tx.beforeCommit(sql`insert into pipelined_probe values (${v[2]})`);
          if (ahead) tx.commitAfter(2);
          await Promise.all([
            tx.rows(sql`insert into pipelined_probe values (${v[0]})`),
            tx.rows(sql`insert into pipelined_probe values (${v[1]})`),
          ]);
        });
        return writes.count();
      } finally {
        writes.stop();
      }
    };

    it("sends BEGIN, the statements, the ones queued for the commit and COMMIT in one write", async () => {
      expect(await twoAndQueued(["a", "b", "queued"], true)).toBe(1);
      expect(await values()).toEqual(["a", "b", "queued"]);
      // The same transaction told nothing ahead: its statements' write, then the queued one's with COMMIT.
      expect(await twoAndQueued(["c", "d", "queued2"], false)).toBe(2);
      expect(await values()).toEqual(["a", "b", "c", "d", "queued", "queued2"]);
    });

    it("commits nothing when one of those statements fails, and reports it", async () => {
      const failed = database.transaction(async (tx) => {
        await tx.beforeCommit(sql`insert into pipelined_probe values ('queued')`);
        tx.commitAfter(2);
        await Promise.all([
          tx.rows(sql`insert into pipelined_probe values ('a')`),
          tx.rows(sql`insert into pipelined_probe values ('a')`), // a duplicate key
        ]);
      });
      expect(
        causeOf(
          await failed.then(
            () => undefined,
            (error: unknown) => error,
          ),
        ),
      ).toMatch(/duplicate key/);
      expect(await values()).toEqual([]);
      // The connection went back clean.
      await database.transaction(async (tx) => {
        await tx.rows(sql`insert into pipelined_probe values ('after')`);
      });
      expect(await values()).toEqual(["after"]);
    });

    it("commits at the end as usual when fewer statements come in that write", async () => {
      await database.transaction(async (tx) => {
        tx.commitAfter(2);
        await tx.rows(sql`insert into pipelined_probe values ('a')`);
        // In a later write: COMMIT did not go with the first, so this one still belongs to the transaction.
        await tx.rows(sql`insert into pipelined_probe values ('b')`);
        await tx.beforeCommit(sql`insert into pipelined_probe values ('queued')`);
      });
      expect(await values()).toEqual(["a", "b", "queued"]);
    });

    it("refuses a statement after the COMMIT went, and the transaction ends with that COMMIT's answer", async () => {
      const refused = database.transaction(async (tx) => {
        tx.commitAfter(1);
        await tx.rows(sql`insert into pipelined_probe values ('a')`);
        // What would have gone with COMMIT is refused too, rather than lost.
        await expect(tx.beforeCommit(sql`insert into pipelined_probe values ('queued')`)).rejects.toThrow(
          /COMMIT is sent/,
        );
        await expect(tx.notifyAtCommit("probe_wake")).rejects.toThrow(/COMMIT is sent/);
        await tx.rows(sql`insert into pipelined_probe values ('late')`);
      });
      expect(
        causeOf(
          await refused.then(
            () => undefined,
            (error: unknown) => error,
          ),
        ),
      ).toMatch(/COMMIT is sent/);
      // What ran before the COMMIT is committed; the late statement never reached the server.
      expect(await values()).toEqual(["a"]);
      const [row] = await database.rows<{ open: boolean }>(
        sql`select pg_current_xact_id_if_assigned() is not null as open`,
      );
      expect(row!.open).toBe(false);
    });
  });
});

/** The message of what failed: drizzle wraps a driver's error in "Failed query: …" with it as the cause. */
function causeOf(error: unknown): string {
  const cause = (error as { cause?: unknown } | undefined)?.cause ?? error;
  return cause instanceof Error ? cause.message : String(cause);
}
