import { sql } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { silentLogger, type Logger } from "../../log/logger.ts";

export interface SubscriptionCache {
  /** Whether any webhook listens to `internal`. Loads on first use; afterwards at most every `ttlMs`. */
  has(internal: string): Promise<boolean>;
  /** Forces the next `has` to reload (this process just created or changed a webhook). */
  invalidate(): void;
  /** How many times the set was loaded from the database. */
  readonly loads: number;
}

/**
 * The in-memory set of synced, non-deprecated event types that have at
 * least one subscriber, refreshed at most every 30 s. Paused and disabled
 * webhooks count: their events are kept and delivered on re-enable. After the first load a stale
 * set is served while the refresh runs, so no request waits on it.
 */
export function createSubscriptionCache(
  database: Database,
  options: { ttlMs?: number; now?: () => number; logger?: Logger } = {},
): SubscriptionCache {
  const ttlMs = options.ttlMs ?? 30_000;
  const now = options.now ?? Date.now;
  const log = (options.logger ?? silentLogger).child({ component: "publish" });
  let internals: Set<string> | undefined;
  let expiresAt = 0;
  let mustWait = true;
  let loading: Promise<void> | undefined;
  let loads = 0;

  const load = () => {
    loading ??= (async () => {
      try {
        // A `*` webhook hears every type that is not deprecated; nobody hears a deprecated one.
        const rows = await database.rows<{ internal: string }>(sql`
          select t.internal from webhook_event_type t
          where not t.deprecated
            and exists (select 1 from webhook w where (w.events @> array[t.internal] or w.events @> array['*']) and w.deleted_at is null)
        `);
        loads++;
        internals = new Set(rows.map((row) => row.internal));
        expiresAt = now() + ttlMs;
        mustWait = false;
      } finally {
        loading = undefined;
      }
    })();
    return loading;
  };

  return {
    async has(internal) {
      if (mustWait || !internals) await load();
      else if (now() >= expiresAt)
        load().catch((error: unknown) => {
          if (!database.outage.report(error)) log.warn({ err: error }, "subscriber set refresh failed");
        });
      return internals!.has(internal);
    },
    invalidate() {
      mustWait = true;
    },
    get loads() {
      return loads;
    },
  };
}
