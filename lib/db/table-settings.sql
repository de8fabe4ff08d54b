-- Storage settings of the lane's tables, applied by the migration that changes this file (npm run db:generate).
--
-- webhook_dispatch: rewritten in place by each attempt's record (heap-only: no index reads what it changes), where its
-- page has room for the new version: filled to 60 %, 92 % of the records were heap-only in bench/ledger-writes.ts
-- (59 % at 80 %, each of the others an entry in every index); analysed early, as a fan-out or a recovery adds many
-- rows at once.
-- webhook_dispatch_open: a row per open dispatch, inserted and deleted at the lane's pace: vacuumed often so its
-- index stays as small as what is open.
ALTER TABLE "webhook_dispatch" SET (fillfactor = 60, autovacuum_analyze_scale_factor = 0.01, autovacuum_analyze_threshold = 1000, autovacuum_vacuum_scale_factor = 0.05);
ALTER TABLE "webhook_dispatch_open" SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000);
