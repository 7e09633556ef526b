-- complete.lua: the scripted EMQ.COMPLETE: the token guard, then ZREM active,
-- DEL row, HINCRBY metrics:completed count 1.
-- KEYS[1] emq:{q}:active   KEYS[2] emq:{q}:job:<id>   KEYS[3] emq:{q}:metrics:completed
-- ARGV[1] id               ARGV[2] token
-- Reply: 1, or an EMQSTALE/EMQSTATE/EMQLANE error with nothing written.
local r = redis.call('HMGET', KEYS[2], 'attempts', 'group', 'state')
if not r[1] then
  return redis.error_reply('EMQSTALE job gone')
end
if r[1] ~= ARGV[2] then
  return redis.error_reply('EMQSTALE complete token mismatch')
end
if r[2] then
  return redis.error_reply('EMQLANE lane rows are not served natively')
end
if r[3] == 'dead' then
  return redis.error_reply('EMQSTATE job is dead')
end
-- ZREM writes nothing when the id is not a member: the last guard.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return redis.error_reply('EMQSTALE lease lost')
end
redis.call('DEL', KEYS[2])
redis.call('HINCRBY', KEYS[3], 'count', 1)
return 1
