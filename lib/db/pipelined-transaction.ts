import { is, SQL, type Query } from "drizzle-orm";
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
 * the waits between them are gone. A transaction that knows its last
 * statements ahead (`commitAfter`) sends COMMIT in their write: BEGIN, the
 * statements, the queued ones and COMMIT in one.
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

const COMMIT_SENT = "the transaction's COMMIT is sent: nothing may follow it";

/**
 * NOTIFYs on one channel from one process, shared by concurrent transactions.
 * PostgreSQL serialises every transaction that NOTIFYs on one lock held
 * through its commit's WAL flush: ten connections each committing a NOTIFY
 * reach about a quarter of the commits per second they reach without (583
 * against 2,361 /s measured here). So at most one NOTIFY per channel is on
 * its way at a time, carried by the COMMIT that claims it. A NOTIFY wakes
 * listeners for every row committed before it; a commit that went without
 * (another was on its way) is covered by the next COMMIT that claims one, or,
 * when none does within `delayMs`, by a NOTIFY sent on its own. Under load
 * commits keep claiming and no statement is added; a lone commit carries its
 * own.
 */
export class NotifyCoalescer {
  readonly #send: () => Promise<unknown>;
  readonly #delayMs: number;
  readonly #retryMs: number;
  #inFlight = false;
  /** Commits that asked for a NOTIFY and went without, counted. */
  #quiet = 0;
  /** The count of those a delivered NOTIFY covers. */
  #announced = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(send: () => Promise<unknown>, options: { delayMs?: number; retryMs?: number } = {}) {
    this.#send = send;
    this.#delayMs = options.delayMs ?? 2;
    this.#retryMs = options.retryMs ?? 1_000;
  }

  /** At a COMMIT's sending: a mark when it is to carry the NOTIFY, undefined when another one is on its way. */
  claim(): number | undefined {
    if (this.#inFlight) return undefined;
    this.#inFlight = true;
    return this.#quiet;
  }

  /** The COMMIT (or statement) that carried the NOTIFY claimed with `mark` ended, committed or not. */
  carried(mark: number, committed: boolean): void {
    this.#inFlight = false;
    if (committed) this.#announced = Math.max(this.#announced, mark);
    this.#schedule(this.#delayMs);
  }

  /** A commit that asked for a NOTIFY went without one. */
  committedQuietly(): void {
    this.#quiet++;
    this.#schedule(this.#delayMs);
  }

  #uncovered(): boolean {
    return this.#quiet > this.#announced;
  }

  /** Unless a COMMIT claims one meanwhile, sends a NOTIFY in `ms` for the commits not covered yet. */
  #schedule(ms: number): void {
    if (this.#inFlight || !this.#uncovered() || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      // A COMMIT that claimed meanwhile covers them, or schedules this again once it ends.
      if (this.#inFlight || !this.#uncovered()) return;
      const mark = this.claim()!;
      this.#send().then(
        () => this.carried(mark, true),
        () => {
          // The database is unreachable: again in a while rather than in a loop (listeners also poll).
          this.#inFlight = false;
          this.#schedule(this.#retryMs);
        },
      );
    }, ms);
    this.#timer.unref();
  }
}

/** One pooled connection's link: reused by every transaction that runs on it, one at a time. */
export class TransactionLink implements PipelinedLink {
  readonly #client: PipelinedClient;
  readonly #onStatement: () => void;
  #beginPending = false;
  #begun: Promise<unknown> | undefined;
  #atCommit: Array<{ name?: string | undefined; text: string; values: unknown[] }> = [];

  readonly #notifier: (channel: string) => NotifyCoalescer;
  #notify = new Set<string>();
  #held = false;
  /** Statements still to come before COMMIT is sent with them (`commitAfter`); 0 when none is awaited. */
  #commitAfter = 0;
  /** COMMIT already sent (`commitAfter`): what `commit()` waits for, and what ends the transaction. */
  #committing: Promise<void> | undefined;

  constructor(client: pg.PoolClient, onStatement: () => void, notifier: (channel: string) => NotifyCoalescer) {
    this.#client = client as PipelinedClient;
    this.#onStatement = onStatement;
    this.#notifier = notifier;
  }

  /** Opens a transaction on the connection; nothing is sent until its first statement. */
  open(): void {
    this.#client.pipeline = true;
    this.#beginPending = true;
    this.#begun = undefined;
    this.#atCommit = [];
    this.#notify.clear();
    this.#commitAfter = 0;
    this.#committing = undefined;
  }

  /** Whether BEGIN went out (and so the transaction must end with COMMIT or ROLLBACK). */
  get opened(): boolean {
    return this.#begun !== undefined;
  }

