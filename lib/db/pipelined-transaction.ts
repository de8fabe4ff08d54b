import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type pg from "pg";

/**
 * What a node-postgres transaction costs beyond its own statements is two
 * round trips and two socket writes: BEGIN and COMMIT. On a machine where a
 * write costs tens of microseconds of CPU (virtualised networking) that is
 * most of a short transaction's overhead. A pipelined transaction sends BEGIN
 * in the same write as its first statement (pg's pipeline mode lets a query
 * go out before the one ahead of it is answered), and the statements queued
 * with `beforeCommit` in the same write as COMMIT. The statements, their
 * order and the server's answers are those of an ordinary transaction; only
 * the waits between them are gone.
 */
export interface PipelinedLink {
  /** What drizzle calls: the first statement of a transaction carries its BEGIN. */
  query(config: unknown, values?: unknown): Promise<unknown>;
}

type PipelinedClient = pg.PoolClient & { pipeline: boolean; connection: { stream: NodeJS.WritableStream & Corkable } };
interface Corkable {
  cork(): void;
  uncork(): void;
}

const dialect = new PgDialect();

/** One pooled connection's link: reused by every transaction that runs on it, one at a time. */
export class TransactionLink implements PipelinedLink {
  readonly #client: PipelinedClient;
  readonly #onStatement: () => void;
  #beginPending = false;
  #begun: Promise<unknown> | undefined;
  #atCommit: Array<{ text: string; values: unknown[] }> = [];

  constructor(client: pg.PoolClient, onStatement: () => void) {
    this.#client = client as PipelinedClient;
    this.#onStatement = onStatement;
  }

  /** Opens a transaction on the connection; nothing is sent until its first statement. */
  open(): void {
    this.#client.pipeline = true;
    this.#beginPending = true;
    this.#begun = undefined;
    this.#atCommit = [];
  }

  /** Whether BEGIN went out (and so the transaction must end with COMMIT or ROLLBACK). */
  get opened(): boolean {
    return this.#begun !== undefined;
  }

  query(config: unknown, values?: unknown): Promise<unknown> {
    if (!this.#beginPending) return this.#client.query(config as pg.QueryConfig, values as unknown[]);
    return this.#corked(() => {
      this.#begin();
      return this.#client.query(config as pg.QueryConfig, values as unknown[]);
    });
  }

  /** Queues `query` to go with COMMIT. */
  beforeCommit(query: SQL): void {
    const { sql, params } = dialect.sqlToQuery(query);
    this.#atCommit.push({ text: sql, values: params });
  }

  /**
   * Sends the queued statements and COMMIT in one write and waits for all of
   * them. Throws when any failed, or when the server answered the COMMIT with
   * a ROLLBACK (a statement before it had failed): nothing was committed then.
   */
  async commit(): Promise<void> {
    if (!this.opened && this.#atCommit.length === 0) return;
    const sent = this.#corked(() => {
      if (this.#beginPending) this.#begin();
      const statements = this.#atCommit.map(({ text, values }) => {
        this.#onStatement();
        return this.#client.query(text, values);
      });
      this.#atCommit = [];
      this.#onStatement();
      return [this.#begun, ...statements, this.#client.query("commit")];
    });
    const settled = await Promise.allSettled(sent);
    const failed = settled.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    const commit = (settled.at(-1) as PromiseFulfilledResult<pg.QueryResult>).value;
    if (commit.command !== "COMMIT") throw new Error(`the transaction was rolled back (${commit.command})`);
  }

  /** Ends a transaction that failed: ROLLBACK when BEGIN went out. */
  async rollback(): Promise<void> {
    this.#atCommit = [];
    this.#beginPending = false;
    if (!this.opened) return;
    this.#onStatement();
    await this.#client.query("rollback");
  }

  /** Back to an ordinary connection, before it returns to the pool. */
  close(): void {
    this.#client.pipeline = false;
    this.#beginPending = false;
    this.#begun = undefined;
  }

  #begin(): void {
    this.#beginPending = false;
    this.#onStatement();
    this.#begun = this.#client.query("begin");
    // Its failure is the next statement's too, and commit() reports it; never an unhandled rejection.
    this.#begun.catch(() => {});
  }

  /** Runs `send` with the socket corked, so whatever it queries leaves in one write. */
  #corked<T>(send: () => T): T {
    const stream = this.#client.connection.stream;
    stream.cork();
    try {
      return send();
    } finally {
      stream.uncork();
    }
  }
}
