-- The claim query's plan depends on fresh statistics: a bulk insert (fan-out,
-- recovery) into webhook_dispatch must be analysed long before the default 10 %.
ALTER TABLE "webhook_dispatch" SET (autovacuum_analyze_scale_factor = 0.01, autovacuum_analyze_threshold = 1000, autovacuum_vacuum_scale_factor = 0.02);