  query(config: unknown, values?: unknown): Promise<unknown> {
    if (this.#committing) return Promise.reject(new Error(COMMIT_SENT));
    this.#holdWrites();
    if (this.#beginPending) this.#begin();
    const result = this.#client.query(config as pg.QueryConfig, values as unknown[]);
    if (this.#commitAfter > 0 && --this.#commitAfter === 0) {
      this.#committing = this.#sendCommit();
      // Its failure is `commit()`'s to report; never an unhandled rejection.
      this.#committing.catch(() => {});
    }
    return result;
  }

  /**
   * Sends COMMIT, with the statements queued for it, right behind the next
   * `statements` statements and in their write: the transaction's last ones,
   * whose answers the caller then awaits as usual. Nothing may run after them
   * (a statement would be refused) and `commit()` only waits for the answer.
   * If fewer arrive before the write leaves (the end of the current run of
   * microtasks), nothing changes: COMMIT goes when `commit()` is called.
   */
  commitAfter(statements: number): void {
    if (this.#committing || statements < 1) return;
    this.#commitAfter = statements;
    this.#holdWrites();
  }

  /**
   * Holds the socket's writes until the current run of microtasks is over, so
   * statements issued together (BEGIN and the first, or a `Promise.all`) leave
   * in one write; none waits longer than that.
   */
  #holdWrites(): void {
    if (this.#held) return;
    this.#held = true;
    const stream = this.#client.connection.stream;
    stream.cork();
    process.nextTick(() => {
      this.#held = false;
      // Statements awaited by `commitAfter` that did not come with this write: COMMIT waits for `commit()`.
      this.#commitAfter = 0;
      stream.uncork();
    });
  }

  /**
   * Queues `query` to go with COMMIT; with a `name`, as a named statement the
   * connection parses and plans once (the same name must always carry the same SQL).
   */
  beforeCommit(query: SQL | Query, name?: string): void {
    this.#refuseAfterCommit();
    const { sql, params } = is(query, SQL) ? dialect.sqlToQuery(query) : query;
    this.#atCommit.push({ name, text: sql, values: params });
  }

  /** Asks for a NOTIFY on `channel` once the transaction commits (see NotifyCoalescer). */
  notifyAtCommit(channel: string): void {
    this.#refuseAfterCommit();
    this.#notify.add(channel);
  }

  /** Once COMMIT went (`commitAfter`), whatever was meant to go with it would be lost: refused instead. */
  #refuseAfterCommit(): void {
    if (this.#committing) throw new Error(COMMIT_SENT);
  }

  /**
   * Sends the queued statements and COMMIT in one write and waits for all of
   * them. Throws when any failed, or when the server answered the COMMIT with
   * a ROLLBACK (a statement before it had failed): nothing was committed then.
   */
  async commit(): Promise<void> {
    if (this.#committing) return this.#committing;
    if (!this.opened && this.#atCommit.length === 0 && this.#notify.size === 0) return;
    return this.#corked(() => this.#sendCommit());
  }

  /** Sends the queued statements, the NOTIFY the transaction claims and COMMIT; resolves once committed. */
  async #sendCommit(): Promise<void> {
    const carried: Array<{ notifier: NotifyCoalescer; mark: number }> = [];
    const quiet: NotifyCoalescer[] = [];
    for (const channel of this.#notify) {
      const notifier = this.#notifier(channel);
      const mark = notifier.claim();
      if (mark === undefined) quiet.push(notifier);
      else {
        carried.push({ notifier, mark });
        this.#atCommit.push({ text: "select pg_notify($1, '')", values: [channel] });
      }
    }
    this.#notify.clear();
    let committed = false;
    try {
      if (this.#beginPending) this.#begin();
      const statements = this.#atCommit.map(({ name, text, values }) => {
        this.#onStatement();
        return name === undefined ? this.#client.query(text, values) : this.#client.query({ name, text, values });
      });
      this.#atCommit = [];
      this.#onStatement();
      const sent = [this.#begun, ...statements, this.#client.query("commit")];
      const settled = await Promise.allSettled(sent);
      const failed = settled.find((result) => result.status === "rejected");
      if (failed) throw failed.reason;
      const commit = (settled.at(-1) as PromiseFulfilledResult<pg.QueryResult>).value;
      if (commit.command !== "COMMIT") throw new Error(`the transaction was rolled back (${commit.command})`);
      committed = true;
    } finally {
      for (const { notifier, mark } of carried) notifier.carried(mark, committed);
      if (committed) for (const notifier of quiet) notifier.committedQuietly();
    }
  }

  /** Ends a transaction that failed: ROLLBACK when BEGIN went out. */
  async rollback(): Promise<void> {
    this.#atCommit = [];
    this.#notify.clear();
    this.#beginPending = false;
    this.#commitAfter = 0;
    // COMMIT went out already: the transaction ends with its answer (ROLLBACK when a statement failed).
    if (this.#committing) return void (await this.#committing.catch(() => {}));
    if (!this.opened) return;
    this.#onStatement();
    await this.#client.query("rollback");
  }

  /** Back to an ordinary connection, before it returns to the pool. */
  close(): void {
    this.#client.pipeline = false;
    this.#beginPending = false;
    this.#begun = undefined;
    this.#commitAfter = 0;
    this.#committing = undefined;
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
