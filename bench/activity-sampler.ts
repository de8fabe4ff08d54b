// What the database's sessions wait on while the lane drains: pg_stat_activity sampled at a fixed interval from
// the benchmark's own connection, counting the active sessions of the bench database and what each one waits on.
import { sql } from "drizzle-orm";
import type { Database } from "../lib/db/client.ts";

/** Session-samples: one active session seen in one sample counts once. */
export interface ActivitySummary {
  samples: number;
  /** Active sessions, summed over the samples. */
  active: number;
  /** Of those, waiting on a heavyweight lock (`wait_event_type = 'Lock'`). */
  lockWaiting: number;
  /** `<wait_event_type>:<wait_event>` (`CPU` when it waits on nothing) → session-samples. */
  waitEvents: Record<string, number>;
  /**
   * For the sessions waiting on a lock: `<lock type>[ on <table>] · <its statement> ← <the blocker's statement>`
   * (statements by their first words) → session-samples.
   */
  lockWaits: Record<string, number>;
}

export const emptyActivity = (): ActivitySummary => ({
  samples: 0,
  active: 0,
  lockWaiting: 0,
  waitEvents: {},
  lockWaits: {},
});

/** `into` plus `more`, as one summary. */
export function addActivity(into: ActivitySummary, more: ActivitySummary): ActivitySummary {
  const add = (a: Record<string, number>, b: Record<string, number>) => {
    const sum = { ...a };
    for (const [key, n] of Object.entries(b)) sum[key] = (sum[key] ?? 0) + n;
    return sum;
  };
  return {
    samples: into.samples + more.samples,
    active: into.active + more.active,
    lockWaiting: into.lockWaiting + more.lockWaiting,
    waitEvents: add(into.waitEvents, more.waitEvents),
    lockWaits: add(into.lockWaits, more.lockWaits),
  };
}

/** The `n` largest entries of `counts`, largest first. */
export function topEntries(counts: Record<string, number>, n: number): Array<[string, number]> {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .slice(0, n);
}

/**
 * Samples pg_stat_activity every `everyMs` (a sample that runs late is not made up for) until `stop()`, at most
 * `maxSamples` times. Counted: this database's active sessions other than the benchmark's own (its
 * `hooklane-bench` pool: the sampler, and the ledger counts the benchmark polls while it waits). A lock-waiting
 * session also names the table it waits on (`pg_locks`, read only for those), its statement and its blocker's.
 */
export function sampleActivity(
  database: Database,
  options: { everyMs: number; maxSamples: number },
): { stop(): Promise<ActivitySummary> } {
  const summary = emptyActivity();
  let stopped = false;
  let failed: unknown;
  const loop = (async () => {
    let next = performance.now();
    while (!stopped && summary.samples < options.maxSamples) {
      // A row-lock wait (transactionid) names its row's table through the tuple lock the waiter holds meanwhile.
      const rows = await database.rows<{ wait: string; lock: string | null }>(sql`
        select coalesce(a.wait_event_type || ':' || a.wait_event, 'CPU') as wait,
          case when a.wait_event_type = 'Lock' then
            a.wait_event || coalesce((
              select ' on ' || l.relation::regclass::text from pg_locks l
              where l.pid = a.pid and l.relation is not null and (not l.granted or l.locktype = 'tuple')
              order by l.granted limit 1
            ), '') || ' · ' || left(btrim(regexp_replace(a.query, '\\s+', ' ', 'g')), 80)
              || coalesce(' ← ' || (
                select left(btrim(regexp_replace(b.query, '\\s+', ' ', 'g')), 80) from pg_stat_activity b
                where b.pid = (pg_blocking_pids(a.pid))[1]
              ), '')
          end as lock
        from pg_stat_activity a
        where a.datname = current_database() and a.state = 'active'
          and a.pid <> pg_backend_pid() and a.application_name <> 'hooklane-bench'
      `);
      summary.samples++;
      for (const row of rows) {
        summary.active++;
        summary.waitEvents[row.wait] = (summary.waitEvents[row.wait] ?? 0) + 1;
        if (row.lock === null) continue;
        summary.lockWaiting++;
        summary.lockWaits[row.lock] = (summary.lockWaits[row.lock] ?? 0) + 1;
      }
      next += options.everyMs;
      const now = performance.now();
      if (next < now) next = now;
      await new Promise((resolve) => setTimeout(resolve, next - now));
    }
  })().catch((error: unknown) => {
    failed = error;
  });
  return {
    async stop() {
      stopped = true;
      await loop;
      if (failed) throw new Error("sampling pg_stat_activity failed", { cause: failed });
      return summary;
    },
  };
}
