-- enqueue.lua: the scripted EMQ.ENQUEUE (verbs.md section 4), same keyspace.
-- KEYS[1] emq:{q}:job:<id>   KEYS[2] emq:{q}:pending
-- ARGV[1] id                 ARGV[2] payload
-- Reply: the id, or nil when the row already exists (idempotent admission).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return false
end
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0, 'payload', ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return ARGV[1]
