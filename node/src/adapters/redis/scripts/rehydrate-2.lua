--[[
  rehydrate-2: adds ids that Postgres says are SCHEDULED and due soon but
  that Redis has lost (a flush, a failed add at ingest). Idempotent: an id
  already due or claimed is left alone, so a second run adds nothing.

  KEYS[1] due       ZSET  member = task id, score = run_at
  KEYS[2] claimed   ZSET  member = "<run_at ms>:<task id>"
  ARGV    id1, runAt1, id2, runAt2, ... (<= 3000 pairs)

  Returns how many ids were added.
]]
local added = 0
for i = 1, #ARGV, 2 do
  local id, runAt = ARGV[i], ARGV[i + 1]
  if not redis.call('ZSCORE', KEYS[1], id) and not redis.call('ZSCORE', KEYS[2], runAt .. ':' .. id) then
    redis.call('ZADD', KEYS[1], runAt, id)
    added = added + 1
  end
end
return added
