-- Placeholder in branch `dag` only, so that 000007 applies here (the runner
-- refuses gaps). The execution branch owns the real 000005: delete this file
-- when merging (the runner fails loudly on two files numbered 000005).
SELECT 1;
