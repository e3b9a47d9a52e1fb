-- 000005: placeholder in the `cron` branch only. The migration runner wants
-- files numbered 1..n without gaps, and 000005_execution.sql belongs to the
-- worker (execution) branch; at merge, take that branch's file instead of
-- this one (same name on purpose, so git reports the conflict).
SELECT 1;
