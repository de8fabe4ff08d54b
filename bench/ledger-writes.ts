// What the lane writes per delivery, read off PostgreSQL's write-ahead log: row versions (heap inserts, updates,
// heap-only updates, deletes, row locks) and index entries (B-tree leaf inserts), for events that arrive as route jobs
// and go to their webhooks through one lane worker (`npm run worker`'s command), on a throwaway cluster of its own
// so that nothing else writes meanwhile. The per-table counts come from pg_stat_user_tables, the rest from
// `pg_waldump --stats=record` over the drain. Counts, not timings: the machine's noise does not move them.
//
//   node bench/ledger-writes.ts [--events 5000] [--webhooks 1]
//
// `--webhooks N`: each event is heard by N webhooks of the benchmark account (a fan-out of N).
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { createPostgresCluster } from "../drill/postgres-cluster.ts";
import { createBenchDatabase } from "./bench-database.ts";
import { BENCH_ACCOUNT, BENCH_EVENT_TYPE } from "./bench-event-body.ts";
import { startWorker } from "./product-processes.ts";
import { forkRpc } from "./rpc.ts";
import type { SubscriberReady } from "./subscriber.ts";

const { values } = parseArgs({
  options: { events: { type: "string", default: "5000" }, webhooks: { type: "string", default: "1" } },
});
const events = Number(values.events);
const webhooks = Number(values.webhooks);

const cluster = await createPostgresCluster();
const subscriber = await forkRpc<SubscriberReady>("./subscriber.ts");
const secretKey = randomBytes(32).toString("base64url");
const db = await createBenchDatabase(cluster.url, secretKey, { asyncCommit: false });
try {
  await db.seedWebhooks(webhooks, `${subscriber.ready.url}/ledger-writes`, "account");
  // The events' resources, and their route messages as the publisher writes them (owner included).
  await db.database.rows(sql`
    insert into payment_debt (id, account, amount, currency)
    select 'pd_writes_' || n, ${BENCH_ACCOUNT}, 10, 'EUR' from generate_series(1, ${events}) n
  `);
  await db.database.rows(sql`
    insert into webhook_route_job (message)
    select jsonb_build_object('eventId', 'evt_writes_' || lpad(n::text, 8, '0'), 'type', ${BENCH_EVENT_TYPE}::text,
      'resourceId', 'pd_writes_' || n, 'occurredAt', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'livemode', false, 'account', ${BENCH_ACCOUNT}::text)
    from generate_series(1, ${events}) n
  `);
  await db.database.rows(sql`checkpoint`);
  const before = await tableCounts();
  const [{ lsn: start }] = (await db.database.rows<{ lsn: string }>(sql`select pg_current_wal_lsn()::text as lsn`)) as [
    { lsn: string },
  ];
  const logDir = mkdtempSync(join(tmpdir(), "hooklane-ledger-writes-"));
  const worker = await startWorker(
    {
      databaseUrl: db.url,
      secretKey,
      jwtSecret: secretKey,
      concurrency: 200,
      connections: 16,
      logDir,
      cpuProfile: false,
    },
    { name: "ledger-writes-worker", env: { WEBHOOK_ALLOWED_HOSTS: "127.0.0.1" } },
  );
  const deliveries = events * webhooks;
  const deadline = Date.now() + 600_000;
  while ((await db.delivered()) < deliveries) {
    if (Date.now() > deadline) throw new Error(`only ${await db.delivered()} of ${deliveries} delivered in 10 min`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await worker.stop();
  const [{ lsn: end }] = (await db.database.rows<{ lsn: string }>(sql`select pg_current_wal_lsn()::text as lsn`)) as [
    { lsn: string },
  ];
  const after = await tableCounts();

  const records = walRecords(start, end);
  const per = (n: number) => (n / deliveries).toFixed(2);
  console.log(
    `${deliveries} deliveries (${events} events × ${webhooks} webhook${webhooks > 1 ? "s" : ""}), one lane worker, ` +
      `WAL ${(walBytes(start, end) / deliveries).toFixed(0)} bytes a delivery`,
  );
  console.log("\nper delivery, from the WAL:");
  const heap = ["INSERT", "UPDATE", "HOT_UPDATE", "DELETE", "LOCK"].map((k) => records[`Heap/${k}`] ?? 0);
  const multi = records["Heap2/MULTI_INSERT"] ?? 0;
  console.log(
    `  row versions written ${per(heap[0]! + multi + heap[1]! + heap[2]!)} (inserts ${per(heap[0]! + multi)}, ` +
      `updates ${per(heap[1]!)}, heap-only updates ${per(heap[2]!)}), deletes ${per(heap[3]!)}, row locks ${per(heap[4]!)}`,
  );
  const leaf = records["Btree/INSERT_LEAF"] ?? 0;
  const upper = records["Btree/INSERT_UPPER"] ?? 0;
  const splits = (records["Btree/SPLIT_L"] ?? 0) + (records["Btree/SPLIT_R"] ?? 0);
  console.log(`  index entries ${per(leaf)} (and ${per(upper + splits)} inner entries and page splits)`);
  console.log(`  commits ${per(records["Transaction/COMMIT"] ?? 0)}`);
  console.log("\nper delivery, by table (pg_stat_user_tables): inserted / updated (heap-only) / deleted");
  for (const [table, now] of Object.entries(after)) {
    const was = before[table] ?? { ins: 0, upd: 0, hot: 0, del: 0 };
    const d = { ins: now.ins - was.ins, upd: now.upd - was.upd, hot: now.hot - was.hot, del: now.del - was.del };
    if (d.ins + d.upd + d.del === 0) continue;
    console.log(`  ${table.padEnd(24)} ${per(d.ins)} / ${per(d.upd)} (${per(d.hot)}) / ${per(d.del)}`);
  }
} finally {
  await db.drop();
  await subscriber.stop();
  await cluster.destroy();
}

async function tableCounts(): Promise<Record<string, { ins: number; upd: number; hot: number; del: number }>> {
  const rows = await db.database.rows<{ table: string; ins: string; upd: string; hot: string; del: string }>(sql`
    select relname as table, n_tup_ins as ins, n_tup_upd as upd, n_tup_hot_upd as hot, n_tup_del as del
    from pg_stat_user_tables order by relname
  `);
  return Object.fromEntries(
    rows.map((r) => [r.table, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del) }]),
  );
}

/** Records per `rmgr/type` between two LSNs, as `pg_waldump --stats=record` counts them. */
function walRecords(start: string, end: string): Record<string, number> {
  const output = waldump(["--stats=record", "-s", start, "-e", end]);
  const counts: Record<string, number> = {};
  for (const line of output.split("\n")) {
    const match = /^(\S+\/\S+)\s+(\d+)\s/.exec(line.trim());
    if (match) counts[match[1]!] = Number(match[2]);
  }
  return counts;
}

function walBytes(start: string, end: string): number {
  const [hi1, lo1] = start.split("/").map((h) => parseInt(h, 16)) as [number, number];
  const [hi2, lo2] = end.split("/").map((h) => parseInt(h, 16)) as [number, number];
  return (hi2 - hi1) * 2 ** 32 + (lo2 - lo1);
}

function waldump(args: string[]): string {
  const bin = join(cluster.binDir, "pg_waldump");
  const walDir = join(cluster.dataDir, "pg_wal");
  const command =
    process.getuid?.() === 0
      ? ["runuser", ["-u", "postgres", "--", bin, "-p", walDir, ...args]]
      : [bin, ["-p", walDir, ...args]];
  return execFileSync(command[0] as string, command[1] as string[], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
}
