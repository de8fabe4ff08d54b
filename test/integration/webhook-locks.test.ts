import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import type { Database } from "../../lib/db/client.ts";
import { claimDispatches } from "../../lib/db/sql/claim-dispatches.ts";
import { disableFailingWebhooks } from "../../lib/db/sql/disable-failing-webhooks.ts";
import { silentLogger } from "../../lib/log/logger.ts";
import { recordResults, type RecordDeps } from "../../lib/webhook/outbound/webhook-out-deliver.consumer.ts";
import type { AttemptResult } from "../../lib/webhook/outbound/webhook-out-deliver.handler.ts";
import { postgresFactory } from "../support/postgres.ts";

// Statements that change several webhook rows lock them in id order, read them as they are when locked, and a
// record aborted by a deadlock is sent again as it was (lib/db/functions/, record-attempts.ts).

let database: Database;
let databaseUrl: string;
let drop: () => Promise<void>;
/** Another session: the statement under test waits for what this one holds. */
let other: pg.Client;
/** A third session, which looks at what is locked without waiting. */
let observer: pg.Client;
let deps: RecordDeps;

beforeAll(async () => {
  const created = await postgresFactory();
  ({ database, drop } = created);
  databaseUrl = created.databaseUrl!;
  other = new pg.Client({ connectionString: databaseUrl });
  observer = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([other.connect(), observer.connect()]);
  deps = {
    database,
    logger: silentLogger,
    breaker: { threshold: 100, openBaseMs: 1_000, openMaxMs: 10_000, connectionClasses: ["connection_refused"] },
  };
}, 60_000);

afterAll(async () => {
  await other?.end();
  await observer?.end();
  await database?.close();
  await drop?.();
});

// A test that failed half-way must not leave its locks to the next.
afterEach(() => other.query("rollback"));

beforeEach(async () => {
  await observer.query("delete from webhook");
  await observer.query(`
    insert into webhook (id, url, events, secret_sealed, created_by, rate_limit)
    select id, 'https://example.com/' || id, array['*'], 'sealed', 'test', 100 from unnest(array['wh_a', 'wh_z']) id
  `);
});

/** A due dispatch of `webhookId`, its open row leased to `worker` when one is given. */
async function dispatch(id: string, webhookId: string, worker?: string): Promise<void> {
  await observer.query(
    `with made as (
       insert into webhook_dispatch (id, event_id, event_type, webhook_id, payload)
       values ($1, 'evt_' || $1, 'account.created', $2, '{}')
       returning id, webhook_id, next_attempt_at
     )
     insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at, locked_by, locked_until)
     select id, webhook_id, next_attempt_at, $3::text,
       case when $3::text is null then null else now() + interval '1 minute' end
     from made`,
    [id, webhookId, worker ?? null],
  );
}

const refused = (dispatchId: string, webhookId: string): AttemptResult => ({
  dispatchId,
  webhookId,
  account: null,
  eventId: `evt_${dispatchId}`,
  attempt: 1,
  status: "error",
  retryInMs: 60_000,
  startedAt: new Date(),
  durationMs: 3,
  outcome: "retry",
  statusCode: null,
  errorClass: "connection_refused",
  errorMessage: "connect ECONNREFUSED 127.0.0.1:9",
  responseExcerpt: null,
  signature: { timestamp: 1, scheme: "hooklane-v1", signatures: 1 },
  probe: false,
  test: false,
  gone: false,
});

/** A claim of up to 10 due dispatches for `workerId`, caps out of the way, its walk starting after `after`. */
const claim = (workerId: string, after?: string) =>
  claimDispatches(database, {
    workerId,
    limit: 10,
    leaseMs: 60_000,
    caps: { perWebhook: 10, perOrigin: 10, perAccount: 10 },
    ...(after === undefined ? {} : { after }),
  });

