-- Placeholder in branch `dag` only, so that 000007 applies here (the runner
-- refuses gaps). The cron branch owns the real 000006: delete this file when
-- merging (the runner fails loudly on two files numbered 000006).
SELECT 1;
