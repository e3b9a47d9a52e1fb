--[[
  give-back-2: a dispatcher returns claims it will not publish (shutdown,
  lost lease, stale fence) to due, so that the shard's owner claims them again.

  KEYS[1] due       ZSET  member = task id, score = run_at
  KEYS[2] claimed   ZSET  member = "<run_at ms>:<task id>"
  ARGV    claimed members ("<run_at ms>:<task id>"), any number (<= 3000)

  Returns how many members were still claimed (and so were returned).
  A member already gone (published and acked, or returned) is skipped.
]]
local returned = 0
for i = 1, #ARGV do
  if redis.call('ZREM', KEYS[2], ARGV[i]) == 1 then
    local sep = string.find(ARGV[i], ':', 1, true)
    redis.call('ZADD', KEYS[1], string.sub(ARGV[i], 1, sep - 1), string.sub(ARGV[i], sep + 1))
    returned = returned + 1
  end
end
return returned
