-- hooklane_held_in_order: whether an open dispatch of a webhook with `resource` ordering must wait for an earlier
-- event of its resource.
--
-- Called by: nextDueDispatch (lib/db/sql/queued-dispatches.ts: the Vercel lane's turn at a webhook).
-- hooklane_claim_dispatches and dispatchState write the same test out, row by row (a call per row costs more than
-- the test); a change here is a change there.
--
-- Locks: none; reads the open rows of the webhook and resource on their index (webhook_dispatch_open_order_idx).
--
-- Steps:
--   1. An open row without an order key (the webhook does not order, or the row was started over) never waits.
--   2. Otherwise it waits while an open row of the same webhook and key with a lower sequence is there and has not
--      been failing for longer than the hold (seconds): one never attempted, in flight, or failing for less.
CREATE OR REPLACE FUNCTION hooklane_held_in_order(
  p_webhook text, p_key text, p_sequence bigint, p_hold_seconds integer, p_now timestamptz
) RETURNS boolean
LANGUAGE sql STABLE
AS $$
  SELECT p_key IS NOT NULL AND EXISTS (
    SELECT 1 FROM webhook_dispatch_open b
    WHERE b.webhook_id = p_webhook AND b.order_key = p_key AND b.sequence < p_sequence
      AND (b.failing_since IS NULL OR b.failing_since > p_now - p_hold_seconds * interval '1 second'))
$$;
