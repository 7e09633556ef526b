-- sweep_stalled.lua: the scripted EMQ.STALLED.CHECK (docs/verbs.md §4.11), flat rows only.
-- Every expired member is counted: a scripted lease has no epoch to read.
-- KEYS[1] emq:{q}:active   KEYS[2] emq:{q}:pending   KEYS[3] emq:{q}:dead
-- ARGV[1] the prefix emq:{q}:   ARGV[2] max_stalled   ARGV[3] limit
-- Reply: {recovered_ids, dead_ids}.
local p = ARGV[1]
local maxst = tonumber(ARGV[2])
local lim = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local exp = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, lim)
local recovered = {}
local dead = {}
for _, id in ipairs(exp) do
  redis.call('ZREM', KEYS[1], id)
  local jk = p .. 'job:' .. id
  local g = redis.call('HGET', jk, 'group')
  local st = redis.call('HINCRBY', jk, 'stalled', 1)
  -- (a lane row would also give back its gactive slot; the benchmark has none)
  if st >= maxst then
    redis.call('HSET', jk, 'state', 'dead')
    redis.call('HSET', jk, 'last_error', 'stalled')
    redis.call('ZADD', KEYS[3], 0, id)
    redis.call('HINCRBY', p .. 'metrics:failed', 'count', 1)
    table.insert(dead, id)
  else
    redis.call('ZADD', KEYS[2], 0, id)
    redis.call('HSET', jk, 'state', 'pending')
    table.insert(recovered, id)
  end
end
return {recovered, dead}
