-- hooklane_latency_bucket: an attempt's duration bucket in the health rollups' geometric histogram.
--
-- Called by: hooklane_record_attempts (webhook_health_hour's bucket); LATENCY_BUCKETS
-- (lib/db/sql/latency-histogram.ts) reads the buckets back with the same ratio, which a test holds them to.
--
-- Locks: none.
--
-- Steps: bucket 0 holds attempts under 1 ms; bucket n ≥ 1 those from 1.15^(n−1) ms (0.13976… is ln 1.15), each 15 %
-- wider than the one before, up to bucket 79 (about 60 s and beyond).
CREATE OR REPLACE FUNCTION hooklane_latency_bucket(p_ms integer) RETURNS integer
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE WHEN p_ms < 1 THEN 0 ELSE least(79, floor(ln(p_ms::float8) / 0.13976194237515863::float8)::int + 1) END
$$;