/** Polls until `done()` or some session waits for a lock (true), for 5 s at most. */
async function waitsBefore(done: () => boolean = () => false): Promise<boolean> {
  for (let i = 0; i < 200 && !done(); i++) {
    // This database's sessions only: other suites share the server and wait for their own locks meanwhile.
    const { rows } = await observer.query<{ n: number }>(
      `select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
       where not l.granted and a.datname = current_database()`,
    );
    if (rows[0]!.n > 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return false;
}

/** Resolves once some session waits for a lock; a bounded wait. */
async function someoneWaits(): Promise<void> {
  if (!(await waitsBefore())) throw new Error("no session waited for a lock within 5 s");
}

/** Whether `id`'s webhook row is locked by someone now (a lock attempt that does not wait). */
async function locked(id: string): Promise<boolean> {
  await observer.query("begin");
  try {
    await observer.query("select 1 from webhook where id = $1 for update nowait", [id]);
    return false;
  } catch (error) {
    if ((error as { code?: string }).code === "55P03") return true;
    throw error;
  } finally {
    await observer.query("rollback");
  }
}

it("two workers recording one endpoint's connection failures at once count both", async () => {
  await dispatch("wd_1", "wh_a", "worker-1");
  // Worker 1's record of two failures, not yet committed when worker 2 records one.
  await other.query("begin");
  await other.query("update webhook set breaker_failures = breaker_failures + 2 where id = 'wh_a'");
  const second = recordResults(deps, "worker-1", [refused("wd_1", "wh_a")]);
  await someoneWaits();
  await other.query("commit");
  await second;

  const { rows } = await observer.query("select breaker_failures from webhook where id = 'wh_a'");
  expect(rows[0].breaker_failures).toBe(3);
});

it("the record statement locks the webhooks it changes in id order", async () => {
  await dispatch("wd_a", "wh_a", "worker-1");
  await dispatch("wd_z", "wh_z", "worker-1");
  await other.query("begin");
  await other.query("select 1 from webhook where id = 'wh_a' for update");
  const record = recordResults(deps, "worker-1", [refused("wd_z", "wh_z"), refused("wd_a", "wh_a")]);
  await someoneWaits();
  // Waiting for wh_a, it has not taken wh_z, the later one.
  expect(await locked("wh_z")).toBe(false);
  await other.query("commit");
  await record;
  const { rows } = await observer.query("select id, breaker_failures from webhook order by id");
  expect(rows).toEqual([
    { id: "wh_a", breaker_failures: 1 },
    { id: "wh_z", breaker_failures: 1 },
  ]);
});

it("a claim whose walk wraps around changes its webhooks in id order, after the walk", async () => {
  await dispatch("wd_a", "wh_a");
  await dispatch("wd_z", "wh_z");
  await other.query("begin");
  await other.query("select 1 from webhook where id = 'wh_a' for update");
  // After wh_m: the walk reaches wh_z, then wraps to wh_a; both are rate limited, so both rows change.
  const claimed = claim("worker-1", "wh_m");
  await someoneWaits();
  expect(await locked("wh_z")).toBe(false);
  await other.query("commit");
  const { dispatches } = await claimed;
  expect(dispatches.map((d) => d.id).sort()).toEqual(["wd_a", "wd_z"]);
  const { rows } = await observer.query("select id, rate_refilled_at is not null as spent from webhook order by id");
  expect(rows).toEqual([
    { id: "wh_a", spent: true },
    { id: "wh_z", spent: true },
  ]);
});

it("a record aborted by a deadlock is recorded as it was, not as the database's refusal", async () => {
  await dispatch("wd_1", "wh_a", "worker-1");
  // A claim taking over this open row (its lease ran out) holds it, then wants the webhook the record has locked.
  await other.query("begin");
  await other.query("set local deadlock_timeout = '10s'");
  await other.query("select 1 from webhook_dispatch_open where dispatch_id = 'wd_1' for update");
  const record = recordResults(deps, "worker-1", [refused("wd_1", "wh_a")]);
  await someoneWaits();
  // The record holds wh_a and waits for wd_1: this closes the cycle, and PostgreSQL aborts the record (the
  // session that waited first finds the deadlock first).
  await other.query("select 1 from webhook where id = 'wh_a' for update");
  await other.query("commit");
  await record;

  const { rows } = await observer.query(
    "select error_class, error_message from webhook_attempt where dispatch_id = 'wd_1'",
  );
  expect(rows).toEqual([{ error_class: "connection_refused", error_message: "connect ECONNREFUSED 127.0.0.1:9" }]);
  const hook = await observer.query("select breaker_failures from webhook where id = 'wh_a'");
  expect(hook.rows[0].breaker_failures).toBe(1);
});

it("the sweeper disables failing webhooks locking them in id order", async () => {
  // Both have failed for longer than the window (a day): failures before and after its start, no success.
  await observer.query("update webhook set status_changed_at = now() - interval '3 days'");
  await observer.query(`
    insert into webhook_dispatch (id, event_id, event_type, webhook_id, payload, status, attempt_count, created_at)
    select 'wd_' || w || '_' || n, 'evt_' || w || '_' || n, 'account.created', w, '{}', 'error', 1,
      now() - n * interval '1 day' - interval '1 hour'
    from unnest(array['wh_a', 'wh_z']) w, generate_series(0, 1) n
  `);
  await other.query("begin");
  await other.query("select 1 from webhook where id = 'wh_a' for update");
  const disabling = disableFailingWebhooks(database, {
    now: new Date(),
    windowMs: 24 * 3_600_000,
    reason: "failing for a day",
  });
  await someoneWaits();
  expect(await locked("wh_z")).toBe(false);
  await other.query("commit");
  expect((await disabling).sort()).toEqual(["wh_a", "wh_z"]);
});

it("neither the record statement nor the claim waits for an insert referencing the webhook, such as a fan-out's", async () => {
  await dispatch("wd_1", "wh_a", "worker-1");
  await dispatch("wd_2", "wh_z");
  // A fan-out not yet committed: its dispatch rows hold a key-share lock on their webhooks, beside their open rows.
  await other.query("begin");
  await other.query(
    `with made as (
       insert into webhook_dispatch (id, event_id, event_type, webhook_id, payload)
       values ('wd_fan_a', 'evt_fan_a', 'account.created', 'wh_a', '{}'),
              ('wd_fan_z', 'evt_fan_z', 'account.created', 'wh_z', '{}')
       returning id, webhook_id, next_attempt_at
     )
     insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at)
     select id, webhook_id, next_attempt_at from made`,
  );
  let recorded = false;
  const record = recordResults(deps, "worker-1", [refused("wd_1", "wh_a")]).then(() => (recorded = true));
  expect(await waitsBefore(() => recorded)).toBe(false);
  await record;
  let claimed = false;
  // After wh_m: the walk takes wh_z's due row (rate limited: its tokens change) and wh_a's new one is not due yet.
  const claiming = claim("worker-2", "wh_m").then((result) => ((claimed = true), result));
  expect(await waitsBefore(() => claimed)).toBe(false);
  expect((await claiming).dispatches.map((d) => d.id)).toEqual(["wd_2"]);
  await other.query("commit");
  const { rows } = await observer.query("select id, breaker_failures from webhook order by id");
  expect(rows).toEqual([
    { id: "wh_a", breaker_failures: 1 },
    { id: "wh_z", breaker_failures: 0 },
  ]);
});

it("a probe does not shut a breaker that a record closed while the claim walked", async () => {
  await observer.query("update webhook set rate_limit = null, breaker_open_until = now() - interval '1 second'");
  await dispatch("wd_a", "wh_a");
  // A record statement closing wh_a's breaker (its endpoint answered), not yet committed when the claim writes.
  await other.query("begin");
  await other.query("update webhook set breaker_open_until = null, breaker_failures = 0 where id = 'wh_a'");
  const claimed = claim("worker-1");
  await someoneWaits();
  await other.query("commit");
  const { dispatches } = await claimed;
  // The claim saw an ended breaker and sent its one probe; the breaker stays as the record left it: closed.
  expect(dispatches.map((d) => [d.id, d.probe])).toEqual([["wd_a", true]]);
  const { rows } = await observer.query("select breaker_open_until from webhook where id = 'wh_a'");
  expect(rows[0].breaker_open_until).toBeNull();
});
