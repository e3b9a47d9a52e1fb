--[[
  return-expired-2: claims whose expiry has passed go back to due (the
  reconciler; and a new shard owner adopting its predecessor's claims).

  KEYS[1] due       ZSET  member = task id, score = run_at
  KEYS[2] claimed   ZSET  member = "<run_at ms>:<task id>", score = claim expiry
  ARGV[1] expired at or before (epoch ms), or "+inf" for every claim
  ARGV[2] limit (<= 3000)

  Returns how many claims were returned.
]]
local members = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for i = 1, #members do
  local sep = string.find(members[i], ':', 1, true)
  redis.call('ZADD', KEYS[1], string.sub(members[i], 1, sep - 1), string.sub(members[i], sep + 1))
end
if #members > 0 then redis.call('ZREM', KEYS[2], unpack(members)) end
return #members
