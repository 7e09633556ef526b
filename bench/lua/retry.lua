-- retry.lua: the scripted EMQ.FAIL (docs/verbs.md §4.6): the token,
-- then the cap on attempts itself (not on failures, as the native verb does).
-- KEYS[1] emq:{q}:active   KEYS[2] emq:{q}:schedule   KEYS[3] emq:{q}:dead
-- KEYS[4] emq:{q}:job:<id>
-- ARGV[1] id   ARGV[2] token   ARGV[3] delay_ms   ARGV[4] max_attempts
-- ARGV[5] error text   ARGV[6] the prefix emq:{q}:
-- Reply: 'scheduled' or 'dead'.
local p = ARGV[6]
local att = redis.call('HGET', KEYS[4], 'attempts')
if not att then return redis.error_reply('EMQSTALE job gone') end
if att ~= ARGV[2] then
  return redis.error_reply('EMQSTALE retry token mismatch')
end
-- the flat bookkeeping of active (no lanes here)
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return redis.error_reply('EMQSTALE lease lost')
end
redis.call('HSET', KEYS[4], 'last_error', ARGV[5])
if tonumber(att) >= tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[4], 'state', 'dead')
  redis.call('ZADD', KEYS[3], 0, ARGV[1])
  redis.call('HINCRBY', p .. 'metrics:failed', 'count', 1)
  return 'dead'
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('HSET', KEYS[4], 'state', 'scheduled')
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 'scheduled'
