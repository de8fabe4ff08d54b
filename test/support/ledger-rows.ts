import { sql } from "drizzle-orm";
import type { Database } from "../../lib/db/client.ts";

/**
 * Inserts `count` dispatches of `webhookId` in `status`, created and (when
 * finished) completed `ageSeconds` ago, each with one attempt started then:
 * a ledger's history written in one statement, fast enough for 100,000 rows
 * (open ones with their open rows).
 * Event ids are `evt_<tag>_<n>`. Returns nothing; count what you need.
 */
export async function insertLedgerRows(
  database: Database,
  options: {
    webhookId: string;
    account: string | null;
    count: number;
    ageSeconds: number;
    status: string;
    tag: string;
  },
): Promise<void> {
  const { webhookId, account, count, ageSeconds, status, tag } = options;
  const finished = ["success", "exhausted", "skipped"].includes(status);
  await database.rows(sql`
    with made as (
      insert into webhook_dispatch (event_id, event_type, webhook_id, account, payload, status, attempt_count,
        next_attempt_at, created_at, updated_at, completed_at)
      select 'evt_' || ${tag} || '_' || n, 'payment-debt.created', ${webhookId}, ${account}::text,
        json_build_object('id', 'evt_' || ${tag} || '_' || n, 'type', 'payment-debt.created',
          'created', now(), 'livemode', true,
          'data', json_build_object('object', 'payment-debt', 'id', 'pd_' || ${tag} || '_' || n, 'account', ${account}::text))::text,
        ${status}, 1, now() - ${ageSeconds} * interval '1 second',
        now() - ${ageSeconds} * interval '1 second', now() - ${ageSeconds} * interval '1 second',
        case when ${finished} then now() - ${ageSeconds} * interval '1 second' end
      from generate_series(1, ${count}) as n
      returning id, webhook_id, status, next_attempt_at
    ),
    opened as (
      insert into webhook_dispatch_open (dispatch_id, webhook_id, next_attempt_at)
      select id, webhook_id, next_attempt_at from made where status in ('pending', 'error')
    )
    insert into webhook_attempt (dispatch_id, run, attempt, started_at, duration_ms, outcome, status_code, signature, worker)
    select id, 1, 1, now() - ${ageSeconds} * interval '1 second', 12, 'success', 200,
      '{"timestamp": 0, "scheme": "hooklane-v1", "signatures": 1}'::jsonb, 'history'
    from made
  `);
}
