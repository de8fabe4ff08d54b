-- Leases are renewed by id (the primary key) and counted through webhook_dispatch_in_flight_idx (0013):
-- this index only cost every lease and record update one more index entry.
DROP INDEX "webhook_dispatch_leased_idx";