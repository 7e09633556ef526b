-- claim.lua: the scripted claim. It first moves due scheduled jobs (at most
-- 100) to pending, as EMQ.CLAIM does, then takes the lowest member of pending
-- (ZPOPMIN), adds 1 to attempts (the token), marks the row active and leases
-- it until now+lease_ms on the server clock (TIME).
-- KEYS[1] emq:{q}:pending    KEYS[2] emq:{q}:active    KEYS[3] emq:{q}:schedule
-- ARGV[1] the prefix emq:{q}:   ARGV[2] lease_ms
-- Reply: {} when nothing is claimable, else {{id, payload, token}}.
local p = ARGV[1]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 100)
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[3], id)
  redis.call('HSET', p .. 'job:' .. id, 'state', 'pending')
  redis.call('ZADD', KEYS[1], 0, id)
end
local top = redis.call('ZPOPMIN', KEYS[1])
if #top == 0 then
  return {}
end
local id = top[1]
local jk = p .. 'job:' .. id
local tok = redis.call('HINCRBY', jk, 'attempts', 1)
redis.call('HSET', jk, 'state', 'active')
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), id)
local payload = redis.call('HGET', jk, 'payload')
return {{id, payload, tostring(tok)}}
