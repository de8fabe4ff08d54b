import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import type { TestMode } from "../../db/schema.ts";
import { notifyListenSession } from "../../db/sql/listen-wake.ts";
import { recordResults, type RecordDeps } from "../outbound/webhook-out-deliver.consumer.ts";
import { attemptResult, type AttemptResult, type RetryDeps } from "../outbound/webhook-out-deliver.handler.ts";
import type { ListenReport } from "./listen-messages.ts";
import { listenWorkerPrefix } from "./listen-session.ts";

export interface ListenReportDeps extends RecordDeps {
  retry: RetryDeps;
}

/**
 * Records what a listen session's CLI reports about the deliveries pushed
 * to it, on any API instance: each report becomes the attempt's record, with
 * the local receiver's status, and RETRY decides what follows as for any
 * webhook (a 410 from a local receiver is an ordinary failure: it never ends
 * the session). A report counts only while its dispatch belongs to this
 * session, is still leased under the report's lease (a stream of this
 * session) and awaits that very attempt; any other is stale and ignored.
 * Returns the dispatch ids recorded and those found stale.
 */
export async function recordListenReports(
  deps: ListenReportDeps,
  webhookId: string,
  reports: readonly ListenReport[],
): Promise<{ recorded: string[]; stale: string[] }> {
  const leased = await leasedDispatches(deps.database, webhookId, [...new Set(reports.map((r) => r.dispatch))]);
  const byLease = new Map<string, AttemptResult[]>();
  const recorded = new Set<string>();
  const stale: string[] = [];
  for (const report of reports) {
    const row = leased.get(report.dispatch);
    const current =
      row !== undefined &&
      !recorded.has(report.dispatch) &&
      report.lease.startsWith(listenWorkerPrefix(webhookId)) &&
      row.locked_by === report.lease &&
      row.attempt_count + 1 === report.attempt;
    if (!current) {
      stale.push(report.dispatch);
      continue;
    }
    recorded.add(report.dispatch);
    const result = attemptResult(
      deps.retry,
      {
        id: report.dispatch,
        webhookId,
        account: row.account,
        eventId: row.event_id,
        eventType: row.event_type,
        testMode: row.test_mode,
        attempt: report.attempt,
        probe: false,
      },
      {
        startedAt: new Date(report.started),
        durationMs: report.durationMs,
        outcome: report.outcome.kind === "failure" ? { ...report.outcome, gone: false } : report.outcome,
        signature: report.signature,
      },
    );
    byLease.set(report.lease, [...(byLease.get(report.lease) ?? []), result]);
  }
  for (const [lease, results] of byLease) await recordResults(deps, lease, results);
  // A slot is free and a retry may be due: the session's streams look again.
  if (recorded.size > 0) await notifyListenSession(deps.database, webhookId);
  return { recorded: [...recorded], stale };
}

interface LeasedRow {
  id: string;
  event_id: string;
  event_type: string;
  test_mode: TestMode | null;
  account: string | null;
  attempt_count: number;
  locked_by: string;
}

/** The session's dispatches among `ids` that some lease holds now. */
async function leasedDispatches(database: Database, webhookId: string, ids: string[]): Promise<Map<string, LeasedRow>> {
  if (ids.length === 0) return new Map();
  const rows = await database.rows<LeasedRow>(sql`
    select d.id, d.event_id, d.event_type, d.test_mode, d.account, d.attempt_count, o.locked_by
    from webhook_dispatch_open o join webhook_dispatch d on d.id = o.dispatch_id
    where o.webhook_id = ${webhookId}
      and o.dispatch_id in (select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))
      and o.locked_by is not null
  `);
  return new Map(rows.map((row) => [row.id, row]));
}
