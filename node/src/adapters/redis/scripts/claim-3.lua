--[[
  claim-3: atomically take the ids of one shard that are due soon.

  KEYS[1] due       ZSET  member = task id, score = run_at (epoch ms)
  KEYS[2] claimed   ZSET  member = "<run_at ms>:<task id>", score = claim expiry (epoch ms)
  KEYS[3] cancels   LIST  ids cancelled since the last claim
  ARGV[1] now (epoch ms, the caller's clock)
  ARGV[2] lookahead ms: claim ids with run_at <= now + lookahead
  ARGV[3] claim ttl ms: a claim not published or given back by then is
          returned to due by the reconciler
  ARGV[4] limit: most ids per call (keeps the script short; <= 3000)

  Returns { {id1, runAt1, id2, runAt2, ...}, {cancelled id, ...} }, ids in
  run_at order. The run_at travels inside the claimed member so that a
  claim can go back to due with its score.
]]
local now = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now + tonumber(ARGV[2]),
  'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[4]))
local claims = {}
if #due > 0 then
  local expiry = now + tonumber(ARGV[3])
  local ids, members = {}, {}
  for i = 1, #due, 2 do
    local id, runAt = due[i], due[i + 1]
    ids[#ids + 1] = id
    members[#members + 1] = expiry
    members[#members + 1] = runAt .. ':' .. id
    claims[#claims + 1] = id
    claims[#claims + 1] = runAt
  end
  redis.call('ZREM', KEYS[1], unpack(ids))
  redis.call('ZADD', KEYS[2], unpack(members))
end
local cancelled = redis.call('LRANGE', KEYS[3], 0, -1)
if #cancelled > 0 then redis.call('DEL', KEYS[3]) end
return { claims, cancelled }
