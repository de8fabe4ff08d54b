import { sql } from "drizzle-orm";
import type { Database } from "../client.ts";

/** Milliseconds until the next unleased dispatch of an active webhook is due (≤ 0: now), or null when none waits. */
export async function nextDispatchDueInMs(database: Database): Promise<number | null> {
  const [row] = await database.rows<{ ms: number | string | null }>(sql`
    select (extract(epoch from (d.next_attempt_at - now())) * 1000)::float8 as ms
    from webhook_dispatch d
    where d.status in ('pending', 'error')
      and (d.locked_until is null or d.locked_until < now())
      and exists (select 1 from webhook w where w.id = d.webhook_id and w.status = 'active')
    order by d.next_attempt_at
    limit 1
  `);
  return row?.ms == null ? null : Number(row.ms);
}
