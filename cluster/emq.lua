#!lua name=emq
-- emq: the EMQ.* job verbs as a Valkey/Redis 7+ FUNCTION library, for a
-- Valkey or Redis Cluster (docs/cluster.md). One function per verb, named
-- after it (EMQ.CLAIM -> emq_claim), called with the queue name as the one
-- declared key and the verb's other arguments after it:
--
--   FCALL emq_claim 1 <queue> <lease_ms> [COUNT count] [BLOCK block_ms]
--
-- Arguments, replies, refusal texts and the order of the checks are those of
-- emqd's native verbs (docs/verbs.md): every argument is validated before any
-- key is read; then every key the verb needs is read and judged; a refusal
-- replies with the error having written nothing; only then are the writes
-- made. Every key a call touches is emq:{<queue>}:..., in the slot of the
-- declared key <queue>, so a call never crosses slots.
--
-- Where emqd depends on being the server (docs/cluster.md §2; the
-- differences that remain: §3):
--   * the clock is the node's TIME, read once per call;
--   * the lease epoch is the node's run_id (INFO server), which changes when
--     the process restarts and on a failover, so a lease stamped by an
--     earlier process is exempt from the stall count, as natively;
--   * minted ids come from a per-queue mint key emq:{<queue>}:mint (field
--     last), not from the global {emq}:mint (another slot);
--   * a function cannot block: EMQ.CLAIM's BLOCK is validated, then the call
--     answers at once, as the native verb does inside MULTI (the Go client
--     polls: docs/cluster.md §2).
--   * lanes (docs/verbs.md §4.26, docs/cluster.md §9) are the native ones,
--     block for block; their settings are Lua numbers, exact to 2^53-1.
--
-- Numbers: Lua numbers are doubles, so the 64-bit counters HINCRBY keeps
-- (attempts, failures, stalled, metrics count) are judged here as decimal
-- strings, exactly; only integers in replies above 2^53 lose precision.

-- The test loader (cluster.Load with cluster.DebugClock) sets this to true:
-- emq_debug then moves this node's clock for tests. Never true in production.
local DEBUG_CLOCK = false

-- ---------------------------------------------------------------------------
-- Texts (docs/verbs.md §2.8, §2.9 and §4)

local E_WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local E_NOT_INT = 'ERR value is not an integer or out of range'
local E_SYNTAX = 'ERR syntax error'
local E_QUEUE = 'ERR invalid queue name'
local E_KIND = 'EMQKIND job id must be JOB followed by 11 characters from 0-9A-Za-z'
local E_GONE = 'EMQSTALE job gone'
local E_LEASE_LOST = 'EMQSTALE lease lost'
local E_LANE = 'EMQLANE lane rows are not served natively'
local E_DEAD = 'EMQSTATE job is dead'
local E_NOT_DEAD = 'EMQSTATE job is not dead'
local E_ACTIVE = 'EMQSTATE job is active'
local E_COMPLETED = 'EMQSTATE job is completed'
local E_HASH_NOT_INT = 'ERR hash value is not an integer'
local E_OVERFLOW = 'ERR increment or decrement would overflow'
local E_EXHAUSTED = 'ERR job id space exhausted'
local E_ONE_KEY = 'ERR emq functions take exactly one key, the queue name'
local E_DEBUG_OFF = 'ERR EMQ.DEBUG command not allowed. If the enable-debug-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.'

local function err(text)
  return redis.error_reply(text)
end

local function e_arity(name)
  return 'ERR wrong number of arguments for \'' .. name .. '\' command'
end

-- ---------------------------------------------------------------------------
-- 64-bit integers as canonical decimal strings (Valkey's string2ll)

local LLMAX = '9223372036854775807'
local LLMIN_ABS = '9223372036854775808'

-- bytes_lt compares two strings as bytes (Lua's < follows the locale).
local function bytes_lt(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return #a < #b
end

-- dcmp compares two digit strings without leading zeros: -1, 0 or 1.
local function dcmp(a, b)
  if #a ~= #b then
    return #a < #b and -1 or 1
  end
  if a == b then
    return 0
  end
  return bytes_lt(a, b) and -1 or 1
end

-- ll returns s when Valkey's string2ll accepts it (then s is canonical:
-- no sign but '-', no leading zero, within int64), else nil.
local function ll(s)
  if s == '0' then
    return s
  end
  local neg = string.byte(s, 1) == 45
  local d = neg and string.sub(s, 2) or s
  if not string.find(d, '^[1-9][0-9]*$') or #d > 19 then
    return nil
  end
  if #d == 19 then
    local lim = neg and LLMIN_ABS or LLMAX
    if dcmp(d, lim) > 0 then
      return nil
    end
  end
  return s
end

-- dadd adds two digit strings.
local function dadd(a, b)
  local out, carry = {}, 0
  local i, j = #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local x = i > 0 and string.byte(a, i) - 48 or 0
    local y = j > 0 and string.byte(b, j) - 48 or 0
    local s = x + y + carry
    carry = s >= 10 and 1 or 0
    out[#out + 1] = string.char(48 + s % 10)
    i, j = i - 1, j - 1
  end
  return string.reverse(table.concat(out))
end

-- dsub subtracts digit strings, a >= b.
local function dsub(a, b)
  local out, borrow = {}, 0
  local i, j = #a, #b
  while i > 0 do
    local x = string.byte(a, i) - 48 - borrow
    local y = j > 0 and string.byte(b, j) - 48 or 0
    if x < y then
      x, borrow = x + 10, 1
    else
      borrow = 0
    end
    out[#out + 1] = string.char(48 + x - y)
    i, j = i - 1, j - 1
  end
  local r = string.gsub(string.reverse(table.concat(out)), '^0+', '')
  if r == '' then
    return '0'
  end
  return r
end

-- cmp_ll compares two canonical int64 strings: -1, 0 or 1. Below 2^53
-- (at most 15 digits) Lua numbers compare exactly.
local function cmp_ll(a, b)
  if #a <= 15 and #b <= 15 then
    local x, y = tonumber(a), tonumber(b)
    if x == y then
      return 0
    end
    return x < y and -1 or 1
  end
  local na, nb = string.byte(a, 1) == 45, string.byte(b, 1) == 45
  if na ~= nb then
    return na and -1 or 1
  end
  if na then
    return dcmp(string.sub(b, 2), string.sub(a, 2))
  end
  return dcmp(a, b)
end

-- add_ll adds n (a non-negative Lua integer below 2^53) to the canonical
-- int64 string s; nil when the sum leaves int64 (HINCRBY's overflow).
local function add_ll(s, n)
  if #s <= 15 and n < 1e15 then
    return string.format('%d', tonumber(s) + n) -- exact below 2^53
  end
  local ns = string.format('%d', n)
  if string.byte(s, 1) ~= 45 then
    local r = dadd(s, ns)
    if dcmp(r, LLMAX) > 0 then
      return nil
    end
    return r
  end
  local m = string.sub(s, 2)
  if dcmp(m, ns) > 0 then
    return '-' .. dsub(m, ns)
  end
  return dsub(ns, m)
end

-- next_count is HINCRBY's rule (docs/verbs.md §2.5) for a stored counter
-- v (false: absent, counts as 0) incremented by n: the new value as a
-- string, or nil and the refusal text.
local function next_count(v, n)
  if not v then
    return string.format('%d', n)
  end
  if not ll(v) then
    return nil, E_HASH_NOT_INT
  end
  local r = add_ll(v, n)
  if not r then
    return nil, E_OVERFLOW
  end
  return r
end

-- int_arg parses a numeric argument (docs/verbs.md §2.8): min is 0 (may
-- be zero) or 1 (positive). Returns the canonical string, or nil and the
-- refusal text.
local function int_arg(s, min, name)
  if not ll(s) then
    return nil, E_NOT_INT
  end
  if string.byte(s, 1) == 45 or (min == 1 and s == '0') then
    if min == 1 then
      return nil, 'ERR ' .. name .. ' must be a positive integer'
    end
    return nil, 'ERR ' .. name .. ' must be a non-negative integer'
  end
  return s
end

-- ---------------------------------------------------------------------------
-- Time, scores, the lease epoch

-- MAX_SCORE is 2^53-1 ms: later times are saturated to it, so a score reads
-- back exactly (docs/verbs.md §2.12).
local MAX_SCORE = 9007199254740991

local clock_pin, clock_offset = nil, 0 -- the test clock (DEBUG_CLOCK only)

-- now_ms reads the node's clock: TIME in Unix ms.
local function now_ms()
  if clock_pin then
    return clock_pin
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + clock_offset
end

-- add_ms is now+d saturated at MAX_SCORE (d >= 0).
local function add_ms(now, d)
  if d > 0 and now > MAX_SCORE - d then
    return MAX_SCORE
  end
  return math.min(now + d, MAX_SCORE)
end

local function score_str(x)
  return string.format('%d', x)
end

local run_id_cache = nil

-- run_id is this node's run_id (INFO server), the lease epoch. It is fixed
-- for the life of the process, as is this Lua state, so it is read once.
local function run_id()
  if not run_id_cache then
    run_id_cache = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  end
  return run_id_cache
end

-- ERROR_CAP_AT_LIMIT: while used memory is above maxmemory, emq_fail
-- (allow-oom, so a full queue drains) stores at most this many bytes of its
-- error in last_error, as emqd's EMQ.FAIL (docs/verbs.md §2.14).
local ERROR_CAP_AT_LIMIT = 256

-- at_memory_limit reports used_memory above a maxmemory that is set, as
-- INFO memory shows them (read only for an error longer than the cap).
local function at_memory_limit()
  local info = redis.call('INFO', 'memory')
  local max = tonumber(string.match(info, '\nmaxmemory:(%d+)'))
  local used = tonumber(string.match(info, '\nused_memory:(%d+)'))
  return max ~= nil and max > 0 and used ~= nil and used > max
end

-- stored_error is the error emq_fail stores: all of it, or its first
-- ERROR_CAP_AT_LIMIT bytes when it is longer and memory is at the limit.
local function stored_error(e)
  if #e > ERROR_CAP_AT_LIMIT and at_memory_limit() then
    return string.sub(e, 1, ERROR_CAP_AT_LIMIT)
  end
  return e
end

-- format_ms prints a score as EMQ.JOB does (docs/verbs.md §4.17), Valkey's
-- d2string: 'inf', '-inf', '0', '-0'; an integral score within 2^62 in
-- decimal; else the shortest digits that read back (fpconv_dtoa's Grisu2
-- finds the same digits but for about 0.14% of doubles: docs/cluster.md
-- §3 "non-integral score digits"), laid out as fpconv_dtoa's
-- emit_digits: plain up to 7 zeros past the digits or 6 before them,
-- else d.ddde+X ('1.5', '0.000025', '1e+20', '5e-324').
local function format_ms(x)
  if x == math.huge then
    return 'inf'
  elseif x == -math.huge then
    return '-inf'
  elseif x ~= x then
    return 'nan'
  elseif x == 0 then
    if 1 / x < 0 then
      return '-0'
    end
    return '0'
  elseif x == math.floor(x) and math.abs(x) <= 4611686018427387904 then
    return string.format('%d', x)
  end
  local sign, a = '', x
  if x < 0 then
    sign, a = '-', -x
  end
  local s
  for p = 0, 16 do
    s = string.format('%.' .. p .. 'e', a)
    if tonumber(s) == a then
      break
    end
  end
  local lead, rest, e10 = string.match(s, '^(%d)%.?(%d*)e([-+]%d+)$')
  local d = string.gsub(lead .. rest, '0+$', '')
  local nd = #d
  local k = tonumber(e10) - (nd - 1) -- the value is d * 10^k
  local e = math.abs(k + nd - 1)
  if k >= 0 and e < nd + 7 then
    return sign .. d .. string.rep('0', k)
  end
  if k < 0 and (k > -7 or e < 4) then
    local offset = nd + k
    if offset <= 0 then
      return sign .. '0.' .. string.rep('0', -offset) .. d
    end
    return sign .. string.sub(d, 1, offset) .. '.' .. string.sub(d, offset + 1)
  end
  local out = sign .. string.sub(d, 1, 1)
  if nd > 1 then
    out = out .. '.' .. string.sub(d, 2)
  end
  if k + nd - 1 < 0 then
    return out .. 'e-' .. e
  end
  return out .. 'e+' .. e
end

-- ---------------------------------------------------------------------------
-- Names: queues, ids, keys (docs/verbs.md §1.1, §1.2, §1.4)

local function valid_queue(q)
  return #q >= 1 and #q <= 128 and not string.find(q, '[^A-Za-z0-9._%-]') and q ~= 'emq'
end

local function valid_id(id)
  return #id == 14 and string.sub(id, 1, 3) == 'JOB' and not string.find(id, '[^0-9A-Za-z]', 4)
end

local B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
local MAX_ID = 'JOBAzL8n0Y58m7' -- the id of 2^63-1, the last mintable number

local function b62val(c)
  if c <= 57 then
    return c - 48
  elseif c <= 90 then
    return c - 55
  end
  return c - 61
end

-- enc62 is the minted id of n (0 <= n < 2^53): base 62 at fixed width, so
-- byte order is mint order.
local function enc62(n)
  local t = {}
  for i = 11, 1, -1 do
    local d = n % 62
    t[i] = string.sub(B62, d + 1, d + 1)
    n = (n - d) / 62
  end
  return 'JOB' .. table.concat(t)
end

-- inc62 is the id after id (a valid id below MAX_ID).
local function inc62(id)
  local d = { string.byte(id, 4, 14) }
  local i = 11
  while true do
    local v = b62val(d[i]) + 1
    if v < 62 then
      d[i] = string.byte(B62, v + 1)
      break
    end
    d[i] = 48
    i = i - 1
  end
  return 'JOB' .. string.char(unpack(d))
end

-- keys returns the key names of queue q (a valid name). The tables of
-- recently used queues are kept, so a call does not build ten strings;
-- once 4096 are kept the cache starts again.
local key_cache, key_cache_n = {}, 0

local function keys(q)
  local k = key_cache[q]
  if k then
    return k
  end
  local p = 'emq:{' .. q .. '}:'
  k = {
    name = q,
    pending = p .. 'pending',
    active = p .. 'active',
    schedule = p .. 'schedule',
    dead = p .. 'dead',
    completed = p .. 'metrics:completed',
    failed = p .. 'metrics:failed',
    meta = p .. 'meta',
    mint = p .. 'mint',
    done = p .. 'completed',
    events = p .. 'events',
    job = p .. 'job:',
    sched = p .. 'sched',
    schedp = p .. 'sched:',
    waiting = p .. 'waiting',
    flow = p .. 'flow:',
    lanep = p .. 'lane:',
    lanes = p .. 'lanes',
    lanes_limited = p .. 'lanes:limited',
    lanes_known = p .. 'lanes:known',
  }
  if key_cache_n >= 4096 then
    key_cache, key_cache_n = {}, 0
  end
  key_cache[q] = k
  key_cache_n = key_cache_n + 1
  return k
end

-- event publishes one transition of job id on the queue's channel
-- (docs/verbs.md §1.6): "<event> <id> 0". The library uses SPUBLISH, so the
-- message stays within the queue's shard (a cluster's PUBLISH goes to
-- every node): subscribers SSUBSCRIBE emq:{q}:events (docs/cluster.md,
-- "events"). A cluster has one database, 0.
local function event(k, ev, id)
  redis.call('SPUBLISH', k.events, ev .. ' ' .. id .. ' 0')
end

-- ---------------------------------------------------------------------------
-- The read pass (docs/verbs.md §2.2): reads return plain values; a key of
-- another type reads as WRONG.

local ABSENT, OK, WRONG = 0, 1, 2

local ROW_FIELDS = { 'state', 'attempts', 'failures', 'stalled', 'lease_epoch', 'payload', 'group', 'priority', 'parent',
  'children', 'lane', 'lane_slot' }

-- read_row reads a job row: {kind, state, attempts, failures, stalled,
-- lease_epoch, payload, lane, priority, parent, children, lane_name,
-- lane_slot}; absent fields are false. `lane` is the seed's lane-row mark
-- (the field `group`, refused: EMQLANE); `lane_name` is emqd's own lane
-- field `lane` (docs/verbs.md §4.26), `lane_slot` whether the row holds a
-- MAX_ACTIVE slot.
local function read_row(key)
  local r = redis.pcall('HMGET', key, unpack(ROW_FIELDS))
  if r.err then
    return { kind = WRONG }
  end
  local row = {
    kind = OK,
    state = r[1],
    attempts = r[2],
    failures = r[3],
    stalled = r[4],
    lease_epoch = r[5],
    payload = r[6],
    lane = r[7] and true or false,
    priority = r[8],
    parent = r[9],
    children = r[10] and true or false,
    lane_name = r[11],
    lane_slot = r[12] and true or false,
  }
  if not (r[1] or r[2] or r[3] or r[4] or r[5] or r[6] or r[7] or r[8] or r[9] or r[10] or r[11] or r[12]) then
    if redis.call('EXISTS', key) == 0 then
      row.kind = ABSENT
    end
  end
  return row
end

-- hash_kind is ABSENT, OK (a hash) or WRONG.
local function hash_kind(key)
  local t = redis.call('TYPE', key).ok
  if t == 'none' then
    return ABSENT
  elseif t == 'hash' then
    return OK
  end
  return WRONG
end

-- zset_kind is ABSENT, OK (a sorted set) or WRONG.
local function zset_kind(key)
  local n = redis.pcall('ZCARD', key)
  if type(n) == 'table' then
    return WRONG
  end
  return n == 0 and ABSENT or OK
end

-- Seam 1, into pending (docs/verbs.md §1.3): every verb that puts a job
-- into pending scores it with the row's priority (absent: 0).
local MAX_PRIORITY = 9007199254740991
local E_PRIORITY = 'ERR priority must be an integer between -9007199254740991 and 9007199254740991'

-- priority_arg parses a PRIORITY argument (nil and the error when bad).
local function priority_arg(v)
  if not ll(v) then
    return nil, E_NOT_INT
  end
  local n = tonumber(v)
  if n < -MAX_PRIORITY or n > MAX_PRIORITY then
    return nil, E_PRIORITY
  end
  return n
end

-- row_priority is a row's priority as a number (0 when absent), or nil
-- when the stored value is not an integer within the range (a bad row).
local function row_priority(row)
  local v = row and row.priority
  if not v then
    return 0
  end
  if not ll(v) then
    return nil
  end
  local n = tonumber(v)
  if n < -MAX_PRIORITY or n > MAX_PRIORITY then
    return nil
  end
  return n
end

-- member reads id's score in the sorted set key: kind, in, score.
local function member(key, id)
  local s = redis.pcall('ZSCORE', key, id)
  if type(s) == 'table' and s.err then
    return WRONG, false, nil
  end
  if not s then
    return OK, false, nil
  end
  return OK, true, tonumber(s)
end

-- read_field reads one hash field: kind, value (false when absent).
local function read_field(key, field)
  local v = redis.pcall('HGET', key, field)
  if type(v) == 'table' and v.err then
    return WRONG, false
  end
  return OK, v
end

-- ---------------------------------------------------------------------------
-- Lanes (docs/verbs.md §4.26), block for block as internal/verbs/lanes.go: a
-- queue's pending work split into named lanes, served by one weighted fair
-- selection (stride scheduling), each lane with an optional MAX_ACTIVE and
-- RATE. The plain pending set is the default lane. Every lane key carries
-- the queue's tag {q}, so a queue's lanes are in the slot of the call.
--
-- One lane state `lt` per call (laneTx): read in the read pass
-- (lanes_read, lt_lane), changed by the seams as the verb judges
-- (lane_into: seam 1, "into pending"; lane_leaves: seam 2, "leaves
-- active"; lane_leaves_pending: REMOVE), and turned into its writes by
-- lanes_plan before the verb's first write (so every read sees the keyspace
-- as it stood before the call, as the native plan does); lanes_apply writes
-- them after the verb's own writes. A refusal writes nothing.

local DEFAULT_LANE = 'default'
local MAX_LANE_WEIGHT = 1000
-- LANE_STRIDE1 is a weight-1 lane's stride: a lane of weight w advances its
-- pass by floor(2^20 / w) per job (§4.26.2).
local LANE_STRIDE1 = 1048576
local MAX_PASS = 9223372036854774784 -- the largest double below 2^63
local E_LANE_NAME = 'ERR invalid lane name'
local E_LANE_WEIGHT = 'ERR weight must be an integer between 1 and 1000'

-- valid_lane: the queue-name alphabet, 1 to 128 bytes (§4.26.1).
local function valid_lane(n)
  return #n >= 1 and #n <= 128 and not string.find(n, '[^A-Za-z0-9._%-]')
end

-- lane_of is a row's lane (the default lane without a `lane` field).
local function lane_of(row)
  local n = row and row.lane_name
  if not n or n == '' then
    return DEFAULT_LANE
  end
  return n
end

local function lane_configured(ls)
  return ls.weight ~= 1 or ls.max_active ~= 0 or ls.rate_count ~= 0 or ls.paused
end

local function lane_stride(ls)
  local w = ls.weight
  if w < 1 then
    w = 1
  end
  return math.floor(LANE_STRIDE1 / w)
end

-- full: at MAX_ACTIVE; limited: out of rate tokens now (§4.26.3).
local function lane_full(ls)
  return ls.max_active > 0 and ls.active >= ls.max_active
end

local function lane_limited(ls)
  return ls.rate_count > 0 and ls.window >= ls.rate_count
end

local function lane_eligible(ls)
  return ls.pend > 0 and not ls.paused and not lane_full(ls) and not lane_limited(ls)
end

-- lanes_read reads queue k's lane state at now (readLanes): the registry
-- (lanes:known; absent = the queue has no lanes and every verb behaves as
-- before lanes existed), the selection sets' types and meta's lane_vt.
local function lanes_read(k, now)
  local lt = { k = k, now = now, on = false, lanes = {}, order = {}, vt = 0, plain = 0, known_n = 0, zi = 0 }
  local n = redis.pcall('ZCARD', k.lanes_known)
  if type(n) == 'table' then
    return nil, E_WRONGTYPE
  end
  lt.on = n > 0
  lt.known_n = n
  if not lt.on then
    return lt
  end
  if zset_kind(k.lanes) == WRONG or zset_kind(k.lanes_limited) == WRONG then
    return nil, E_WRONGTYPE
  end
  local mk, v = read_field(k.meta, 'lane_vt')
  if mk == WRONG then
    return nil, E_WRONGTYPE
  end
  if v then
    if not ll(v) then
      return nil, E_HASH_NOT_INT
    end
    lt.vt = tonumber(v)
  end
  return lt
end

local LANE_INT_FIELDS = { weight = true, max_active = true, rate_count = true, rate_per_ms = true, paused = true, active = true,
  pass = true }

-- lane_spent reads ls's rate log against its window (per_ms): the members
-- that left it (to drop), how many are in (now - per_ms, now], the oldest.
local function lane_spent(lt, ls)
  ls.expired, ls.window, ls.oldest = {}, 0, 0
  if ls.spent_len == 0 then
    return
  end
  local edge = score_str(lt.now)
  if ls.rate_per > 0 then
    edge = score_str(lt.now - ls.rate_per)
  end
  if ls.rate_count == 0 then
    edge = '+inf' -- no rate: the whole log is garbage
  end
  ls.expired = redis.call('ZRANGEBYSCORE', ls.skey, '-inf', edge)
  ls.window = ls.spent_len - #ls.expired
  if ls.window > 0 then
    ls.oldest = tonumber(redis.call('ZRANGE', ls.skey, #ls.expired, #ls.expired, 'WITHSCORES')[2])
  end
end

-- lt_lane loads lane name once per call (laneTx.lane): nil and the
-- refusal when its keys are not what the lane verbs write.
local function lt_lane(lt, name)
  local ls = lt.lanes[name]
  if ls then
    return ls
  end
  local k = lt.k
  ls = { name = name, hkey = k.lanep .. name, skey = k.lanep .. name .. ':spent', weight = 1, max_active = 0, rate_count = 0,
    rate_per = 0, paused = false, cfg = {}, active = 0, pass = 0, pend = 0, cur = 0, added = {}, in_added = {},
    spent_len = 0, new_spent = {}, existed = false, known = false }
  ls.pkey = name == DEFAULT_LANE and k.pending or (k.lanep .. name .. ':pending')
  if lt.on then
    ls.known = redis.call('ZSCORE', k.lanes_known, name) and true or false
  end
  local hk = hash_kind(ls.hkey)
  if hk == WRONG then
    return nil, E_WRONGTYPE
  end
  if hk == OK then
    ls.existed = true
    local all = redis.call('HGETALL', ls.hkey)
    for i = 1, #all, 2 do
      local f, v = all[i], all[i + 1]
      if LANE_INT_FIELDS[f] then
        if not ll(v) then
          return nil, E_HASH_NOT_INT
        end
        local n = tonumber(v)
        if f == 'weight' then
          ls.weight = math.min(math.max(n, 1), MAX_LANE_WEIGHT)
        elseif f == 'max_active' then
          ls.max_active = math.max(n, 0)
        elseif f == 'rate_count' then
          ls.rate_count = math.max(n, 0)
        elseif f == 'rate_per_ms' then
          ls.rate_per = math.max(n, 1)
        elseif f == 'paused' then
          ls.paused = n ~= 0
        elseif f == 'active' then
          ls.active = math.max(n, 0)
        else
          ls.pass = n
        end
        if f ~= 'active' and f ~= 'pass' then
          ls.cfg[f] = true
        end
      end
    end
    if ls.rate_count > 0 and ls.rate_per < 1 then
      ls.rate_per = 1
    end
  end
  local n = redis.pcall('ZCARD', ls.pkey)
  if type(n) == 'table' then
    return nil, E_WRONGTYPE
  end
  ls.pend = n
  if name == DEFAULT_LANE then
    ls.pend = ls.pend + lt.plain
  end
  if lt.on then
    local s = redis.call('ZSCORE', k.lanes, name)
    ls.in_lanes, ls.lanes_sc = s and true or false, s and tonumber(s)
    s = redis.call('ZSCORE', k.lanes_limited, name)
    ls.in_limited, ls.lim_sc = s and true or false, s and tonumber(s)
  end
  n = redis.pcall('ZCARD', ls.skey)
  if type(n) == 'table' then
    return nil, E_WRONGTYPE
  end
  ls.spent_len = n
  lane_spent(lt, ls)
  lt.lanes[name] = ls
  lt.order[#lt.order + 1] = ls
  return ls
end

-- lane_joined: ls gets a job; a lane that had none rejoins at the current
-- virtual time, max(its pass, vt) (§4.26.2).
local function lane_joined(lt, ls)
  if ls.pend == 0 and ls.pass < lt.vt then
    ls.pass = lt.vt
    ls.dirty = true
  end
  if not ls.existed then
    ls.dirty = true
  end
end

-- lane_into is seam 1 with lanes (intoPendingLane): job id (row: its row,
-- prio: its priority) enters the pending set of its lane. It records the
-- lane's change in lt and returns the set to ZADD it to (the caller writes
-- ZADD <set> <prio> id in its write pass). The caller judged the lane with
-- check_into_pending, so the lane is loaded.
local function lane_into(lt, k, id, row, prio)
  local name = lane_of(row)
  if not lt or (not lt.on and not lt.turn_on and name == DEFAULT_LANE) then
    if lt then
      lt.plain = lt.plain + 1
    end
    return k.pending
  end
  local ls = lt_lane(lt, name)
  if not ls.known and not lt.on then
    lt.turn_on = true
  end
  lane_joined(lt, ls)
  ls.pend = ls.pend + 1
  if not ls.in_added[id] then
    ls.in_added[id] = true
    ls.added[#ls.added + 1] = { id = id, score = prio, row = row, key = k.job .. id }
  end
  return ls.pkey
end

-- check_into_pending judges, before anything is written, whether row can
-- enter pending: a readable priority, a readable lane state. Returns the
-- refusal text or nil.
local function check_into_pending(lt, row)
  if not row_priority(row) then
    return E_HASH_NOT_INT
  end
  if lt and (lt.on or lane_of(row) ~= DEFAULT_LANE) then
    local ls, e = lt_lane(lt, lane_of(row))
    if not ls then
      return e
    end
  end
  return nil
end

-- lane_leaves is seam 2, "leaves active" (leavesActive): every exit from
-- active (COMPLETE, FAIL, REQUEUE, DELAY, the sweep's recovery, restart
-- exemption and dead-letter) calls it with the job's row as read. A row
-- holding a slot gives it back exactly once: its lane's active count goes
-- down by one and the caller deletes lane_slot (returns true then).
local function lane_leaves(lt, row)
  if not lt or not row or not row.lane_slot then
    return false
  end
  local ls = lt_lane(lt, lane_of(row))
  if ls.active > 0 then
    ls.active = ls.active - 1
  end
  ls.dirty = true
  return true
end

-- check_leaves judges the lane a slot goes back to (checkLeavesActive).
local function check_leaves(lt, row)
  if not lt or not row or not row.lane_slot then
    return nil
  end
  local ls, e = lt_lane(lt, lane_of(row))
  if not ls then
    return e
  end
  return nil
end

-- lane_leaves_pending: a pending job of lane name leaves its set other
-- than by a claim (REMOVE, REMOVE.ALL pending; §4.26.4). Nothing on a queue
-- without lanes. Returns the refusal text or nil.
local function lane_leaves_pending(lt, name)
  if not lt or not lt.on then
    return nil
  end
  local ls, e = lt_lane(lt, name)
  if not ls then
    return e
  end
  ls.pend = ls.pend - 1
  return nil
end

-- lane_settings appends the writes of ls's settings (writeSettings): HDEL
-- the ones present that went back to their defaults, HSET the others.
local function lane_settings(ops, ls)
  local set, del = { 'HSET', ls.hkey }, { 'HDEL', ls.hkey }
  for _, x in ipairs({
    { 'weight', ls.weight, ls.weight ~= 1 },
    { 'max_active', ls.max_active, ls.max_active ~= 0 },
    { 'rate_count', ls.rate_count, ls.rate_count ~= 0 },
    { 'rate_per_ms', ls.rate_per, ls.rate_count ~= 0 },
    { 'paused', 1, ls.paused },
  }) do
    if x[3] then
      set[#set + 1] = x[1]
      set[#set + 1] = score_str(x[2])
    elseif ls.cfg[x[1]] then
      del[#del + 1] = x[1]
    end
  end
  if #del > 2 then
    ops[#ops + 1] = del
  end
  if #set > 2 then
    ops[#ops + 1] = set
  end
end

-- lanes_plan is flush's computation: the writes that leave each touched
-- lane right (its state fields, its rate log, its place in `lanes` at its
-- pass or in `lanes:limited` at its next token time, or neither), and the
-- removal of every key of a lane that is empty, idle and not configured
-- (§4.26.4). It runs before the verb's first write; lanes_apply writes
-- the list after the verb's own writes.
local function lanes_plan(lt)
  local ops = {}
  if not lt then
    return ops
  end
  local k = lt.k
  if lt.turn_on and not lt.on then
    -- Lanes go on: the default lane joins with the plain pending jobs.
    local ls = lt_lane(lt, DEFAULT_LANE)
    if ls and ls.pend > 0 then
      ls.pass = math.max(ls.pass, lt.vt)
      ls.dirty = true
    end
  end
  if #lt.order == 0 and not lt.vt_dirty then
    return ops
  end
  local known_n = lt.known_n
  for _, ls in ipairs(lt.order) do
    if ls.pend <= 0 and ls.active == 0 and not lane_configured(ls) then
      if ls.existed then
        ops[#ops + 1] = { 'DEL', ls.hkey }
      end
      if ls.known then
        ops[#ops + 1] = { 'ZREM', k.lanes_known, ls.name }
        known_n = known_n - 1
      end
      if ls.in_lanes then
        ops[#ops + 1] = { 'ZREM', k.lanes, ls.name }
      end
      if ls.in_limited then
        ops[#ops + 1] = { 'ZREM', k.lanes_limited, ls.name }
      end
      if ls.spent_len > 0 then
        ops[#ops + 1] = { 'DEL', ls.skey }
      end
    else
      -- A lane missing from the registry is (re-)registered (§4.26.4).
      if not ls.known then
        ops[#ops + 1] = { 'ZADD', k.lanes_known, '0', ls.name }
        known_n = known_n + 1
        ls.dirty = true
      end
      if ls.cfg_dirty then
        lane_settings(ops, ls)
      end
      if ls.dirty then
        ops[#ops + 1] = { 'HSET', ls.hkey, 'active', score_str(ls.active), 'pass', score_str(ls.pass) }
      end
      if ls.rate_count == 0 and ls.spent_len > 0 then
        ops[#ops + 1] = { 'DEL', ls.skey }
      else
        for _, m in ipairs(ls.expired) do
          ops[#ops + 1] = { 'ZREM', ls.skey, m }
        end
        for _, m in ipairs(ls.new_spent) do
          ops[#ops + 1] = { 'ZADD', ls.skey, score_str(lt.now), m }
        end
      end
      if lane_eligible(ls) then
        if not ls.in_lanes or ls.lanes_sc ~= ls.pass then
          ops[#ops + 1] = { 'ZADD', k.lanes, score_str(ls.pass), ls.name }
        end
        if ls.in_limited then
          ops[#ops + 1] = { 'ZREM', k.lanes_limited, ls.name }
        end
      elseif ls.pend > 0 and not ls.paused and not lane_full(ls) and lane_limited(ls) then
        if ls.in_lanes then
          ops[#ops + 1] = { 'ZREM', k.lanes, ls.name }
        end
        local t = add_ms(ls.oldest, ls.rate_per)
        if not ls.in_limited or ls.lim_sc ~= t then
          ops[#ops + 1] = { 'ZADD', k.lanes_limited, score_str(t), ls.name }
        end
      else
        if ls.in_lanes then
          ops[#ops + 1] = { 'ZREM', k.lanes, ls.name }
        end
        if ls.in_limited then
          ops[#ops + 1] = { 'ZREM', k.lanes_limited, ls.name }
        end
      end
    end
  end
  if known_n <= 0 then
    if (lt.on or lt.vt_dirty) and redis.pcall('HEXISTS', k.meta, 'lane_vt') == 1 then
      ops[#ops + 1] = { 'HDEL', k.meta, 'lane_vt' }
    end
  elseif lt.vt_dirty then
    ops[#ops + 1] = { 'HSET', k.meta, 'lane_vt', score_str(lt.vt) }
  end
  return ops
end

-- lanes_apply writes what lanes_plan computed.
local function lanes_apply(ops)
  for i = 1, #ops do
    redis.call(unpack(ops[i]))
  end
end

-- lanes_pending is the number of pending jobs of k's lanes other than the
-- default one (EMQ.COUNTS adds it to pending).
local function lanes_pending(k)
  local names = redis.pcall('ZRANGE', k.lanes_known, 0, -1)
  if names.err then
    return 0
  end
  local n = 0
  for _, name in ipairs(names) do
    if name ~= DEFAULT_LANE then
      local c = redis.pcall('ZCARD', k.lanep .. name .. ':pending')
      if type(c) == 'number' then
        n = n + c
      end
    end
  end
  return n
end

-- ---------------------------------------------------------------------------
-- The claim with lanes on (docs/verbs.md §4.26.2).

-- lane_pick is the eligible lane of lowest (pass, name) (pickLane): the
-- first member of `lanes` the call has not loaded, or a loaded eligible
-- lane. nil and the refusal when a lane's state is unreadable.
local function lane_pick(lt)
  local best
  for _, ls in ipairs(lt.order) do
    if lane_eligible(ls) and (not best or ls.pass < best.pass or (ls.pass == best.pass and bytes_lt(ls.name, best.name))) then
      best = ls
    end
  end
  if lt.on then
    while true do
      local it = redis.call('ZRANGE', lt.k.lanes, lt.zi, lt.zi, 'WITHSCORES')
      if #it == 0 then
        break
      end
      local m, sc = it[1], tonumber(it[2])
      if lt.lanes[m] then
        lt.zi = lt.zi + 1
      elseif not best or sc < best.pass or (sc == best.pass and bytes_lt(m, best.name)) then
        local ls, e = lt_lane(lt, m)
        if not ls then
          return nil, e
        end
        lt.zi = lt.zi + 1
        if lane_eligible(ls) then
          return ls
        end
        -- Stale membership (a lane emptied by hand): the plan takes it
        -- out; look further.
      else
        break
      end
    end
  end
  return best
end

-- lane_next takes ls's next pending job (nextJob): the lower (priority, id)
-- of its set's next member and the call's own additions. false when none.
local function lane_next(ls, k)
  if #ls.added > 1 and ls.cur == 0 then
    table.sort(ls.added, function(a, b)
      if a.score ~= b.score then
        return a.score < b.score
      end
      return bytes_lt(a.id, b.id)
    end)
  end
  local st
  while true do
    local it = redis.call('ZRANGE', ls.pkey, ls.cur, ls.cur, 'WITHSCORES')
    if #it == 0 then
      break
    end
    if ls.in_added[it[1]] then
      ls.cur = ls.cur + 1
    else
      st = { id = it[1], score = tonumber(it[2]) }
      break
    end
  end
  local a = ls.added[1]
  if a and (not st or a.score < st.score or (a.score == st.score and bytes_lt(a.id, st.id))) then
    table.remove(ls.added, 1)
    return a
  end
  if not st then
    return false
  end
  ls.cur = ls.cur + 1
  st.key = k.job .. st.id
  st.row = read_row(st.key)
  return st
end

-- lanes_turned_on readies a claim whose promotion turned lanes on (the
-- queue had no lanes when read) for the lane selection (lanesTurnedOn,
-- docs/verbs.md §4.26.4): the default lane is loaded with the jobs this
-- call put into pending while lanes were still off (the promoted jobs of
-- the default lane, the flow parents a finishing verb released), which the
-- store does not hold yet. Returns the refusal text or nil.
local function lanes_turned_on(lt, k, promoted, ov)
  local ls, e = lt_lane(lt, DEFAULT_LANE)
  if not ls then
    return e
  end
  local function add(id, score, row)
    if not ls.in_added[id] then
      ls.in_added[id] = true
      ls.added[#ls.added + 1] = { id = id, score = score, row = row, key = k.job .. id }
    end
  end
  for j = 1, #promoted do
    local d = promoted[j]
    if lane_of(d.row) == DEFAULT_LANE then
      add(d.id, row_priority(d.row) or 0, d.row)
    end
  end
  if ov and ov.released then
    for _, pid in ipairs(ov.released) do
      local row = read_row(k.job .. pid)
      add(pid, row_priority(row) or 0, row)
    end
  end
  if ls.pend > 0 and ls.pass < lt.vt then
    ls.pass = lt.vt
    ls.dirty = true
  end
end

-- lane_claim_judge is EMQ.CLAIM's picks on a queue with lanes
-- (judgeClaimLanes): count fair picks, each the eligible lane of lowest
-- pass, its best pending job, the lane's pass advanced by its stride, a
-- MAX_ACTIVE slot taken (lane_slot on the row) and with RATE a member in
-- its rate log. Ghosts met are removed and do not count. Returns the jobs
-- and the ghosts ({key, id}), or nil and the refusal.
local function lane_claim_judge(lt, k, count, now, ov)
  -- Lanes whose next token came due re-enter the selection.
  if lt.on then
    local due = redis.call('ZRANGEBYSCORE', k.lanes_limited, '-inf', score_str(now))
    for _, name in ipairs(due) do
      local ls, e = lt_lane(lt, name)
      if not ls then
        return nil, e
      end
    end
  end
  local jobs, ghosts = {}, {}
  while #jobs < count do
    local ls, e = lane_pick(lt)
    if e then
      return nil, e
    end
    if not ls then
      break
    end
    local c = lane_next(ls, k)
    if not c then
      ls.pend = 0 -- the set was emptier than counted (hand writes)
    else
      if ov and c.id == ov.id then
        c.row = ov.row
      end
      local row = c.row
      if row.kind == ABSENT then
        ghosts[#ghosts + 1] = { ls.pkey, c.id }
        ls.pend = ls.pend - 1
      elseif row.kind == WRONG then
        return nil, E_WRONGTYPE
      elseif row.lane then
        return nil, E_LANE
      else
        local tok
        tok, e = next_count(row.attempts, 1)
        if not tok then
          return nil, e
        end
        local failures = 0
        if row.failures then
          if not ll(row.failures) then
            return nil, E_HASH_NOT_INT
          end
          failures = tonumber(row.failures)
        end
        jobs[#jobs + 1] = { c.id, row.payload or '', tok, failures, key = c.key, pkey = ls.pkey }
        ls.pend = ls.pend - 1
        ls.active = ls.active + 1
        if ls.pass > lt.vt then
          lt.vt = ls.pass
        end
        lt.vt_dirty = true
        -- Saturate (§2.12): a pass written by hand near 2^63 must not wrap.
        ls.pass = math.min(ls.pass + lane_stride(ls), MAX_PASS)
        ls.dirty = true
        if ls.rate_count > 0 then
          if ls.window == 0 then
            ls.oldest = now
          end
          ls.window = ls.window + 1
          ls.new_spent[#ls.new_spent + 1] = c.id .. ':' .. tok
        end
      end
    end
  end
  return jobs, ghosts
end

-- counter_check judges a metrics hash that will get n HINCRBY count 1.
local function counter_check(key, n)
  local kind, v = read_field(key, 'count')
  if kind == WRONG then
    return E_WRONGTYPE
  end
  local _, e = next_count(v, n)
  return e
end

-- read_due selects the members of the sorted set key with score <= now,
-- lowest first, at most limit (a canonical string), with their rows:
-- ZRANGEBYSCORE key -inf now LIMIT 0 limit. nil when key is not a zset.
local function read_due(k, key, now, limit)
  local r = redis.pcall('ZRANGEBYSCORE', key, '-inf', score_str(now), 'LIMIT', '0', limit)
  if r.err then
    return nil
  end
  local out = {}
  for i = 1, #r do
    out[i] = { id = r[i], key = k.job .. r[i], row = read_row(k.job .. r[i]) }
  end
  return out
end

-- ---------------------------------------------------------------------------
-- Retention (docs/verbs.md §4.21): the settings in meta, the trims.

local RETAIN_TRIM_PER_CALL = 10
local RETAIN_FIELDS = { 'completed_max_count', 'completed_max_age_ms', 'dead_max_count', 'dead_max_age_ms' }

-- read_retain returns {completed = {count, age}, dead = {count, age}} as
-- numbers, or nil and the refusal.
local function read_retain(k)
  if hash_kind(k.meta) == WRONG then
    return nil, E_WRONGTYPE
  end
  local v = redis.call('HMGET', k.meta, unpack(RETAIN_FIELDS))
  local n = {}
  for i = 1, 4 do
    if v[i] then
      if not ll(v[i]) or string.byte(v[i], 1) == 45 then
        return nil, E_HASH_NOT_INT
      end
      n[i] = tonumber(v[i])
    else
      n[i] = 0
    end
  end
  return { completed = { n[1], n[2] }, dead = { n[3], n[4] } }
end

local function retain_on(r)
  return r[1] > 0 or r[2] > 0
end

-- select_trim is the members a trim of set removes (docs/verbs.md §4.21):
-- beyond max_count once `adding` more join, then older than max_age_ms
-- (in dead, never a member at score 0), oldest first, at most max; a lane
-- row stops it. Each entry: {id, key, has_row}.
local function select_trim(k, set, r, now, adding, dead, max)
  local out, seen, stop = {}, {}, false
  local function take(id)
    local key = k.job .. id
    local t = redis.call('TYPE', key).ok
    if t == 'hash' and redis.call('HEXISTS', key, 'group') == 1 then
      stop = true
      return false
    end
    out[#out + 1] = { id, key, t ~= 'none', t == 'hash' and redis.call('HEXISTS', key, 'children') == 1 }
    seen[id] = true
    return #out < max
  end
  local size = redis.call('ZCARD', set)
  if size == 0 or max <= 0 then
    return out
  end
  if r[1] > 0 then
    local excess = size + adding - r[1]
    if excess > 0 then
      local ids = redis.call('ZRANGE', set, 0, math.min(excess, max) - 1)
      for i = 1, #ids do
        if not take(ids[i]) then
          break
        end
      end
    end
  end
  if not stop and r[2] > 0 and #out < max then
    local lo = dead and '(0' or '-inf'
    local ids = redis.call('ZRANGEBYSCORE', set, lo, score_str(now - r[2]), 'LIMIT', 0, max + #out)
    for i = 1, #ids do
      if not seen[ids[i]] and not take(ids[i]) then
        break
      end
    end
  end
  return out
end

-- write_trim removes the selected members and their rows, publishes them.
local function write_trim(k, set, ts)
  for i = 1, #ts do
    redis.call('ZREM', set, ts[i][1])
    if ts[i][3] then
      redis.call('DEL', ts[i][2])
    end
    if ts[i][4] then
      -- A flow parent's roster goes with its row (docs/verbs.md §4.25.4).
      redis.call('DEL', k.flow .. ts[i][1], k.flow .. ts[i][1] .. ':out')
    end
  end
  for i = 1, #ts do
    event(k, 'trimmed', ts[i][1])
  end
end

-- gone_of adds the row keys of the trims ts to the set gone (a flow parent
-- among them is gone for the seam below).
local function gone_of(gone, ts)
  for i = 1, #ts do
    gone[ts[i][2]] = true
  end
  return gone
end

-- ---------------------------------------------------------------------------
-- Flows (docs/verbs.md §4.25; docs/cluster.md §7): the "job ended" seam.
-- In a cluster every job of a flow is in the parent's queue (EMQ.FLOW
-- refuses other queues: their keys are in other slots), so a child's
-- parent is read and written in the slot of the call; a `parent` naming
-- another queue is left alone. As internal/verbs/flow.go: the seam is judged
-- before the call writes (gone: the row keys the call deletes), written
-- after.

local MAX_FLOW_DEPTH = 8

-- lt is the call's lane state of queue k: a released parent enters its
-- lane through it (docs/verbs.md §4.26.4: one computation with the call's
-- own lane changes).
local function flow_new(now, gone, lt)
  return { now = now, gone = gone or {}, parents = {}, list = {}, lt = lt }
end

-- flow_parent loads (once) parent pid of queue k; p.ok is false when it is
-- not in the shape EMQ.FLOW writes (then the seam leaves it alone).
local function flow_parent(fx, k, pid)
  local p = fx.parents[pid]
  if p then
    return p
  end
  p = { id = pid, ok = false }
  fx.parents[pid] = p
  fx.list[#fx.list + 1] = p
  local rk = k.job .. pid
  if fx.gone[rk] or hash_kind(rk) ~= OK then
    return p
  end
  local v = redis.call('HMGET', rk, 'children', 'children_left', 'state', 'on_child_fail', 'parent', 'group')
  if not v[1] or not v[2] or v[6] or not ll(v[2]) then
    return p
  end
  if hash_kind(k.flow .. pid) ~= OK or hash_kind(k.flow .. pid .. ':out') == WRONG then
    return p
  end
  if zset_kind(k.waiting) == WRONG or zset_kind(k.pending) == WRONG or zset_kind(k.dead) == WRONG then
    return p
  end
  if counter_check(k.failed, 1) then
    return p
  end
  p.row = read_row(rk)
  if not fx.lt or check_into_pending(fx.lt, p.row) then
    return p
  end
  local r = read_retain(k)
  p.dead_score = (r and retain_on(r.dead)) and score_str(fx.now) or '0'
  p.left, p.state, p.policy, p.parent = tonumber(v[2]), v[3], v[4] or 'fail', v[5]
  p.vals, p.order, p.outs, p.outorder, p.outdel = {}, {}, {}, {}, {}
  p.ok = true
  return p
end

local function flow_entry(k, p, child)
  if p.vals[child] ~= nil then
    return p.vals[child]
  end
  return redis.call('HGET', k.flow .. p.id, child)
end

local function flow_set(p, child, v)
  if p.vals[child] == nil then
    p.order[#p.order + 1] = child
  end
  p.vals[child] = v
end

-- split_ref splits "<queue>:<id>" at its last ':'.
local function split_ref(ref)
  local i = string.find(ref, ':[^:]*$')
  if not i or i == 1 or i == #ref then
    return nil
  end
  return string.sub(ref, 1, i - 1), string.sub(ref, i + 1)
end

-- flow_end: child id of queue k, whose row names parent ref, ended with
-- outcome (completed, dead, removed) and out (its result or error, or
-- nil). As flowEnds.end in internal/verbs/flow.go.
local function flow_end(fx, k, ref, id, outcome, out)
  local child = k.name .. ':' .. id
  for _ = 0, MAX_FLOW_DEPTH + 1 do
    if not ref then
      return
    end
    local q, pid = split_ref(ref)
    if q ~= k.name then
      return
    end
    local p = flow_parent(fx, k, pid)
    if not p.ok or flow_entry(k, p, child) ~= 'pending' then
      return
    end
    flow_set(p, child, outcome)
    if out then
      if p.outs[child] == nil then
        p.outorder[#p.outorder + 1] = child
      end
      p.outs[child] = out
    end
    p.left = p.left - 1
    if p.state ~= 'waiting' then
      return
    end
    local dead = outcome == 'dead'
    if dead and p.policy == 'fail' then
      p.killed, p.state = true, 'dead'
      p.err = 'child ' .. child .. ' died: ' .. (out or '')
      ref, child, outcome, out = p.parent, k.name .. ':' .. pid, 'dead', p.err
    else
      if (dead and p.policy == 'continue') or p.left <= 0 then
        p.released, p.state = true, 'pending'
      end
      return
    end
  end
end

-- flow_reopen: REPROCESS of dead child id (docs/verbs.md §4.25.3); returns
-- the refusal text, or nil.
local function flow_reopen(fx, k, ref, id)
  local child = k.name .. ':' .. id
  local q, pid = split_ref(ref)
  if q ~= k.name then
    return nil
  end
  local p = flow_parent(fx, k, pid)
  if not p.ok or flow_entry(k, p, child) ~= 'dead' then
    return nil
  end
  if p.state == 'waiting' then
    flow_set(p, child, 'pending')
    if redis.call('HEXISTS', k.flow .. pid .. ':out', child) == 1 then
      p.outdel[#p.outdel + 1] = child
    end
    p.left = p.left + 1
  elseif p.state == 'dead' then
    return 'EMQFLOW parent ' .. ref .. ' is dead: reprocess or remove it first'
  end
  return nil
end

-- flow_into puts the parents the seam releases into their lanes' state
-- (seam 1; once each): call it after the call's last flow_end.
local function flow_into(fx, k)
  if not fx then
    return
  end
  for _, p in ipairs(fx.list) do
    if p.released and not p.pkey then
      p.pkey = lane_into(fx.lt, k, p.id, p.row, row_priority(p.row))
    end
  end
end

-- flow_released lists, sorted, the parents the seam releases (NEXT's
-- claim sees them in pending, docs/verbs.md §4.5.1).
local function flow_released(fx)
  local out = {}
  if fx then
    for _, p in ipairs(fx.list) do
      if p.released then
        out[#out + 1] = p.id
      end
    end
    table.sort(out, bytes_lt)
  end
  return out
end

-- flow_write writes what the seam decided and publishes it.
local function flow_write(fx, k)
  if not fx then
    return
  end
  for _, p in ipairs(fx.list) do
    if p.ok and (#p.order > 0 or #p.outdel > 0) then
      local rk = k.job .. p.id
      local fv = {}
      for _, c in ipairs(p.order) do
        fv[#fv + 1] = c
        fv[#fv + 1] = p.vals[c]
      end
      redis.call('HSET', k.flow .. p.id, unpack(fv))
      if #p.outorder > 0 then
        local ov = {}
        for _, c in ipairs(p.outorder) do
          ov[#ov + 1] = c
          ov[#ov + 1] = p.outs[c]
        end
        redis.call('HSET', k.flow .. p.id .. ':out', unpack(ov))
      end
      if #p.outdel > 0 then
        redis.call('HDEL', k.flow .. p.id .. ':out', unpack(p.outdel))
      end
      local left = tostring(p.left)
      if p.released then
        redis.call('ZREM', k.waiting, p.id)
        redis.call('HSET', rk, 'children_left', left, 'state', 'pending')
        redis.call('ZADD', p.pkey or k.pending, string.format('%d', row_priority(p.row) or 0), p.id)
      elseif p.killed then
        redis.call('ZREM', k.waiting, p.id)
        redis.call('HSET', rk, 'children_left', left, 'state', 'dead', 'last_error', p.err, 'finished_at', score_str(fx.now))
        redis.call('ZADD', k.dead, p.dead_score, p.id)
        redis.call('HINCRBY', k.failed, 'count', '1')
      else
        redis.call('HSET', rk, 'children_left', left)
      end
    end
  end
  for _, p in ipairs(fx.list) do
    if p.released then
      event(k, 'released', p.id)
    elseif p.killed then
      event(k, 'dead', p.id)
    end
  end
end

-- ---------------------------------------------------------------------------
-- Calling conventions

-- check_call validates the key count and Valkey's arity (n exact, -n at
-- least n, the verb's name and the queue counted), then the queue name.
-- It returns the queue's keys, or nil and the refusal text.
local function check_call(name, arity, keys_, args)
  if #keys_ > 1 then
    return nil, E_ONE_KEY
  end
  local n = #keys_ + #args + 1
  if (arity >= 0 and n ~= arity) or (arity < 0 and n < -arity) then
    return nil, e_arity(name)
  end
  if #keys_ == 0 then
    return nil, E_ONE_KEY
  end
  local q = keys_[1]
  local k = key_cache[q]
  if k then
    return k
  end
  if not valid_queue(q) then
    return nil, E_QUEUE
  end
  return keys(q)
end

-- verb registers fn(k, args) as the function fname for the verb name with
-- Valkey arity arity. flags: function flags (no-writes, allow-oom).
local function verb(fname, name, arity, flags, fn)
  redis.register_function {
    function_name = fname,
    callback = function(keys_, args)
      local k, e = check_call(name, arity, keys_, args)
      if not k then
        return err(e)
      end
      return fn(k, args)
    end,
    flags = flags,
  }
end

-- ---------------------------------------------------------------------------
-- EMQ.ENQUEUE q id payload [DELAY delay_ms | AT run_at_ms]

verb('emq_enqueue', 'emq.enqueue', -4, {}, function(k, args)
  local sched, ms, prio, lane, has_lane
  local i = 3
  while i <= #args do
    if i + 1 > #args then
      return err(E_SYNTAX)
    end
    local opt, v, e = string.upper(args[i]), nil, nil
    if opt == 'DELAY' and not sched then
      sched = 'delay'
      v, e = int_arg(args[i + 1], 0, 'delay_ms')
      ms = v and tonumber(v)
    elseif opt == 'AT' and not sched then
      sched = 'at'
      v, e = int_arg(args[i + 1], 0, 'run_at_ms')
      ms = v and tonumber(v)
    elseif opt == 'PRIORITY' and not prio then
      prio, e = priority_arg(args[i + 1])
    elseif opt == 'LANE' and not has_lane then
      has_lane = true
      if not valid_lane(args[i + 1]) then
        e = E_LANE_NAME
      elseif args[i + 1] ~= DEFAULT_LANE then
        lane = args[i + 1]
      end
    else
      e = E_SYNTAX
    end
    if e then
      return err(e)
    end
    i = i + 2
  end
  local id, payload = args[1], args[2]
  local mint = id == '*'
  if not mint and not valid_id(id) then
    return err(E_KIND)
  end

  -- Read pass. The clock is read only when a minted id or DELAY needs it.
  local now = now_ms()
  local row
  if mint then
    local mk, last = read_field(k.mint, 'last')
    if mk == WRONG then
      return err(E_WRONGTYPE)
    end
    local n = now < 0 and 0 or now
    id = enc62(n)
    if last then
      if not valid_id(last) or bytes_lt(MAX_ID, last) then
        return err('EMQKIND ' .. k.mint .. ' last is not a minted job id')
      end
      if last == MAX_ID then
        return err(E_EXHAUSTED)
      end
      local after = inc62(last)
      if bytes_lt(id, after) then
        id = after
      end
    end
    -- Skip numbers a client already used as its own id.
    while redis.call('EXISTS', k.job .. id) == 1 do
      if id == MAX_ID then
        return err(E_EXHAUSTED)
      end
      id = inc62(id)
    end
    row = ABSENT
  else
    row = hash_kind(k.job .. id)
  end
  if row == WRONG then
    return err(E_WRONGTYPE)
  end
  if row == OK then
    return false -- a duplicate: nil, nothing written
  end
  -- The queue's lanes (docs/verbs.md §4.26): read for a job bound for
  -- pending.
  local lt
  if not sched then
    local le
    lt, le = lanes_read(k, now)
    if not lt then
      return err(le)
    end
  end
  local dest, state, score = k.pending, 'pending', 0
  if sched == 'delay' then
    dest, state, score = k.schedule, 'scheduled', add_ms(now, ms)
  elseif sched == 'at' then
    dest, state, score = k.schedule, 'scheduled', math.min(ms, MAX_SCORE)
  end
  if zset_kind(dest) == WRONG then
    return err(E_WRONGTYPE)
  end
  -- Seam 1 (docs/verbs.md §4.26): into the pending set of its lane.
  local nrow = lane and { lane_name = lane } or nil
  if lt and (lt.on or lane) then
    local _, le = lt_lane(lt, lane_of(nrow))
    if le then
      return err(le)
    end
  end
  if dest == k.pending then
    dest = lane_into(lt, k, id, nrow, prio or 0)
  end
  local lops = lanes_plan(lt)

  -- Write pass.
  local fv = { 'HSET', k.job .. id, 'state', state, 'attempts', '0', 'payload', payload, 'enqueued_at', score_str(now) }
  if prio and prio ~= 0 then
    fv[#fv + 1] = 'priority'
    fv[#fv + 1] = string.format('%d', prio)
  end
  if lane then
    fv[#fv + 1] = 'lane'
    fv[#fv + 1] = lane
  end
  redis.call(unpack(fv))
  if not sched then
    redis.call('ZADD', dest, string.format('%d', prio or 0), id)
  else
    redis.call('ZADD', dest, score_str(score), id)
  end
  if mint then
    redis.call('HSET', k.mint, 'last', id)
  end
  lanes_apply(lops)
  event(k, 'enqueued', id)
  return id
end)

-- ---------------------------------------------------------------------------
-- EMQ.ENQUEUE.MANY q [DELAY delay_ms | AT run_at_ms] JOBS id payload [id payload ...]
-- (docs/verbs.md §4.2.1): each pair as EMQ.ENQUEUE with the same options, in
-- order, all or nothing; the reply has one entry per pair (the id, or nil
-- for a duplicate).

verb('emq_enqueue_many', 'emq.enqueue.many', -5, {}, function(k, args)
  local sched, ms, prio, lane, has_lane
  local i = 1
  while i <= #args and string.upper(args[i]) ~= 'JOBS' do
    if i + 1 > #args then
      return err(E_SYNTAX)
    end
    local opt, v, e = string.upper(args[i]), nil, nil
    if opt == 'DELAY' and not sched then
      sched = 'delay'
      v, e = int_arg(args[i + 1], 0, 'delay_ms')
      ms = v and tonumber(v)
    elseif opt == 'AT' and not sched then
      sched = 'at'
      v, e = int_arg(args[i + 1], 0, 'run_at_ms')
      ms = v and tonumber(v)
    elseif opt == 'PRIORITY' and not prio then
      prio, e = priority_arg(args[i + 1])
    elseif opt == 'LANE' and not has_lane then
      has_lane = true
      if not valid_lane(args[i + 1]) then
        e = E_LANE_NAME
      elseif args[i + 1] ~= DEFAULT_LANE then
        lane = args[i + 1]
      end
    else
      e = E_SYNTAX
    end
    if e then
      return err(e)
    end
    i = i + 2
  end
  local first = i + 1
  local n = #args - i
  if i > #args or n == 0 or n % 2 ~= 0 then
    return err(E_SYNTAX)
  end
  local mints = false
  for j = first, #args, 2 do
    if args[j] == '*' then
      mints = true
    elseif not valid_id(args[j]) then
      return err(E_KIND)
    end
  end

  -- Read pass.
  local now = now_ms()
  local dest, state, score = k.pending, 'pending', 0
  if sched == 'delay' then
    dest, state, score = k.schedule, 'scheduled', add_ms(now, ms)
  elseif sched == 'at' then
    dest, state, score = k.schedule, 'scheduled', math.min(ms, MAX_SCORE)
  end
  if zset_kind(dest) == WRONG then
    return err(E_WRONGTYPE)
  end
  local nextid, exhausted
  if mints then
    local mk, last = read_field(k.mint, 'last')
    if mk == WRONG then
      return err(E_WRONGTYPE)
    end
    nextid = enc62(now < 0 and 0 or now)
    if last then
      if not valid_id(last) or bytes_lt(MAX_ID, last) then
        return err('EMQKIND ' .. k.mint .. ' last is not a minted job id')
      end
      if last == MAX_ID then
        return err(E_EXHAUSTED)
      end
      local after = inc62(last)
      if bytes_lt(nextid, after) then
        nextid = after
      end
    end
  end
  local ids, taken, last_minted = {}, {}, nil
  for j = first, #args, 2 do
    local id = args[j]
    local out = false
    if id == '*' then
      while true do
        if exhausted then
          return err(E_EXHAUSTED)
        end
        local cand = nextid
        if cand == MAX_ID then
          exhausted = true
        else
          nextid = inc62(cand)
        end
        if not taken[cand] and redis.call('EXISTS', k.job .. cand) == 0 then
          out = cand
          break
        end
      end
      last_minted = out
      taken[out] = true
    elseif not taken[id] then
      local row = hash_kind(k.job .. id)
      if row == WRONG then
        return err(E_WRONGTYPE)
      end
      if row == ABSENT then
        out = id
        taken[id] = true
      end
    end
    ids[#ids + 1] = out
  end
  -- The queue's lanes (docs/verbs.md §4.26): every job of the batch enters
  -- the same lane through seam 1.
  local lt
  local nrow = lane and { lane_name = lane } or nil
  if next(taken) and not sched then
    local e
    lt, e = lanes_read(k, now)
    if not lt then
      return err(e)
    end
    if lane or lt.on then
      local _, le = lt_lane(lt, lane_of(nrow))
      if le then
        return err(le)
      end
    end
  end
  local pkeys = {}
  for j = 1, #ids do
    if ids[j] and not sched then
      pkeys[j] = lane_into(lt, k, ids[j], nrow, prio or 0)
    end
  end
  local lops = lanes_plan(lt)

  -- Write pass.
  for j = 1, #ids do
    local id = ids[j]
    if id then
      local fv = { 'HSET', k.job .. id, 'state', state, 'attempts', '0', 'payload', args[first + 2 * (j - 1) + 1],
        'enqueued_at', score_str(now) }
      if prio and prio ~= 0 then
        fv[#fv + 1] = 'priority'
        fv[#fv + 1] = string.format('%d', prio)
      end
      if lane then
        fv[#fv + 1] = 'lane'
        fv[#fv + 1] = lane
      end
      redis.call(unpack(fv))
      if not sched then
        redis.call('ZADD', pkeys[j], string.format('%d', prio or 0), id)
      else
        redis.call('ZADD', dest, score_str(score), id)
      end
    end
  end
  if last_minted then
    redis.call('HSET', k.mint, 'last', last_minted)
  end
  lanes_apply(lops)
  for j = 1, #ids do
    if ids[j] then
      event(k, 'enqueued', ids[j])
    end
  end
  return ids
end)

-- ---------------------------------------------------------------------------
-- The six token verbs: q id token first, then the common guard
-- (docs/verbs.md §4.4, in this order).

local function token_guard(k, verb_name, id, token)
  local row = read_row(k.job .. id)
  if row.kind == WRONG then
    return nil, E_WRONGTYPE
  elseif not row.attempts then
    return nil, E_GONE
  elseif row.attempts ~= token then
    return nil, 'EMQSTALE ' .. verb_name .. ' token mismatch'
  elseif row.lane then
    return nil, E_LANE
  elseif row.state == 'dead' then
    return nil, E_DEAD
  elseif row.state == 'completed' then
    return nil, E_COMPLETED
  end
  local ak, in_active = member(k.active, id)
  if ak == WRONG then
    return nil, E_WRONGTYPE
  elseif not in_active then
    return nil, E_LEASE_LOST
  end
  return row
end

-- token_lanes reads the queue's lane state for a token verb's exit from
-- active and judges it (tokenRead.laneCheck): the lane the slot goes back
-- to (seam 2) and, with to_pending, the lane the job returns to (seam 1).
-- Returns lt, or nil and the refusal.
local function token_lanes(k, row, now, to_pending)
  local lt, e = lanes_read(k, now)
  if not lt then
    return nil, e
  end
  e = check_leaves(lt, row)
  if not e and to_pending then
    e = check_into_pending(lt, row)
  end
  if e then
    return nil, e
  end
  return lt
end

-- NEXT (docs/verbs.md §4.5.1): EMQ.COMPLETE and EMQ.FAIL answer what
-- EMQ.CLAIM q lease_ms COUNT count would answer right after them, in the
-- same call. claim_judge and claim_write are EMQ.CLAIM's (defined with it).
local claim_judge, claim_write

-- parse_next parses `NEXT lease_ms` and `COUNT count` from args[from] on (in
-- either order, each once, COUNT only with NEXT): next, lease, count, or
-- the refusal as the fourth value.
local function parse_next(args, from)
  local next_, lease, count, have_count = false, nil, 1, false
  local i = from
  while i <= #args do
    if i + 1 > #args then
      return false, nil, nil, E_SYNTAX
    end
    local opt, v, e = string.upper(args[i]), nil, nil
    if opt == 'NEXT' and not next_ then
      next_ = true
      v, e = int_arg(args[i + 1], 1, 'lease_ms')
      lease = v and tonumber(v)
    elseif opt == 'COUNT' and not have_count then
      have_count = true
      v, e = int_arg(args[i + 1], 1, 'count')
      count = v and tonumber(v)
    else
      e = E_SYNTAX
    end
    if e then
      return false, nil, nil, e
    end
    i = i + 2
  end
  if have_count and not next_ then
    return false, nil, nil, E_SYNTAX
  end
  return next_, lease, count, nil
end

-- overlay_due is the claim's due members of schedule (at most 100, in
-- ZRANGEBYSCORE's order) once ov is applied: ov.id's row is ov.row; with
-- ov.sched ov.id has a new score, due (now) when ov.due.
local function overlay_due(k, now, ov)
  local r = redis.pcall('ZRANGEBYSCORE', k.schedule, '-inf', score_str(now), 'WITHSCORES', 'LIMIT', '0', '101')
  if r.err then
    return nil
  end
  local out = {}
  local pending_insert = ov.sched and ov.due
  for i = 1, #r, 2 do
    local id, sc = r[i], tonumber(r[i + 1])
    if pending_insert and (sc > now or (sc == now and bytes_lt(ov.id, id))) then
      out[#out + 1] = { id = ov.id, key = k.job .. ov.id, row = ov.row }
      pending_insert = false
    end
    if id == ov.id then
      if not ov.sched then
        out[#out + 1] = { id = id, key = k.job .. id, row = ov.row }
      end
    else
      out[#out + 1] = { id = id, key = k.job .. id, row = read_row(k.job .. id) }
    end
  end
  if pending_insert then
    out[#out + 1] = { id = ov.id, key = k.job .. ov.id, row = ov.row }
  end
  while #out > 100 do
    out[#out] = nil
  end
  return out
end

-- EMQ.COMPLETE q id token [RESULT value] [NEXT lease_ms [COUNT count]]
local MAX_RESULT = 1048576

verb('emq_complete', 'emq.complete', -4, { 'allow-oom' }, function(k, args)
  local id, token = args[1], args[2]
  -- RESULT value (docs/verbs.md §4.5) among the NEXT options.
  local result
  local rest = {}
  local i = 3
  while i <= #args do
    if i + 1 > #args then
      return err(E_SYNTAX)
    end
    if string.upper(args[i]) == 'RESULT' and not result then
      if #args[i + 1] > MAX_RESULT then
        return err('ERR result must be at most 1048576 bytes')
      end
      result = args[i + 1]
    else
      rest[#rest + 1] = args[i]
      rest[#rest + 1] = args[i + 1]
    end
    i = i + 2
  end
  local next_, lease, count, e = parse_next(rest, 1)
  if e then
    return err(e)
  end
  local now = now_ms()
  local row
  row, e = token_guard(k, 'complete', id, token)
  if e then
    return err(e)
  end
  local lt
  lt, e = token_lanes(k, row, now, false)
  if not lt then
    return err(e)
  end
  e = counter_check(k.completed, 1)
  if e then
    return err(e)
  end
  local r
  r, e = read_retain(k)
  if not r then
    return err(e)
  end
  local keep = retain_on(r.completed)
  local trim = {}
  if keep then
    if zset_kind(k.done) == WRONG then
      return err(E_WRONGTYPE)
    end
    trim = select_trim(k, k.done, r.completed, now, 1, false, RETAIN_TRIM_PER_CALL)
  end
  -- Seam 2: the slot is back before NEXT's claim (docs/verbs.md §4.26.3).
  local slot = lane_leaves(lt, row)
  local fx
  if row.parent then
    fx = flow_new(now, gone_of({}, trim), lt)
    flow_end(fx, k, row.parent, id, 'completed', result)
    flow_into(fx, k)
  end
  local pl
  if next_ then
    pl, e = claim_judge(k, lease, count, now, { id = id, row = { kind = ABSENT }, released = flow_released(fx) }, lt)
    if not pl then
      return err(e)
    end
  end
  local lops = lanes_plan(lt)
  redis.call('ZREM', k.active, id)
  if slot and keep then
    redis.call('HDEL', k.job .. id, 'lane_slot')
  end
  if keep then
    if result then
      redis.call('HSET', k.job .. id, 'state', 'completed', 'finished_at', score_str(now), 'result', result)
    else
      redis.call('HSET', k.job .. id, 'state', 'completed', 'finished_at', score_str(now))
    end
    redis.call('ZADD', k.done, score_str(now), id)
  else
    redis.call('DEL', k.job .. id)
    if row.children then
      redis.call('DEL', k.flow .. id, k.flow .. id .. ':out')
    end
  end
  redis.call('HINCRBY', k.completed, 'count', '1')
  event(k, 'completed', id)
  write_trim(k, k.done, trim)
  flow_write(fx, k)
  local out = 1
  if next_ then
    out = claim_write(k, pl, lease, now)
  end
  lanes_apply(lops)
  return out
end)

-- EMQ.FAIL q id token max_attempts delay_ms error [NEXT lease_ms [COUNT count]]
verb('emq_fail', 'emq.fail', -7, { 'allow-oom' }, function(k, args)
  local id, token = args[1], args[2]
  local max, e = int_arg(args[3], 1, 'max_attempts')
  if not max then
    return err(e)
  end
  local delay
  delay, e = int_arg(args[4], 0, 'delay_ms')
  if not delay then
    return err(e)
  end
  delay = tonumber(delay)
  local next_, lease, count
  next_, lease, count, e = parse_next(args, 6)
  if e then
    return err(e)
  end
  local now = now_ms()
  local row
  row, e = token_guard(k, 'fail', id, token)
  if e then
    return err(e)
  end
  local lt
  lt, e = token_lanes(k, row, now, false)
  if not lt then
    return err(e)
  end
  local f
  f, e = next_count(row.failures, 1)
  if e then
    return err(e)
  end
  local rk = k.job .. id
  local dead = cmp_ll(f, max) >= 0
  local fx
  -- NEXT's claim is judged before anything is written, on the failed job
  -- as the writes below leave it (docs/verbs.md §4.5.1).
  local function next_claim()
    if not next_ then
      return true
    end
    local ovrow = {}
    for name, v in pairs(row) do
      ovrow[name] = v
    end
    ovrow.failures = f
    ovrow.lane_slot = false
    local ov = { id = id, row = ovrow, sched = not dead, due = not dead and add_ms(now, delay) <= now, released = flow_released(fx) }
    return claim_judge(k, lease, count, now, ov, lt)
  end
  -- Seam 2 (docs/verbs.md §4.26.3), before NEXT's claim.
  local slot = lane_leaves(lt, row)
  local pl
  if dead then
    if zset_kind(k.dead) == WRONG then
      return err(E_WRONGTYPE)
    end
    e = counter_check(k.failed, 1)
    if e then
      return err(e)
    end
    local r
    r, e = read_retain(k)
    if not r then
      return err(e)
    end
    local trim, score = {}, '0'
    if retain_on(r.dead) then
      trim = select_trim(k, k.dead, r.dead, now, 1, true, RETAIN_TRIM_PER_CALL)
      score = score_str(now)
    end
    if row.parent then
      fx = flow_new(now, gone_of({}, trim), lt)
      flow_end(fx, k, row.parent, id, 'dead', stored_error(args[5]))
      flow_into(fx, k)
    end
    pl, e = next_claim()
    if not pl then
      return err(e)
    end
    local lops = lanes_plan(lt)
    redis.call('ZREM', k.active, id)
    if slot then
      redis.call('HDEL', rk, 'lane_slot')
    end
    redis.call('HSET', rk, 'last_error', stored_error(args[5]), 'failures', f, 'state', 'dead', 'finished_at', score_str(now))
    redis.call('ZADD', k.dead, score, id)
    redis.call('HINCRBY', k.failed, 'count', '1')
    event(k, 'dead', id)
    write_trim(k, k.dead, trim)
    flow_write(fx, k)
    local out = { 'dead', tonumber(f) }
    if next_ then
      out[3] = claim_write(k, pl, lease, now)
    end
    lanes_apply(lops)
    return out
  end
  if zset_kind(k.schedule) == WRONG then
    return err(E_WRONGTYPE)
  end
  pl, e = next_claim()
  if not pl then
    return err(e)
  end
  local lops = lanes_plan(lt)
  redis.call('ZREM', k.active, id)
  if slot then
    redis.call('HDEL', rk, 'lane_slot')
  end
  redis.call('HSET', rk, 'last_error', stored_error(args[5]), 'failures', f, 'state', 'scheduled')
  redis.call('ZADD', k.schedule, score_str(add_ms(now, delay)), id)
  event(k, 'failed', id)
  local out = { 'scheduled', tonumber(f) }
  if next_ then
    out[3] = claim_write(k, pl, lease, now)
  end
  lanes_apply(lops)
  return out
end)

-- EMQ.REQUEUE q id token
verb('emq_requeue', 'emq.requeue', 4, { 'allow-oom' }, function(k, args)
  local id, token = args[1], args[2]
  local row, e = token_guard(k, 'requeue', id, token)
  if e then
    return err(e)
  end
  if zset_kind(k.pending) == WRONG then
    return err(E_WRONGTYPE)
  end
  if not row_priority(row) then
    return err(E_HASH_NOT_INT)
  end
  local lt
  lt, e = token_lanes(k, row, now_ms(), true)
  if not lt then
    return err(e)
  end
  -- Seam 2 then seam 1 (docs/verbs.md §4.26.3).
  local slot = lane_leaves(lt, row)
  local pkey = lane_into(lt, k, id, row, row_priority(row))
  local lops = lanes_plan(lt)
  redis.call('ZREM', k.active, id)
  if slot then
    redis.call('HDEL', k.job .. id, 'lane_slot')
  end
  redis.call('HSET', k.job .. id, 'state', 'pending')
  redis.call('ZADD', pkey, string.format('%d', row_priority(row)), id)
  lanes_apply(lops)
  event(k, 'requeued', id)
  return 1
end)

-- EMQ.EXTEND q id token lease_ms
verb('emq_extend', 'emq.extend', 5, { 'allow-oom' }, function(k, args)
  local id, token = args[1], args[2]
  local lease, e = int_arg(args[3], 1, 'lease_ms')
  if not lease then
    return err(e)
  end
  lease = tonumber(lease)
  local now = now_ms()
  local _
  _, e = token_guard(k, 'extend', id, token)
  if e then
    return err(e)
  end
  redis.call('ZADD', k.active, score_str(add_ms(now, lease)), id)
  redis.call('HSET', k.job .. id, 'lease_epoch', run_id())
  return 1
end)

-- EMQ.DELAY q id token (IN delay_ms | AT run_at_ms)
verb('emq_delay', 'emq.delay', 6, { 'allow-oom' }, function(k, args)
  local id, token = args[1], args[2]
  local mode, ms, e = string.upper(args[3]), nil, nil
  if mode == 'IN' then
    ms, e = int_arg(args[4], 0, 'delay_ms')
  elseif mode == 'AT' then
    ms, e = int_arg(args[4], 0, 'run_at_ms')
  else
    e = E_SYNTAX
  end
  if e then
    return err(e)
  end
  ms = tonumber(ms)
  local now = now_ms()
  local row
  row, e = token_guard(k, 'delay', id, token)
  if e then
    return err(e)
  end
  local lt
  lt, e = token_lanes(k, row, now, false)
  if not lt then
    return err(e)
  end
  if zset_kind(k.schedule) == WRONG then
    return err(E_WRONGTYPE)
  end
  local score = math.min(ms, MAX_SCORE)
  if mode == 'IN' then
    score = add_ms(now, ms)
  end
  local slot = lane_leaves(lt, row)
  local lops = lanes_plan(lt)
  redis.call('ZREM', k.active, id)
  if slot then
    redis.call('HDEL', k.job .. id, 'lane_slot')
  end
  lanes_apply(lops)
  redis.call('HSET', k.job .. id, 'state', 'scheduled')
  redis.call('ZADD', k.schedule, score_str(score), id)
  event(k, 'delayed', id)
  return 1
end)

-- EMQ.PROGRESS q id token value
verb('emq_progress', 'emq.progress', 5, {}, function(k, args)
  local id, token = args[1], args[2]
  local _, e = token_guard(k, 'progress', id, token)
  if e then
    return err(e)
  end
  redis.call('HSET', k.job .. id, 'progress', args[3])
  event(k, 'progress', id)
  return 1
end)

-- ---------------------------------------------------------------------------
-- Promotions: the due scheduled members, judged as EMQ.PROMOTE judges them
-- (a ghost is dropped from schedule; a non-hash or lane row refuses the
-- whole call). Returns the promoted entries, or nil and the refusal.

-- Each promoted job enters its lane through seam 1 (lt: the call's lane
-- state; d.pkey is the set it joins).
local function judge_promotions(due, lt, k)
  for i = 1, #due do
    local row = due[i].row
    if row.kind == WRONG then
      return nil, E_WRONGTYPE
    elseif row.kind == OK and row.lane then
      return nil, E_LANE
    elseif row.kind == OK then
      local e = check_into_pending(lt, row)
      if e then
        return nil, e
      end
    end
  end
  local out = {}
  for i = 1, #due do
    local d = due[i]
    if d.row.kind == OK then
      d.pkey = lane_into(lt, k, d.id, d.row, row_priority(d.row))
      out[#out + 1] = d
    end
  end
  return out
end

local function write_promotions(k, due)
  for i = 1, #due do
    local d = due[i]
    redis.call('ZREM', k.schedule, d.id)
    if d.row.kind == OK then
      redis.call('HSET', d.key, 'state', 'pending')
      redis.call('ZADD', d.pkey or k.pending, string.format('%d', row_priority(d.row) or 0), d.id)
    end
  end
  for i = 1, #due do
    if due[i].row.kind == OK then
      event(k, 'promoted', due[i].id)
    end
  end
end

-- ---------------------------------------------------------------------------
-- EMQ.CLAIM q lease_ms [COUNT count] [BLOCK block_ms]

local CLAIM_PROMOTE_MAX = '100'

-- claim_judge is EMQ.CLAIM's read pass and judgement at now (docs/verbs.md
-- §4.3.2), as the store will stand once ov (nil, or a finishing verb's
-- effect on its job not written yet: NEXT, §4.5.1) is applied. It returns
-- the claim's plan, or nil and the refusal. claim_write writes the plan and
-- returns the reply.
claim_judge = function(k, lease, count, now, ov, lt)
  local e
  -- Read pass.
  local mk, paused = read_field(k.meta, 'paused')
  if mk == WRONG then
    return nil, E_WRONGTYPE
  end
  if paused then
    return { due = {}, ghosts = {}, jobs = {}, lt = lt }
  end
  local due
  if ov then
    due = overlay_due(k, now, ov)
  else
    due = read_due(k, k.schedule, now, CLAIM_PROMOTE_MAX)
  end
  if not due then
    return nil, E_WRONGTYPE
  end
  -- The first members of pending: the read doubles as pending's type check
  -- (read before any row is judged, as docs/verbs.md §4.3.2 orders them).
  local first = count + #due
  if first > 512 then
    first = 512
  end
  local r0 = redis.pcall('ZRANGE', k.pending, 0, first - 1, 'WITHSCORES')
  if r0.err or zset_kind(k.active) == WRONG then
    return nil, E_WRONGTYPE
  end
  -- The queue's lanes (docs/verbs.md §4.26): a finishing verb's NEXT
  -- shares its own (the slot it gave back is already free).
  if not lt then
    lt, e = lanes_read(k, now)
    if not lt then
      return nil, e
    end
  end
  local promoted
  promoted, e = judge_promotions(due, lt, k)
  if not promoted then
    return nil, e
  end
  if not lt.on and lt.turn_on then
    -- A promoted job of a lane turned lanes on in this call: the rest of
    -- the call is the lane selection, the default lane in it with the
    -- jobs this call put into pending (docs/verbs.md §4.26.4).
    e = lanes_turned_on(lt, k, promoted, ov)
    if e then
      return nil, e
    end
  end
  if lt.on or lt.turn_on then
    -- With lanes on: count fair picks (docs/verbs.md §4.26.2).
    local jobs, ghosts = lane_claim_judge(lt, k, count, now, ov)
    if not jobs then
      return nil, ghosts
    end
    return { due = due, ghosts = ghosts, jobs = jobs, lt = lt, lanes = true }
  end
  -- Lanes are off, so every promoted job is of the default lane.
  -- The promoted ids join pending at score 0, so they sort by id among the
  -- score-0 members (bytes); a promoted id already in pending moves to 0.
  -- Flow parents a finishing verb releases (ov.released, docs/verbs.md
  -- §4.25.2) join pending at score 0 as promoted ids do.
  if ov and ov.released then
    for _, pid in ipairs(ov.released) do
      promoted[#promoted + 1] = { id = pid, key = k.job .. pid, row = read_row(k.job .. pid) }
    end
  end
  local in_prom = {}
  for j = 1, #promoted do
    in_prom[promoted[j].id] = true
  end
  for j = 1, #promoted do
    promoted[j].score = row_priority(promoted[j].row) or 0
  end
  if #promoted > 1 then
    table.sort(promoted, function(a, b)
      if a.score ~= b.score then
        return a.score < b.score
      end
      return bytes_lt(a.id, b.id)
    end)
  end

  -- Candidates from pending, in order, read in batches until enough rows.
  local cands, fetched, exhausted = {}, 0, false
  local function add(r)
    for j = 1, #r, 2 do
      local id = r[j]
      local row
      if ov and id == ov.id then
        row = ov.row
      else
        row = read_row(k.job .. id)
      end
      cands[#cands + 1] = { id = id, score = tonumber(r[j + 1]), key = k.job .. id, row = row }
    end
    fetched = fetched + #r / 2
  end
  if #r0 < 2 * first then
    exhausted = true
  end
  add(r0)
  local function more()
    if exhausted then
      return false
    end
    local n = count + #promoted - #cands
    if n < 1 then
      n = 1
    elseif n > 512 then
      n = 512
    end
    local r = redis.call('ZRANGE', k.pending, fetched, fetched + n - 1, 'WITHSCORES')
    if #r < 2 * n then
      exhausted = true
    end
    if #r == 0 then
      return false
    end
    add(r)
    return true
  end

  local jobs, ghosts, taken = {}, {}, {}
  local ci, pj = 1, 1
  while #jobs < count do
    while true do
      while ci <= #cands and in_prom[cands[ci].id] do
        ci = ci + 1
      end
      if ci <= #cands or not more() then
        break
      end
    end
    local c
    if ci <= #cands and pj <= #promoted then
      local pc = cands[ci]
      local ps = promoted[pj].score
      if pc.score < ps or (pc.score == ps and bytes_lt(pc.id, promoted[pj].id)) then
        c, ci = pc, ci + 1
      else
        c, pj = promoted[pj], pj + 1
      end
    elseif ci <= #cands then
      c, ci = cands[ci], ci + 1
    elseif pj <= #promoted then
      c, pj = promoted[pj], pj + 1
    end
    if not c then
      break
    end
    local row = c.row
    if row.kind == ABSENT then
      ghosts[#ghosts + 1] = c.id
    elseif row.kind == WRONG then
      return nil, E_WRONGTYPE
    elseif row.lane then
      return nil, E_LANE
    else
      local tok
      tok, e = next_count(row.attempts, 1)
      if not tok then
        return nil, e
      end
      local failures = 0
      if row.failures then
        if not ll(row.failures) then
          return nil, E_HASH_NOT_INT
        end
        failures = tonumber(row.failures)
      end
      jobs[#jobs + 1] = { c.id, row.payload or '', tok, failures, key = c.key }
      if in_prom[c.id] then
        taken[c.id] = true
      end
    end
  end
  return { due = due, ghosts = ghosts, jobs = jobs, lt = lt }
end

claim_write = function(k, pl, lease, now)
  local jobs = pl.jobs
  write_promotions(k, pl.due)
  for j = 1, #pl.ghosts do
    local g = pl.ghosts[j]
    if type(g) == 'table' then
      redis.call('ZREM', g[1], g[2])
    else
      redis.call('ZREM', k.pending, g)
    end
  end
  if #jobs > 0 then
    local deadline = score_str(add_ms(now, lease))
    local epoch = run_id()
    for j = 1, #jobs do
      local job = jobs[j]
      redis.call('ZREM', job.pkey or k.pending, job[1])
      redis.call('HINCRBY', job.key, 'attempts', '1')
      if pl.lanes then
        -- The job holds a slot of its lane (docs/verbs.md §4.26.3).
        redis.call('HSET', job.key, 'state', 'active', 'lease_epoch', epoch, 'claimed_at', score_str(now), 'lane_slot', '1')
      else
        redis.call('HSET', job.key, 'state', 'active', 'lease_epoch', epoch, 'claimed_at', score_str(now))
      end
      redis.call('ZADD', k.active, deadline, job[1])
      job.key, job.pkey = nil, nil
    end
    for j = 1, #jobs do
      event(k, 'claimed', jobs[j][1])
    end
  end
  return jobs
end

verb('emq_claim', 'emq.claim', -3, { 'allow-oom' }, function(k, args)
  local lease, e = int_arg(args[1], 1, 'lease_ms')
  if not lease then
    return err(e)
  end
  lease = tonumber(lease)
  local count, have_count, block = 1, false, false
  local i = 2
  while i <= #args do
    if i + 1 > #args then
      return err(E_SYNTAX)
    end
    local opt = string.upper(args[i])
    local v
    if opt == 'COUNT' and not have_count then
      have_count = true
      v, e = int_arg(args[i + 1], 1, 'count')
      if v then
        count = tonumber(v)
      end
    elseif opt == 'BLOCK' and not block then
      -- A function cannot block: BLOCK is validated and the call answers at
      -- once, as the native verb does inside MULTI.
      block = true
      v, e = int_arg(args[i + 1], 0, 'block_ms')
    else
      e = E_SYNTAX
    end
    if e then
      return err(e)
    end
    i = i + 2
  end

  local now = now_ms()
  local pl
  pl, e = claim_judge(k, lease, count, now, nil)
  if not pl then
    return err(e)
  end
  local lops = lanes_plan(pl.lt)
  local out = claim_write(k, pl, lease, now)
  lanes_apply(lops)
  return out
end)

-- ---------------------------------------------------------------------------
-- EMQ.STALLED.CHECK q [max_stalled [limit]] [EVERY interval_ms]

verb('emq_stalled_check', 'emq.stalled.check', -2, { 'allow-oom' }, function(k, args)
  local max, limit, every, e = '1', '100', nil, nil
  local i = 1
  while i <= #args and i <= 2 and string.upper(args[i]) ~= 'EVERY' do
    if i == 1 then
      max, e = int_arg(args[i], 1, 'max_stalled')
    else
      limit, e = int_arg(args[i], 1, 'limit')
    end
    if e then
      return err(e)
    end
    i = i + 1
  end
  if i <= #args then
    if string.upper(args[i]) ~= 'EVERY' or i + 1 ~= #args then
      return err(E_SYNTAX)
    end
    every, e = int_arg(args[i + 1], 1, 'interval_ms')
    if e then
      return err(e)
    end
    every = tonumber(every)
  end
  local now = now_ms()
  -- The sweep guard (docs/verbs.md §4.11.1): meta's swept_at within
  -- interval_ms before now answers at once, writing nothing.
  if every then
    local mk, at = read_field(k.meta, 'swept_at')
    if mk == WRONG then
      return err(E_WRONGTYPE)
    end
    if at then
      if not ll(at) then
        return err(E_HASH_NOT_INT)
      end
      local t = tonumber(at)
      if t <= now and now - t < every then
        return { {}, {} }
      end
    end
  end
  local expired = read_due(k, k.active, now, limit)
  if not expired then
    return err(E_WRONGTYPE)
  end
  local epoch = #expired > 0 and run_id() or nil
  -- The queue's lanes (docs/verbs.md §4.26.3): every exit gives its slot
  -- back (seam 2), every recovery enters its lane (seam 1).
  local lt
  if #expired > 0 then
    lt, e = lanes_read(k, now)
    if not lt then
      return err(e)
    end
  end
  local verdicts, n_recovered, n_dead = {}, 0, 0
  for i = 1, #expired do
    local row = expired[i].row
    if row.kind == ABSENT then
      verdicts[i] = { kind = 'ghost' }
    elseif row.kind == WRONG then
      return err(E_WRONGTYPE)
    elseif row.lane then
      return err(E_LANE)
    elseif row.lease_epoch ~= epoch then
      -- The lease crossed a restart (or a failover): exempt, uncounted.
      e = check_into_pending(lt, row) or check_leaves(lt, row)
      if e then
        return err(e)
      end
      verdicts[i] = { kind = 'exempt' }
      n_recovered = n_recovered + 1
    else
      local s
      s, e = next_count(row.stalled, 1)
      if not s then
        return err(e)
      end
      e = check_leaves(lt, row)
      if e then
        return err(e)
      end
      if cmp_ll(s, max) >= 0 then
        verdicts[i] = { kind = 'dead', s = s }
        n_dead = n_dead + 1
      else
        e = check_into_pending(lt, row)
        if e then
          return err(e)
        end
        verdicts[i] = { kind = 'recovered', s = s }
        n_recovered = n_recovered + 1
      end
    end
  end
  if n_recovered > 0 and zset_kind(k.pending) == WRONG then
    return err(E_WRONGTYPE)
  end
  if n_dead > 0 then
    if zset_kind(k.dead) == WRONG then
      return err(E_WRONGTYPE)
    end
    e = counter_check(k.failed, n_dead)
    if e then
      return err(e)
    end
  end
  -- Retention (docs/verbs.md §4.21): the DEAD setting scores the deaths;
  -- the sweep trims both sets, up to limit members each.
  local r
  r, e = read_retain(k)
  if not r then
    return err(e)
  end
  local trim_done, trim_dead, dead_score = {}, {}, '0'
  if retain_on(r.completed) then
    if zset_kind(k.done) == WRONG then
      return err(E_WRONGTYPE)
    end
    trim_done = select_trim(k, k.done, r.completed, now, 0, false, tonumber(limit))
  end
  if retain_on(r.dead) then
    if zset_kind(k.dead) == WRONG then
      return err(E_WRONGTYPE)
    end
    trim_dead = select_trim(k, k.dead, r.dead, now, n_dead, true, tonumber(limit))
    dead_score = score_str(now)
  end
  -- The seams' lane state, in the native plan's order.
  for i = 1, #expired do
    local v, row = verdicts[i], expired[i].row
    if v.kind ~= 'ghost' then
      v.slot = lane_leaves(lt, row)
      if v.kind ~= 'dead' then
        v.pkey = lane_into(lt, k, expired[i].id, row, row_priority(row))
      end
    end
  end
  local fx
  for i = 1, #expired do
    if verdicts[i].kind == 'dead' and expired[i].row.parent then
      fx = fx or flow_new(now, gone_of(gone_of({}, trim_done), trim_dead), lt)
      flow_end(fx, k, expired[i].row.parent, expired[i].id, 'dead', 'stalled')
    end
  end
  flow_into(fx, k)
  local lops = lanes_plan(lt)

  local recovered, dead = {}, {}
  for i = 1, #expired do
    local id, rk, v = expired[i].id, expired[i].key, verdicts[i]
    redis.call('ZREM', k.active, id)
    if v.slot then
      redis.call('HDEL', rk, 'lane_slot')
    end
    if v.kind == 'exempt' then
      redis.call('HSET', rk, 'state', 'pending')
      redis.call('ZADD', v.pkey, string.format('%d', row_priority(expired[i].row)), id)
      recovered[#recovered + 1] = id
    elseif v.kind == 'recovered' then
      redis.call('HSET', rk, 'state', 'pending', 'stalled', v.s)
      redis.call('ZADD', v.pkey, string.format('%d', row_priority(expired[i].row)), id)
      recovered[#recovered + 1] = id
    elseif v.kind == 'dead' then
      redis.call('HSET', rk, 'stalled', v.s, 'state', 'dead', 'last_error', 'stalled', 'finished_at', score_str(now))
      redis.call('ZADD', k.dead, dead_score, id)
      redis.call('HINCRBY', k.failed, 'count', '1')
      dead[#dead + 1] = id
    end
  end
  if every then
    redis.call('HSET', k.meta, 'swept_at', score_str(now))
  end
  for i = 1, #recovered do
    event(k, 'stalled', recovered[i])
  end
  for i = 1, #dead do
    event(k, 'dead', dead[i])
  end
  write_trim(k, k.done, trim_done)
  write_trim(k, k.dead, trim_dead)
  flow_write(fx, k)
  lanes_apply(lops)
  return { recovered, dead }
end)

-- ---------------------------------------------------------------------------
-- EMQ.PROMOTE q [limit]

verb('emq_promote', 'emq.promote', -2, { 'allow-oom' }, function(k, args)
  if #args > 1 then
    return err(E_SYNTAX)
  end
  local limit, e = '100', nil
  if #args == 1 then
    limit, e = int_arg(args[1], 1, 'limit')
    if not limit then
      return err(e)
    end
  end
  local now = now_ms()
  local due = read_due(k, k.schedule, now, limit)
  if not due then
    return err(E_WRONGTYPE)
  end
  if #due == 0 then
    return 0
  end
  local lt
  lt, e = lanes_read(k, now)
  if not lt then
    return err(e)
  end
  local promoted
  promoted, e = judge_promotions(due, lt, k)
  if not promoted then
    return err(e)
  end
  if #promoted > 0 and zset_kind(k.pending) == WRONG then
    return err(E_WRONGTYPE)
  end
  local lops = lanes_plan(lt)
  write_promotions(k, due)
  lanes_apply(lops)
  return #promoted
end)

-- ---------------------------------------------------------------------------
-- EMQ.REPROCESS q id [RESET]

-- reprocess_judge is EMQ.REPROCESS's read pass and judgement for one id
-- (docs/verbs.md §4.13): the row key, or nil and the refusal.
-- EMQ.REPROCESS.ALL judges each job through it (§4.24).
-- lt is the queue's lane state (nil: unreadable, lerr the refusal).
local function reprocess_judge(k, id, fx, lt, lerr)
  local rk = k.job .. id
  local dk, in_dead = member(k.dead, id)
  if dk == WRONG then
    return nil, E_WRONGTYPE
  end
  local row = read_row(rk)
  if not in_dead then
    -- neither a dead member nor a row: no such job (docs/verbs.md §4.13)
    if row.kind == ABSENT then
      return nil, E_GONE
    end
    return nil, E_NOT_DEAD
  elseif row.kind == WRONG then
    return nil, E_WRONGTYPE
  elseif row.kind == ABSENT then
    return nil, E_GONE
  elseif row.lane then
    return nil, E_LANE
  elseif zset_kind(k.pending) == WRONG then
    return nil, E_WRONGTYPE
  elseif not lt then
    return nil, lerr
  end
  local e = check_into_pending(lt, row)
  if e then
    return nil, e
  end
  if fx and row.parent then
    -- A dead flow child (docs/verbs.md §4.25.3): reopen or refuse.
    e = flow_reopen(fx, k, row.parent, id)
    if e and not fx.bulk then
      return nil, e
    end
  end
  return rk, row
end

-- reprocess_write is EMQ.REPROCESS's plan for one judged job.
-- (pkey: the pending set of its lane, from lane_into; prio its priority).
local function reprocess_write(k, id, rk, reset, pkey, prio)
  redis.call('ZREM', k.dead, id)
  if reset then
    redis.call('HDEL', rk, 'last_error', 'failures', 'stalled')
  else
    redis.call('HDEL', rk, 'last_error')
  end
  redis.call('HSET', rk, 'state', 'pending')
  redis.call('ZADD', pkey, string.format('%d', prio), id)
end

verb('emq_reprocess', 'emq.reprocess', -3, { 'allow-oom' }, function(k, args)
  if #args > 2 or (#args == 2 and string.upper(args[2]) ~= 'RESET') then
    return err(E_SYNTAX)
  end
  local id, reset = args[1], #args == 2
  local now = now_ms()
  local lt, e = lanes_read(k, now)
  local fx = flow_new(now, nil, lt)
  local rk, row = reprocess_judge(k, id, fx, lt, e)
  if not rk then
    return err(row)
  end
  local pkey = lane_into(lt, k, id, row, row_priority(row))
  local lops = lanes_plan(lt)
  reprocess_write(k, id, rk, reset, pkey, row_priority(row))
  flow_write(fx, k)
  lanes_apply(lops)
  event(k, 'reprocessed', id)
  return 1
end)

-- ---------------------------------------------------------------------------
-- EMQ.REMOVE q id

-- remove_judge is EMQ.REMOVE's read pass and judgement for one id
-- (docs/verbs.md §4.15): what to remove, or nil and the refusal.
-- EMQ.REMOVE.ALL judges each job through it (§4.24).
local function remove_judge(k, id)
  local rk = k.job .. id
  local ak, in_active = member(k.active, id)
  if ak == WRONG then
    return nil, E_WRONGTYPE
  elseif in_active then
    return nil, E_ACTIVE
  end
  local row = read_row(rk)
  if row.kind == WRONG then
    return nil, E_WRONGTYPE
  elseif row.kind == OK and row.lane then
    return nil, E_LANE
  end
  local pk, in_pending = member(k.pending, id)
  local sk, in_schedule = member(k.schedule, id)
  local dk, in_dead = member(k.dead, id)
  local ck, in_done = member(k.done, id)
  local wk, in_waiting = member(k.waiting, id)
  if pk == WRONG or sk == WRONG or dk == WRONG or ck == WRONG or wk == WRONG then
    return nil, E_WRONGTYPE
  end
  -- A pending job of a lane is in its lane's set (docs/verbs.md §4.26.4).
  local lane, lanepend, in_lanepend = lane_of(row), nil, false
  if row.kind == OK and lane ~= DEFAULT_LANE then
    local lk
    lanepend = k.lanep .. lane .. ':pending'
    lk, in_lanepend = member(lanepend, id)
    if lk == WRONG then
      return nil, E_WRONGTYPE
    end
  end
  local r = { id = id, rk = rk, row = row.kind == OK, pending = in_pending, schedule = in_schedule,
    dead = in_dead, done = in_done, waiting = in_waiting, children = row.children,
    parent = row.kind == OK and row.parent or nil, lane = lane, lanepend = lanepend, in_lanepend = in_lanepend }
  r.any = in_pending or in_schedule or in_dead or in_done or in_waiting or in_lanepend or r.row
  return r
end

-- remove_leaves records r's job leaving the pending set of its lane (the
-- default one, or its lane's) in lt (removeLeaves), so the lanes are right
-- at once (docs/verbs.md §4.26.4). Returns the refusal text or nil.
local function remove_leaves(lt, r)
  local e
  if r.pending then
    e = lane_leaves_pending(lt, DEFAULT_LANE)
  end
  if not e and r.in_lanepend then
    e = lane_leaves_pending(lt, r.lane)
  end
  return e
end

-- remove_flows runs the flow seam for judged removals rs (docs/verbs.md
-- §4.25.2): a removed child has ended; a parent removed by the same call
-- is gone.
local function remove_flows(k, rs, lt)
  local fx
  for _, r in ipairs(rs) do
    if r.parent then
      if not fx then
        local gone = {}
        for _, x in ipairs(rs) do
          if x.row then
            gone[x.rk] = true
          end
        end
        fx = flow_new(lt.now, gone, lt)
      end
      flow_end(fx, k, r.parent, r.id, 'removed', nil)
    end
  end
  flow_into(fx, k)
  return fx
end

-- remove_write applies one judged removal: true when it removed anything.
local function remove_write(k, r)
  local n = 0
  if r.pending then
    n = n + redis.call('ZREM', k.pending, r.id)
  end
  if r.in_lanepend then
    n = n + redis.call('ZREM', r.lanepend, r.id)
  end
  if r.schedule then
    n = n + redis.call('ZREM', k.schedule, r.id)
  end
  if r.dead then
    n = n + redis.call('ZREM', k.dead, r.id)
  end
  if r.done then
    n = n + redis.call('ZREM', k.done, r.id)
  end
  if r.waiting then
    n = n + redis.call('ZREM', k.waiting, r.id)
  end
  if r.row then
    n = n + redis.call('DEL', r.rk)
    if r.children then
      -- A flow parent's roster goes with its row (docs/verbs.md §4.25.4).
      redis.call('DEL', k.flow .. r.id, k.flow .. r.id .. ':out')
    end
  end
  return n > 0
end

verb('emq_remove', 'emq.remove', 3, { 'allow-oom' }, function(k, args)
  local id = args[1]
  local r, e = remove_judge(k, id)
  if not r then
    return err(e)
  end
  if not r.any then
    return 0
  end
  local lt
  lt, e = lanes_read(k, now_ms())
  if lt then
    e = remove_leaves(lt, r)
  end
  if e then
    return err(e)
  end
  local fx = remove_flows(k, { r }, lt)
  local lops = lanes_plan(lt)
  remove_write(k, r)
  event(k, 'removed', id)
  flow_write(fx, k)
  lanes_apply(lops)
  return 1
end)

-- ---------------------------------------------------------------------------
-- The operator bulk actions (docs/verbs.md §4.24): the first LIMIT members
-- of one set, each judged by its per-job verb's judgement, all before the
-- first write; one refusal refuses the whole call. Reply {done, left}.

local BULK_DEFAULT, BULK_MAX = '1000', 10000
local E_BULK_LIMIT = 'ERR limit must be at most 10000'
local E_REMOVE_STATE = 'ERR state must be one of pending, scheduled, dead, completed'
local E_NOT_SCHEDULED = 'EMQSTATE job is not scheduled'

local E_LANE_STATE = 'ERR LANE applies to state pending only'

-- lane_option judges a LANE option's value for a verb of state
-- (laneOption, docs/verbs.md §4.26.6): LANE only with state pending, a
-- valid lane name. Returns the refusal text or nil.
local function lane_option(state, lane)
  if string.upper(state) ~= 'PENDING' then
    return E_LANE_STATE
  end
  if not valid_lane(lane) then
    return E_LANE_NAME
  end
  return nil
end

-- walk_pending calls f with each set a pending listing walks, in order,
-- until f answers false (walkPending, docs/verbs.md §4.26.6): lane nil is
-- every lane (the default lane's set, then each other lane of lanes:known
-- by rank, read 100 names at a time so a first page reads few), a name
-- that lane's set. Each set is { key, lane }. Returns the refusal (nil:
-- none): lanes:known not a sorted set.
local function walk_pending(k, lane, f)
  if lane == DEFAULT_LANE then
    f({ key = k.pending, lane = DEFAULT_LANE })
    return nil
  elseif lane then
    f({ key = k.lanep .. lane .. ':pending', lane = lane })
    return nil
  end
  local n = redis.pcall('ZCARD', k.lanes_known)
  if type(n) == 'table' then
    return E_WRONGTYPE
  end
  if not f({ key = k.pending, lane = DEFAULT_LANE }) then
    return nil
  end
  for from = 0, n - 1, 100 do
    for _, name in ipairs(redis.call('ZRANGE', k.lanes_known, from, from + 99)) do
      if name ~= DEFAULT_LANE and not f({ key = k.lanep .. name .. ':pending', lane = name }) then
        return nil
      end
    end
  end
  return nil
end

-- bulk_opts parses the options from args[from]: LIMIT n, RESET when
-- with_reset, and LANE name when lane_state (the verb's state word) is
-- given, each at most once, in any order. Returns the limit (a canonical
-- string), reset and the lane (nil: none), or nil and the refusal.
local function bulk_opts(args, from, with_reset, lane_state)
  local limit, seen, reset, lane = BULK_DEFAULT, false, false, nil
  local i = from
  while i <= #args do
    local w = string.upper(args[i])
    if lane_state and w == 'LANE' then
      if lane or i + 1 > #args then
        return nil, E_SYNTAX
      end
      local e = lane_option(lane_state, args[i + 1])
      if e then
        return nil, e
      end
      lane = args[i + 1]
      i = i + 1
    elseif with_reset and w == 'RESET' then
      if reset then
        return nil, E_SYNTAX
      end
      reset = true
    elseif w == 'LIMIT' then
      if seen or i + 1 > #args then
        return nil, E_SYNTAX
      end
      seen = true
      local v, e = int_arg(args[i + 1], 1, 'limit')
      if not v then
        return nil, e
      end
      if #v > 5 or tonumber(v) > BULK_MAX then
        return nil, E_BULK_LIMIT
      end
      limit = v
      i = i + 1
    else
      return nil, E_SYNTAX
    end
    i = i + 1
  end
  return limit, reset, lane
end

-- bulk_head is the first limit members of the sorted set key in its order
-- (ZRANGE key 0 limit-1), or nil when key is not a sorted set.
local function bulk_head(key, limit)
  if zset_kind(key) == WRONG then
    return nil
  end
  return redis.call('ZRANGE', key, 0, tonumber(limit) - 1)
end

-- EMQ.REPROCESS.ALL q [RESET] [LIMIT n]
verb('emq_reprocess_all', 'emq.reprocess.all', -2, { 'allow-oom' }, function(k, args)
  local limit, reset = bulk_opts(args, 1, true)
  if not limit then
    return err(reset)
  end
  local ids = bulk_head(k.dead, limit)
  if not ids then
    return err(E_WRONGTYPE)
  end
  local plan, rows, pkeys = {}, {}, {}
  local now = now_ms()
  local lt
  if #ids > 0 then
    local e
    lt, e = lanes_read(k, now)
    if not lt then
      return err(e)
    end
  end
  -- Dead flow children reopen waiting parents; a dead parent does not
  -- refuse the bulk call (docs/verbs.md §4.25.3).
  local fx = flow_new(now, nil, lt)
  fx.bulk = true
  for i = 1, #ids do
    local rk = k.job .. ids[i]
    if hash_kind(rk) == ABSENT then
      plan[i] = false -- a ghost: dropped, not counted
    else
      plan[i], rows[i] = reprocess_judge(k, ids[i], fx, lt)
      if not plan[i] then
        return err(rows[i])
      end
    end
  end
  for i = 1, #ids do
    if plan[i] then
      pkeys[i] = lane_into(lt, k, ids[i], rows[i], row_priority(rows[i]))
    end
  end
  local lops = lanes_plan(lt)
  local done = 0
  for i = 1, #ids do
    if plan[i] then
      reprocess_write(k, ids[i], plan[i], reset, pkeys[i], row_priority(rows[i]))
      done = done + 1
    else
      redis.call('ZREM', k.dead, ids[i])
    end
  end
  flow_write(fx, k)
  lanes_apply(lops)
  for i = 1, #ids do
    if plan[i] then
      event(k, 'reprocessed', ids[i])
    end
  end
  return { done, redis.call('ZCARD', k.dead) }
end)

-- EMQ.REMOVE.ALL q (pending | scheduled | dead | completed) [LIMIT n] [LANE name]
-- State pending walks every lane's pending set as EMQ.LIST pending does,
-- or LANE's only (docs/verbs.md §4.26.6).
verb('emq_remove_all', 'emq.remove.all', -3, { 'allow-oom' }, function(k, args)
  local sets = { PENDING = k.pending, SCHEDULED = k.schedule, DEAD = k.dead, COMPLETED = k.done }
  local set = sets[string.upper(args[1])]
  if not set then
    return err(E_REMOVE_STATE)
  end
  local limit, e, lane = bulk_opts(args, 2, false, args[1])
  if not limit then
    return err(e)
  end
  local heads, total, want, werr = {}, 0, tonumber(limit), nil
  -- take reads one set of the walk: its size (for left) and, while the
  -- call has room, its first members.
  local function take(s)
    local n = redis.pcall('ZCARD', s.key)
    if type(n) == 'table' then
      werr = E_WRONGTYPE
      return false
    end
    total = total + n
    if n > 0 and #heads < want then
      for _, id in ipairs(redis.call('ZRANGE', s.key, 0, want - #heads - 1)) do
        heads[#heads + 1] = { id = id, set = s }
      end
    end
    return true
  end
  if set == k.pending then
    werr = walk_pending(k, lane, take) or werr
  else
    take({ key = set })
  end
  if werr then
    return err(werr)
  end
  -- Pending jobs leave their lanes (docs/verbs.md §4.26.4): the lane
  -- state is read when the first member that needs it is judged, as
  -- EMQ.REMOVE reads it after judging its job.
  local lt, lerr, lread
  local function lanes()
    if not lread then
      lread = true
      lt, lerr = lanes_read(k, now_ms())
    end
    return lt, lerr
  end
  local function leaves(name)
    local l, le = lanes()
    if not l then
      return le
    end
    return lane_leaves_pending(l, name)
  end
  -- A member of a lane's set its row does not place there (a ghost, a row
  -- of another lane) also leaves that set; an id taken from two sets is
  -- judged once, its later selections only leave their sets.
  local plan, taken = {}, {}
  for i, h in ipairs(heads) do
    local done = taken[h.id]
    if done then
      local r = { dup = true, id = h.id }
      if not done[h.set.key] then
        done[h.set.key] = true
        r.extra = h.set.key
        e = leaves(h.set.lane)
        if e then
          return err(e)
        end
      end
      plan[i] = r
    else
      local r
      r, e = remove_judge(k, h.id)
      if not r then
        return err(e)
      end
      if r.any then
        local l, le = lanes()
        if not l then
          return err(le)
        end
        e = remove_leaves(l, r)
        if e then
          return err(e)
        end
      end
      done = {}
      if r.pending then
        done[k.pending] = true
      end
      if r.in_lanepend then
        done[r.lanepend] = true
      end
      if h.set.lane and h.set.key ~= k.pending and not (r.in_lanepend and r.lanepend == h.set.key) then
        r.extra, r.any = h.set.key, true
        done[h.set.key] = true
        e = leaves(h.set.lane)
        if e then
          return err(e)
        end
      end
      taken[h.id] = done
      plan[i] = r
    end
  end
  local judged = {}
  for i = 1, #plan do
    if not plan[i].dup then
      judged[#judged + 1] = plan[i]
    end
  end
  local fx = remove_flows(k, judged, lt)
  local lops = lanes_plan(lt)
  -- left: the members after the selected ones, as the sets stood (a flow
  -- parent the call releases into pending is not counted, as natively).
  local left = total - #heads
  local removed = {}
  for i = 1, #plan do
    local r = plan[i]
    local any = false
    if not r.dup then
      any = remove_write(k, r)
    end
    if r.extra then
      redis.call('ZREM', r.extra, r.id)
      any = not r.dup
    end
    if any then
      removed[#removed + 1] = r.id
    end
  end
  for i = 1, #removed do
    event(k, 'removed', removed[i])
  end
  flow_write(fx, k)
  lanes_apply(lops)
  return { #removed, left }
end)

-- EMQ.PROMOTE.ALL q [LIMIT n]: scheduled jobs to pending now, due or not.
verb('emq_promote_all', 'emq.promote.all', -2, { 'allow-oom' }, function(k, args)
  local limit, e = bulk_opts(args, 1, false)
  if not limit then
    return err(e)
  end
  local ids = bulk_head(k.schedule, limit)
  if not ids then
    return err(E_WRONGTYPE)
  end
  local due = {}
  for i = 1, #ids do
    due[i] = { id = ids[i], key = k.job .. ids[i], row = read_row(k.job .. ids[i]) }
  end
  local lt
  if #ids > 0 then
    lt, e = lanes_read(k, now_ms())
    if not lt then
      return err(e)
    end
  end
  local promoted
  promoted, e = judge_promotions(due, lt, k)
  if not promoted then
    return err(e)
  end
  if #promoted > 0 and zset_kind(k.pending) == WRONG then
    return err(E_WRONGTYPE)
  end
  local lops = lanes_plan(lt)
  write_promotions(k, due)
  lanes_apply(lops)
  return { #promoted, redis.call('ZCARD', k.schedule) }
end)

-- EMQ.PROMOTE.JOB q id: run one scheduled job now (docs/verbs.md §4.24.1).
verb('emq_promote_job', 'emq.promote.job', 3, { 'allow-oom' }, function(k, args)
  local id = args[1]
  local rk = k.job .. id
  local sk, in_sched = member(k.schedule, id)
  if sk == WRONG then
    return err(E_WRONGTYPE)
  end
  local row = read_row(rk)
  if not in_sched then
    if row.kind == ABSENT then
      return err(E_GONE)
    end
    return err(E_NOT_SCHEDULED)
  elseif row.kind == WRONG then
    return err(E_WRONGTYPE)
  elseif row.kind == ABSENT then
    return err(E_GONE)
  elseif row.lane then
    return err(E_LANE)
  elseif zset_kind(k.pending) == WRONG then
    return err(E_WRONGTYPE)
  end
  local lt, e = lanes_read(k, now_ms())
  if not lt then
    return err(e)
  end
  e = check_into_pending(lt, row)
  if e then
    return err(e)
  end
  local pkey = lane_into(lt, k, id, row, row_priority(row))
  local lops = lanes_plan(lt)
  redis.call('ZREM', k.schedule, id)
  redis.call('HSET', rk, 'state', 'pending')
  redis.call('ZADD', pkey, string.format('%d', row_priority(row)), id)
  lanes_apply(lops)
  event(k, 'promoted', id)
  return 1
end)

-- ---------------------------------------------------------------------------
-- EMQ.RETAIN q [(COMPLETED | DEAD) max_count max_age_ms] (docs/verbs.md §4.21)

verb('emq_retain', 'emq.retain', -2, { 'allow-oom' }, function(k, args)
  if #args ~= 0 and #args ~= 3 then
    return err(E_SYNTAX)
  end
  if #args == 0 then
    local r, e = read_retain(k)
    if not r then
      return err(e)
    end
    return {
      map = {
        completed_max_count = r.completed[1],
        completed_max_age_ms = r.completed[2],
        dead_max_count = r.dead[1],
        dead_max_age_ms = r.dead[2],
      },
    }
  end
  local kind = string.upper(args[1])
  local fc, fa
  if kind == 'COMPLETED' then
    fc, fa = 'completed_max_count', 'completed_max_age_ms'
  elseif kind == 'DEAD' then
    fc, fa = 'dead_max_count', 'dead_max_age_ms'
  else
    return err('ERR kind must be COMPLETED or DEAD')
  end
  local c, e = int_arg(args[2], 0, 'max_count')
  if not c then
    return err(e)
  end
  local a
  a, e = int_arg(args[3], 0, 'max_age_ms')
  if not a then
    return err(e)
  end
  if hash_kind(k.meta) == WRONG then
    return err(E_WRONGTYPE)
  end
  local cur = redis.call('HMGET', k.meta, fc, fa)
  local set, del = {}, {}
  for i, f in ipairs({ { fc, c }, { fa, a } }) do
    if f[2] == '0' then
      if cur[i] then
        del[#del + 1] = f[1]
      end
    elseif cur[i] ~= f[2] then
      set[#set + 1] = f[1]
      set[#set + 1] = f[2]
    end
  end
  if #set > 0 then
    redis.call('HSET', k.meta, unpack(set))
  end
  if #del > 0 then
    redis.call('HDEL', k.meta, unpack(del))
  end
  return redis.status_reply('OK')
end)

-- ---------------------------------------------------------------------------
-- EMQ.PAUSE q, EMQ.RESUME q

verb('emq_pause', 'emq.pause', 2, { 'allow-oom' }, function(k)
  if hash_kind(k.meta) == WRONG then
    return err(E_WRONGTYPE)
  end
  redis.call('HSET', k.meta, 'paused', '1')
  return redis.status_reply('OK')
end)

verb('emq_resume', 'emq.resume', 2, { 'allow-oom' }, function(k)
  local mk, paused = read_field(k.meta, 'paused')
  if mk == WRONG then
    return err(E_WRONGTYPE)
  end
  if paused then
    redis.call('HDEL', k.meta, 'paused')
  end
  return redis.status_reply('OK')
end)

-- ---------------------------------------------------------------------------
-- EMQ.COUNTS q (a map: RESP3 map, RESP2 flat name/value array)

local function metric(key)
  local kind, v = read_field(key, 'count')
  if kind == WRONG then
    return nil, E_WRONGTYPE
  end
  if not v then
    return 0
  end
  if not ll(v) then
    return nil, E_HASH_NOT_INT
  end
  return tonumber(v)
end

-- ---------------------------------------------------------------------------
-- ---------------------------------------------------------------------------
-- EMQ.LANE q name [WEIGHT w] [MAX_ACTIVE n] [RATE count per_ms] [PAUSE | RESUME] [RESET]
-- (docs/verbs.md §4.26.1; cmdLane in internal/verbs/lanes_cmd.go).

-- lane_num is an option's value as a number; values above 2^53-1 are kept
-- as 2^53-1 (docs/cluster.md, Differences: lanes).
local function lane_num(v)
  return math.min(tonumber(v), MAX_SCORE)
end

verb('emq_lane', 'emq.lane', -4, {}, function(k, args)
  local name = args[1]
  if not valid_lane(name) then
    return err(E_LANE_NAME)
  end
  local a = {}
  local i = 2
  while i <= #args do
    local w, e = string.upper(args[i]), nil
    if w == 'RESET' and not a.reset then
      a.reset = true
      i = i + 1
    elseif (w == 'PAUSE' or w == 'RESUME') and not a.has_pause then
      a.has_pause, a.pause = true, w == 'PAUSE'
      i = i + 1
    else
      if w == 'WEIGHT' and not a.has_weight and i + 1 <= #args then
        a.has_weight = true
        local v = args[i + 1]
        if not ll(v) then
          e = E_NOT_INT
        else
          a.weight = tonumber(v)
          if a.weight < 1 or a.weight > MAX_LANE_WEIGHT then
            e = E_LANE_WEIGHT
          end
        end
        i = i + 2
      elseif w == 'MAX_ACTIVE' and not a.has_max and i + 1 <= #args then
        a.has_max = true
        local v
        v, e = int_arg(args[i + 1], 0, 'max_active')
        a.max_active = v and lane_num(v)
        i = i + 2
      elseif w == 'RATE' and not a.has_rate and i + 2 <= #args then
        a.has_rate = true
        local v
        v, e = int_arg(args[i + 1], 0, 'count')
        if v then
          a.rate_count = lane_num(v)
          v, e = int_arg(args[i + 2], 1, 'per_ms')
          a.rate_per = v and lane_num(v)
        end
        i = i + 3
      else
        e = E_SYNTAX
      end
      if e then
        return err(e)
      end
    end
  end
  local lt, e = lanes_read(k, now_ms())
  if not lt then
    return err(e)
  end
  local ls
  ls, e = lt_lane(lt, name)
  if not ls then
    return err(e)
  end
  local before = { ls.weight, ls.max_active, ls.rate_count, ls.rate_per, ls.paused }
  if a.reset then
    ls.weight, ls.max_active, ls.rate_count, ls.rate_per, ls.paused = 1, 0, 0, 0, false
  end
  if a.has_weight then
    ls.weight = a.weight
  end
  if a.has_max then
    ls.max_active = a.max_active
  end
  if a.has_rate then
    ls.rate_count, ls.rate_per = a.rate_count, a.rate_per
  end
  if a.has_pause then
    ls.paused = a.pause
  end
  if ls.rate_count == 0 then
    ls.rate_per = 0
  end
  local after = { ls.weight, ls.max_active, ls.rate_count, ls.rate_per, ls.paused }
  local changed = false
  for j = 1, 5 do
    if before[j] ~= after[j] then
      changed = true
    end
  end
  if changed or (not ls.existed and lane_configured(ls)) then
    ls.cfg_dirty = true
    if not ls.known and not lt.on then
      lt.turn_on = true
    end
    if ls.pend > 0 and not ls.existed then
      lane_joined(lt, ls)
    end
  end
  if ls.rate_count > 0 and ls.rate_per ~= before[4] then
    -- A new window: the log is judged against it from now on.
    lane_spent(lt, ls)
  end
  lanes_apply(lanes_plan(lt))
  return redis.status_reply('OK')
end)

-- ---------------------------------------------------------------------------
-- EMQ.LANES q [offset count] (docs/verbs.md §4.26.5): one map per lane of
-- a page of lanes:known (by name; EMQ.LIST's page arguments and errors,
-- §4.18: count 100 by default, at most 1000); an empty array for a queue
-- without lanes or past the end. Read-only.

verb('emq_lanes', 'emq.lanes', -2, { 'no-writes' }, function(k, args)
  local offset, count = 0, 100
  if #args == 2 then
    local v, e = int_arg(args[1], 0, 'offset')
    if v then
      offset = tonumber(v)
      v, e = int_arg(args[2], 1, 'count')
      if v then
        count = tonumber(v)
        if count > 1000 then
          e = 'ERR count must be at most 1000'
        end
      end
    end
    if e then
      return err(e)
    end
  elseif #args ~= 0 then
    return err(E_SYNTAX)
  end
  local lt, e = lanes_read(k, now_ms())
  if not lt then
    return err(e)
  end
  local out = {}
  if not lt.on or offset >= lt.known_n then
    return out
  end
  for _, name in ipairs(redis.call('ZRANGE', k.lanes_known, offset, offset + count - 1)) do
    local ls
    ls, e = lt_lane(lt, name)
    if not ls then
      return err(e)
    end
    local state = 'ready'
    if ls.pend == 0 then
      state = 'idle'
    elseif ls.paused then
      state = 'paused'
    elseif lane_full(ls) then
      state = 'full'
    elseif lane_limited(ls) then
      state = 'limited'
    end
    out[#out + 1] = {
      map = {
        lane = ls.name,
        state = state,
        pending = ls.pend,
        active = ls.active,
        weight = ls.weight,
        max_active = ls.max_active,
        rate_count = ls.rate_count,
        rate_per_ms = ls.rate_per,
        paused = ls.paused and 1 or 0,
        pass = ls.pass,
      },
    }
  end
  return out
end)

-- head_age is the age at now of the first member of the pending set at
-- key (EMQ.COUNTS latency_ms, docs/verbs.md §4.16): 0 when the set is
-- empty or not a sorted set, or the row's enqueued_at is unreadable or in
-- the future.
local function head_age(k, key, now)
  local head = redis.pcall('ZRANGE', key, 0, 0)
  if head.err or not head[1] then
    return 0
  end
  local at = redis.pcall('HGET', k.job .. head[1], 'enqueued_at')
  if type(at) == 'string' and ll(at) then
    local t = tonumber(at)
    if t < now then
      return now - t
    end
  end
  return 0
end

verb('emq_counts', 'emq.counts', 2, { 'no-writes' }, function(k)
  local sizes = {}
  for i, key in ipairs({ k.pending, k.active, k.schedule, k.dead }) do
    local n = redis.pcall('ZCARD', key)
    if type(n) == 'table' then
      return err(E_WRONGTYPE)
    end
    sizes[i] = n
  end
  local done, e = metric(k.completed)
  if not done then
    return err(e)
  end
  local failed
  failed, e = metric(k.failed)
  if not failed then
    return err(e)
  end
  local retained = redis.pcall('ZCARD', k.done)
  if type(retained) == 'table' then
    return err(E_WRONGTYPE)
  end
  local waiting = redis.pcall('ZCARD', k.waiting)
  if type(waiting) == 'table' then
    return err(E_WRONGTYPE)
  end
  -- pending counts every lane's pending jobs (docs/verbs.md §4.26.5).
  local pending = sizes[1] + lanes_pending(k)
  -- latency_ms: the largest age of a job the next claim in its lane takes
  -- (docs/verbs.md §4.16): the heads of pending and of each lane's
  -- pending set, 0 when unknown.
  local now = now_ms()
  local latency = head_age(k, k.pending, now)
  local names = redis.pcall('ZRANGE', k.lanes_known, 0, -1)
  if not names.err then
    for _, name in ipairs(names) do
      if name ~= DEFAULT_LANE then
        latency = math.max(latency, head_age(k, k.lanep .. name .. ':pending', now))
      end
    end
  end
  return {
    map = {
      retained = retained,
      pending = pending,
      active = sizes[2],
      scheduled = sizes[3],
      dead = sizes[4],
      completed = done,
      failed = failed,
      latency_ms = latency,
      waiting = waiting,
    },
  }
end)

-- ---------------------------------------------------------------------------
-- EMQ.JOB q id (docs/verbs.md §4.17): nil, or a map of the row's fields
-- with lease_deadline_ms and run_at_ms

-- job_map is EMQ.JOB's map of a row read with HGETALL (all), with the id's
-- scores in active and schedule (nil: not a member).
local function job_map(all, deadline, run_at)
  local m = {}
  for i = 1, #all, 2 do
    m[all[i]] = all[i + 1]
  end
  if deadline then
    m.lease_deadline_ms = format_ms(deadline)
  end
  if run_at then
    m.run_at_ms = format_ms(run_at)
  end
  return { map = m }
end

verb('emq_job', 'emq.job', 3, { 'no-writes' }, function(k, args)
  local id = args[1]
  local all = redis.pcall('HGETALL', k.job .. id)
  if all.err then
    return err(E_WRONGTYPE)
  end
  if #all == 0 then
    return false
  end
  local ak, _, deadline = member(k.active, id)
  if ak == WRONG then
    return err(E_WRONGTYPE)
  end
  local sk, _, run_at = member(k.schedule, id)
  if sk == WRONG then
    return err(E_WRONGTYPE)
  end
  return job_map(all, deadline, run_at)
end)

-- ---------------------------------------------------------------------------
-- EMQ.FLOW q parent_id parent_payload [ON_CHILD_FAIL policy] CHILD cq cid
-- payload [UNDER uq uid] [ON_CHILD_FAIL policy] [CHILD ...]
-- (docs/verbs.md §4.25.1). In a cluster every job of the flow must be in
-- q: another queue's keys are in another slot (docs/cluster.md §7).

local E_FLOW_POLICY = 'ERR ON_CHILD_FAIL must be fail, ignore or continue'
local E_FLOW_POLICY_LEAF = 'ERR ON_CHILD_FAIL given for a job without children'
local E_FLOW_UNDER = "ERR UNDER must name the flow's parent or an earlier child"
local E_FLOW_DEPTH = 'ERR flow depth must be at most 8'
local E_FLOW_SLOT = "ERR in a cluster every job of a flow must be in the parent's queue (another queue's keys are in another slot; docs/cluster.md §7)"

local FLOW_POLICIES = { FAIL = 'fail', IGNORE = 'ignore', CONTINUE = 'continue' }

verb('emq_flow', 'emq.flow', -8, {}, function(k, args)
  local nodes = { { q = k.name, id = args[1], payload = args[2], up = 0, depth = 0, kids = {} } }
  local byref = { [k.name .. ':' .. args[1]] = 1 }
  local cur, i = 1, 3
  while i <= #args do
    local w = string.upper(args[i])
    if w == 'ON_CHILD_FAIL' then
      if i + 1 > #args or nodes[cur].policy then
        return err(E_SYNTAX)
      end
      local pol = FLOW_POLICIES[string.upper(args[i + 1])]
      if not pol then
        return err(E_FLOW_POLICY)
      end
      nodes[cur].policy = pol
      i = i + 2
    elseif w == 'UNDER' and cur > 1 then
      if i + 2 > #args or nodes[cur].under then
        return err(E_SYNTAX)
      end
      if not valid_queue(args[i + 1]) then
        return err(E_QUEUE)
      end
      local up = byref[args[i + 1] .. ':' .. args[i + 2]]
      if not up or up == cur then
        return err(E_FLOW_UNDER)
      end
      local n = nodes[cur]
      n.under = true
      table.remove(nodes[1].kids)
      n.up, n.depth = up, nodes[up].depth + 1
      if n.depth > MAX_FLOW_DEPTH then
        return err(E_FLOW_DEPTH)
      end
      table.insert(nodes[up].kids, cur)
      i = i + 3
    elseif w == 'CHILD' then
      if i + 3 > #args then
        return err(E_SYNTAX)
      end
      if not valid_queue(args[i + 1]) then
        return err(E_QUEUE)
      end
      local ref = args[i + 1] .. ':' .. args[i + 2]
      if byref[ref] then
        return err('ERR job ' .. ref .. ' is named twice in the flow')
      end
      cur = #nodes + 1
      nodes[cur] = { q = args[i + 1], id = args[i + 2], payload = args[i + 3], up = 1, depth = 1, kids = {} }
      byref[ref] = cur
      table.insert(nodes[1].kids, cur)
      i = i + 4
    else
      return err(E_SYNTAX)
    end
  end
  if #nodes == 1 then
    return err(E_SYNTAX)
  end
  for _, n in ipairs(nodes) do
    if n.policy and #n.kids == 0 then
      return err(E_FLOW_POLICY_LEAF)
    end
  end
  for _, n in ipairs(nodes) do
    if not valid_id(n.id) then
      return err(E_KIND)
    end
  end
  for _, n in ipairs(nodes) do
    if n.q ~= k.name then
      return err(E_FLOW_SLOT)
    end
  end
  local function refs(n)
    local out = {}
    for j, c in ipairs(n.kids) do
      out[j] = nodes[c].q .. ':' .. nodes[c].id
    end
    return out
  end
  local root = nodes[1]
  local rk = k.job .. root.id
  local kind = hash_kind(rk)
  if kind == WRONG then
    return err(E_WRONGTYPE)
  end
  local rref = k.name .. ':' .. root.id
  if kind == OK then
    local v = redis.call('HMGET', rk, 'children', 'on_child_fail')
    if not v[1] then
      return err('EMQFLOW job ' .. rref .. ' exists and is not this flow')
    end
    local rok = hash_kind(k.flow .. root.id)
    if rok == WRONG then
      return err(E_WRONGTYPE)
    end
    local have = redis.call('HKEYS', k.flow .. root.id)
    local want = refs(root)
    local same = #have == #want and v[2] == (root.policy or 'fail')
    for j = 1, #want do
      if have[j] ~= want[j] then
        same = false
      end
    end
    if not same then
      return err('EMQFLOW job ' .. rref .. ' exists and is not this flow')
    end
    return #nodes
  end
  local stale = {}
  local fnow = now_ms()
  local lt
  for j, n in ipairs(nodes) do
    if j > 1 then
      local ck = hash_kind(k.job .. n.id)
      if ck == WRONG then
        return err(E_WRONGTYPE)
      elseif ck == OK then
        return err('EMQFLOW job ' .. n.q .. ':' .. n.id .. ' already exists')
      end
    end
    local set = k.pending
    if #n.kids > 0 then
      set = k.waiting
      for _, key in ipairs({ k.flow .. n.id, k.flow .. n.id .. ':out' }) do
        local fk = hash_kind(key)
        if fk == WRONG then
          return err(E_WRONGTYPE)
        elseif fk == OK then
          stale[#stale + 1] = key
        end
      end
    end
    if zset_kind(set) == WRONG then
      return err(E_WRONGTYPE)
    end
    if #n.kids == 0 and not lt then
      -- A leaf enters pending through seam 1: with its queue's lanes.
      local e
      lt, e = lanes_read(k, fnow)
      if not lt then
        return err(e)
      end
      if lt.on then
        local _, le = lt_lane(lt, DEFAULT_LANE)
        if le then
          return err(le)
        end
      end
    end
  end
  for _, n in ipairs(nodes) do
    if #n.kids == 0 then
      lane_into(lt, k, n.id, nil, 0)
    end
  end
  local lops = lanes_plan(lt)
  local now = score_str(fnow)
  for _, key in ipairs(stale) do
    redis.call('DEL', key)
  end
  for _, n in ipairs(nodes) do
    local fv = { 'attempts', '0', 'payload', n.payload, 'enqueued_at', now }
    if n.up > 0 then
      fv[#fv + 1] = 'parent'
      fv[#fv + 1] = nodes[n.up].q .. ':' .. nodes[n.up].id
    end
    if #n.kids == 0 then
      redis.call('HSET', k.job .. n.id, 'state', 'pending', unpack(fv))
      redis.call('ZADD', k.pending, '0', n.id)
    else
      local cnt = tostring(#n.kids)
      redis.call('HSET', k.job .. n.id, 'state', 'waiting', unpack(fv))
      redis.call('HSET', k.job .. n.id, 'children', cnt, 'children_left', cnt, 'on_child_fail', n.policy or 'fail')
      redis.call('ZADD', k.waiting, '0', n.id)
      local ros = {}
      for _, r in ipairs(refs(n)) do
        ros[#ros + 1] = r
        ros[#ros + 1] = 'pending'
      end
      redis.call('HSET', k.flow .. n.id, unpack(ros))
    end
  end
  lanes_apply(lops)
  for _, n in ipairs(nodes) do
    event(k, 'enqueued', n.id)
  end
  return #nodes
end)

-- EMQ.CHILDREN q parent_id (docs/verbs.md §4.25.5)
verb('emq_children', 'emq.children', 3, { 'no-writes' }, function(k, args)
  local pid = args[1]
  local rk, ok_ = k.flow .. pid, k.flow .. pid .. ':out'
  local kind = hash_kind(rk)
  if kind == WRONG or hash_kind(ok_) == WRONG then
    return err(E_WRONGTYPE)
  end
  if kind == ABSENT then
    return false
  end
  local all = redis.call('HGETALL', rk)
  local out = {}
  for j = 1, #all, 2 do
    local f, v = all[j], all[j + 1]
    local q, cid = split_ref(f)
    if not q then
      q, cid = '', f
    end
    local m = { queue = q, id = cid, state = v }
    if v == 'pending' and q == k.name then
      local st = redis.pcall('HGET', k.job .. cid, 'state')
      if type(st) == 'string' then
        m.state = st
      end
    end
    local o = redis.call('HGET', ok_, f)
    if o then
      if v == 'completed' then
        m.result = o
      else
        m.error = o
      end
    end
    out[#out + 1] = { map = m }
  end
  return out
end)


-- ---------------------------------------------------------------------------
-- EMQ.WAIT q id timeout_ms (docs/verbs.md §4.23): a function cannot block
-- (docs/cluster.md §3), so it answers at once: the outcome of a finished
-- job, EMQSTALE job gone for no row, and the nil array where emqd waits.

verb('emq_wait', 'emq.wait', 4, { 'no-writes' }, function(k, args)
  local _, e = int_arg(args[2], 0, 'timeout_ms')
  if e then
    return err(e)
  end
  local row = k.job .. args[1]
  local kind = hash_kind(row)
  if kind == WRONG then
    return err(E_WRONGTYPE)
  end
  if kind == ABSENT then
    return err(E_GONE)
  end
  local v = redis.call('HMGET', row, 'state', 'result', 'last_error', 'finished_at')
  if v[1] ~= 'completed' and v[1] ~= 'dead' then
    return false
  end
  -- HMGET's false (no field) replies nil, as emqd's nil entries.
  return { map = { state = v[1], result = v[2], error = v[3], finished_at = v[4] } }
end)

-- ---------------------------------------------------------------------------
-- EMQ.LIST q state [offset count] [LANE name] (docs/verbs.md §4.18): one
-- page of the jobs of one state, each [id, EMQ.JOB's map] ([id, nil] for
-- a ghost). State pending walks every lane's pending set (the default
-- lane's, then the others' by name) or LANE's only (§4.26.6).

local LIST_SETS = { PENDING = 'pending', ACTIVE = 'active', SCHEDULED = 'schedule', DEAD = 'dead', COMPLETED = 'done', WAITING = 'waiting' }
local LIST_MAX = '1000'

verb('emq_list', 'emq.list', -3, { 'no-writes' }, function(k, args)
  local set = LIST_SETS[string.upper(args[1])]
  if not set then
    return err('ERR state must be one of pending, active, scheduled, dead, completed, waiting')
  end
  -- The shape first (the page, then LANE name), then the values.
  local rest, page, lane = #args - 1, nil, nil
  if rest == 0 then
  elseif rest == 2 and string.upper(args[2]) == 'LANE' then
    lane = 3
  elseif rest == 2 then
    page = 2
  elseif rest == 4 and string.upper(args[2]) ~= 'LANE' and string.upper(args[4]) == 'LANE' then
    page, lane = 2, 5
  else
    return err(E_SYNTAX)
  end
  local offset, count, e = '0', 100, nil
  if page then
    offset, e = int_arg(args[page], 0, 'offset')
    if not offset then
      return err(e)
    end
    local c
    c, e = int_arg(args[page + 1], 1, 'count')
    if not c then
      return err(e)
    end
    if cmp_ll(c, LIST_MAX) > 0 then
      return err('ERR count must be at most 1000')
    end
    count = tonumber(c)
  end
  if lane then
    e = lane_option(args[1], args[lane])
    if e then
      return err(e)
    end
    lane = args[lane]
  end
  local out, checked, werr = {}, false, nil
  local off = tonumber(offset)
  -- page reads one set of the walk: past it while off is at or past its
  -- end, else its members from off until the page is full.
  local function page(s)
    local size = redis.pcall('ZCARD', s.key)
    if type(size) == 'table' then
      werr = E_WRONGTYPE
      return false
    end
    if off >= size then
      off = off - size
      return true
    end
    local ids = redis.call('ZRANGE', s.key, off, off + count - #out - 1)
    off = 0
    for i = 1, #ids do
      local id = ids[i]
      local all = redis.pcall('HGETALL', k.job .. id)
      if all.err then
        werr = E_WRONGTYPE
        return false
      end
      if #all == 0 then
        out[#out + 1] = { id, false }
      else
        if not checked then
          checked = true
          if zset_kind(k.active) == WRONG or zset_kind(k.schedule) == WRONG then
            werr = E_WRONGTYPE
            return false
          end
        end
        local _, _, deadline = member(k.active, id)
        local _, _, run_at = member(k.schedule, id)
        out[#out + 1] = { id, job_map(all, deadline, run_at) }
      end
    end
    return #out < count
  end
  if set == 'pending' then
    werr = walk_pending(k, lane, page) or werr
  else
    page({ key = k[set] })
  end
  if werr then
    return err(werr)
  end
  return out
end)

-- ---------------------------------------------------------------------------
-- Schedules (docs/verbs.md §4.22): EMQ.SCHEDULE, .GET, .DEL, .LIST, .PAUSE,
-- .RESUME and .FIRE. A function cannot arm a timer, so emq_schedule_fire is
-- called by workers or the Go library's sweeper (docs/cluster.md §3); it
-- fires the due slots exactly as emqd's timer does, with the same ids, the
-- occurrences and the advance in one call (one atomic unit). Only EVERY
-- schedules: the library has no cron parser and no zone database, so CRON
-- is refused (docs/cluster.md, Differences "cron schedules").

local E_SCHED_NAME = 'ERR invalid schedule name'
local E_NO_SCHED = 'ERR no such schedule'
local E_SCHED_END = 'ERR end_ms must not be before start_ms'
local E_SCHED_SPACE = 'ERR schedule ids of the queue exhausted'
local E_SCHED_BAD = 'ERR schedule hash is malformed'
local E_CRON = 'ERR CRON schedules are not available in the cluster library (docs/cluster.md)'
local MAX_SID = 1048575 -- 2^20-1
local MAX_SLOT = 17592186044415 -- 2^44-1
local LATE_MS = 1000

local function valid_sched_name(n)
  return #n >= 1 and #n <= 128 and not string.find(n, '[^A-Za-z0-9._%-]')
end

-- occ_id is the id of the number slot*2^20 + sid (docs/verbs.md §4.22.3),
-- computed digit by digit in base 62 (the number passes 2^53).
local function occ_id(sid, slot)
  local d, n = {}, slot
  for i = 11, 1, -1 do
    local r = n % 62
    d[i] = r
    n = (n - r) / 62
  end
  local carry = sid
  for i = 11, 1, -1 do
    local v = d[i] * 1048576 + carry
    local r = v % 62
    d[i] = string.sub(B62, r + 1, r + 1)
    carry = (v - r) / 62
  end
  return 'JOB' .. table.concat(d)
end

local function num_field(m, f, min, need)
  local v = m[f]
  if v == nil then
    return nil, not need
  end
  if not ll(v) then
    return nil, false
  end
  local n = tonumber(v)
  return n, n >= min
end

-- read_sched reads a schedule's hash: the table, or false when absent,
-- or nil and the refusal.
local function read_sched(key, name)
  local all = redis.pcall('HGETALL', key)
  if all.err then
    return nil, E_WRONGTYPE
  end
  if #all == 0 then
    return false
  end
  local m = {}
  for i = 1, #all, 2 do
    m[all[i]] = all[i + 1]
  end
  local s, ok = { name = name, key = key }, nil
  s.sid, ok = num_field(m, 'sid', 1, true)
  if not ok or s.sid > MAX_SID then
    return nil, E_SCHED_BAD
  end
  if m.kind == 'cron' then
    return nil, E_CRON
  elseif m.kind ~= 'every' then
    return nil, E_SCHED_BAD
  end
  s.every, ok = num_field(m, 'every_ms', 1, true)
  if not ok then
    return nil, E_SCHED_BAD
  end
  s.anchor, ok = num_field(m, 'anchor_ms', 0, true)
  if not ok then
    return nil, E_SCHED_BAD
  end
  s.payload = m.payload or ''
  for _, f in ipairs({ { 'start', 'start_ms', 0 }, { 'end_', 'end_ms', 0 }, { 'limit', 'limit', 1 },
    { 'next', 'next_ms', 0 }, { 'last', 'last_slot_ms', 0 }, { 'fired', 'fired', 0 },
    { 'skipped', 'skipped', 0 }, { 'missed', 'missed', 0 } }) do
    s[f[1]], ok = num_field(m, f[2], f[3], false)
    if not ok then
      return nil, E_SCHED_BAD
    end
  end
  s.fired, s.skipped, s.missed = s.fired or 0, s.skipped or 0, s.missed or 0
  if m.overlap ~= 'allow' and m.overlap ~= 'skip' then
    return nil, E_SCHED_BAD
  end
  s.skip = m.overlap == 'skip'
  if m.catchup ~= 'none' and m.catchup ~= 'one' and m.catchup ~= 'all' then
    return nil, E_SCHED_BAD
  end
  s.catchup = m.catchup
  if m.state ~= 'active' and m.state ~= 'paused' and m.state ~= 'done' then
    return nil, E_SCHED_BAD
  end
  s.state = m.state
  if s.state ~= 'done' and not s.next then
    return nil, E_SCHED_BAD
  end
  if s.last then
    s.last_id = m.last_id or ''
  end
  return s
end

-- slot_after is the schedule's first slot after prev (nil: none).
local function slot_after(s, prev)
  if prev < s.anchor then
    return s.anchor
  end
  local k = math.floor((prev - s.anchor) / s.every) + 1
  if k > math.floor((MAX_SCORE - s.anchor) / s.every) then
    return nil
  end
  return s.anchor + k * s.every
end

local function first_from(s, t)
  if s.start and t < s.start then
    t = s.start
  end
  return slot_after(s, t - 1)
end

local function set_next(s, n)
  if not n or n > MAX_SLOT or (s.end_ and n > s.end_) or (s.limit and s.fired >= s.limit) then
    s.state, s.next = 'done', nil
  else
    s.next = n
  end
end

local function sched_score(s)
  if s.state ~= 'active' or not s.next then
    return MAX_SCORE
  end
  return s.next
end

local function progress(s)
  local fv = { 'state', s.state }
  if s.next then
    fv[#fv + 1] = 'next_ms'
    fv[#fv + 1] = score_str(s.next)
  end
  if s.last then
    fv[#fv + 1] = 'last_slot_ms'
    fv[#fv + 1] = score_str(s.last)
    fv[#fv + 1] = 'last_id'
    fv[#fv + 1] = s.last_id
  end
  for _, f in ipairs({ 'fired', 'skipped', 'missed' }) do
    fv[#fv + 1] = f
    fv[#fv + 1] = score_str(s[f])
  end
  return fv
end

local function write_progress(k, s)
  redis.call('HSET', s.key, unpack(progress(s)))
  if not s.next then
    redis.call('HDEL', s.key, 'next_ms')
  end
  redis.call('ZADD', k.sched, score_str(sched_score(s)), s.name)
end

local function sched_name_arg(args)
  if not valid_sched_name(args[1]) then
    return nil, E_SCHED_NAME
  end
  return args[1]
end

-- EMQ.SCHEDULE q name (EVERY interval_ms | CRON spec [TZ zone]) payload [options]
verb('emq_schedule', 'emq.schedule', -6, {}, function(k, args)
  local name, e = sched_name_arg(args)
  if not name then
    return err(e)
  end
  local s = { name = name, key = k.schedp .. name, catchup = 'one', skip = false }
  local kind, i = string.upper(args[2]), 4
  if kind == 'EVERY' then
    local v
    v, e = int_arg(args[3], 1, 'interval_ms')
    if not v then
      return err(e)
    end
    if cmp_ll(v, '9007199254740991') > 0 then
      return err('ERR interval_ms is out of range')
    end
    -- at least 1000 ms, emqd's floor (docs/verbs.md §4.22.1)
    if cmp_ll(v, '1000') < 0 then
      return err('ERR interval_ms must be at least 1000')
    end
    s.every = tonumber(v)
  elseif kind == 'CRON' then
    return err(E_CRON)
  else
    return err(E_SYNTAX)
  end
  s.payload = args[i]
  local seen = {}
  i = i + 1
  while i <= #args do
    if i + 1 > #args then
      return err(E_SYNTAX)
    end
    local opt, v = string.upper(args[i]), args[i + 1]
    if seen[opt] then
      return err(E_SYNTAX)
    end
    seen[opt] = true
    local n
    if opt == 'START' or opt == 'END' then
      n, e = int_arg(v, 0, opt == 'START' and 'start_ms' or 'end_ms')
      if not n then
        return err(e)
      end
      if opt == 'START' then
        s.start = tonumber(n)
      else
        s.end_ = tonumber(n)
      end
    elseif opt == 'LIMIT' then
      n, e = int_arg(v, 1, 'limit')
      if not n then
        return err(e)
      end
      s.limit = tonumber(n)
    elseif opt == 'OVERLAP' then
      local w = string.upper(v)
      if w ~= 'ALLOW' and w ~= 'SKIP' then
        return err(E_SYNTAX)
      end
      s.skip = w == 'SKIP'
    elseif opt == 'CATCHUP' then
      local w = string.lower(v)
      if w ~= 'none' and w ~= 'one' and w ~= 'all' then
        return err(E_SYNTAX)
      end
      s.catchup = w
    else
      return err(E_SYNTAX)
    end
    i = i + 2
  end
  if s.start and s.end_ and s.end_ < s.start then
    return err(E_SCHED_END)
  end
  if zset_kind(k.sched) == WRONG then
    return err(E_WRONGTYPE)
  end
  local old
  old, e = read_sched(s.key, name)
  if old == nil then
    return err(e)
  end
  local mk, seq = read_field(k.meta, 'sched_seq')
  if mk == WRONG then
    return err(E_WRONGTYPE)
  end
  local now = now_ms()
  s.state, s.fired, s.skipped, s.missed = 'active', 0, 0, 0
  local new_sid = false
  if old then
    s.sid, s.last, s.last_id = old.sid, old.last, old.last_id
    if old.state == 'paused' then
      s.state = 'paused'
    end
  else
    local n = 0
    if seq then
      if not ll(seq) or string.byte(seq, 1) == 45 then
        return err(E_HASH_NOT_INT)
      end
      n = tonumber(seq)
    end
    if n >= MAX_SID then
      return err(E_SCHED_SPACE)
    end
    s.sid, new_sid = n + 1, true
  end
  s.anchor = s.start or now
  local from = now + 1
  if s.last and s.last >= from then
    from = s.last + 1
  end
  set_next(s, first_from(s, from))
  if new_sid then
    redis.call('HSET', k.meta, 'sched_seq', score_str(s.sid))
  end
  redis.call('DEL', s.key)
  local fv = { 'sid', score_str(s.sid), 'kind', 'every', 'every_ms', score_str(s.every), 'anchor_ms', score_str(s.anchor),
    'payload', s.payload }
  if s.start then
    fv[#fv + 1] = 'start_ms'
    fv[#fv + 1] = score_str(s.start)
  end
  if s.end_ then
    fv[#fv + 1] = 'end_ms'
    fv[#fv + 1] = score_str(s.end_)
  end
  if s.limit then
    fv[#fv + 1] = 'limit'
    fv[#fv + 1] = score_str(s.limit)
  end
  fv[#fv + 1] = 'overlap'
  fv[#fv + 1] = s.skip and 'skip' or 'allow'
  fv[#fv + 1] = 'catchup'
  fv[#fv + 1] = s.catchup
  for _, x in ipairs(progress(s)) do
    fv[#fv + 1] = x
  end
  redis.call('HSET', s.key, unpack(fv))
  redis.call('ZADD', k.sched, score_str(sched_score(s)), name)
  return redis.status_reply('OK')
end)

local function sched_map(name, all)
  local m = { name = name }
  for i = 1, #all, 2 do
    m[all[i]] = all[i + 1]
  end
  return { map = m }
end

verb('emq_schedule_get', 'emq.schedule.get', 3, { 'no-writes' }, function(k, args)
  local name, e = sched_name_arg(args)
  if not name then
    return err(e)
  end
  local all = redis.pcall('HGETALL', k.schedp .. name)
  if all.err then
    return err(E_WRONGTYPE)
  end
  if #all == 0 then
    return false
  end
  return sched_map(name, all)
end)

verb('emq_schedule_list', 'emq.schedule.list', -2, { 'no-writes' }, function(k, args)
  local offset, count, e = '0', 100, nil
  if #args == 2 then
    offset, e = int_arg(args[1], 0, 'offset')
    if not offset then
      return err(e)
    end
    local c
    c, e = int_arg(args[2], 1, 'count')
    if not c then
      return err(e)
    end
    if cmp_ll(c, LIST_MAX) > 0 then
      return err('ERR count must be at most 1000')
    end
    count = tonumber(c)
  elseif #args ~= 0 then
    return err(E_SYNTAX)
  end
  local size = redis.pcall('ZCARD', k.sched)
  if type(size) == 'table' then
    return err(E_WRONGTYPE)
  end
  if cmp_ll(offset, string.format('%d', size)) >= 0 then
    return {}
  end
  local from = tonumber(offset)
  local names = redis.call('ZRANGE', k.sched, from, from + count - 1)
  local out = {}
  for i = 1, #names do
    local all = redis.pcall('HGETALL', k.schedp .. names[i])
    if all.err then
      return err(E_WRONGTYPE)
    end
    out[i] = { names[i], #all == 0 and false or sched_map(names[i], all) }
  end
  return out
end)

verb('emq_schedule_del', 'emq.schedule.del', 3, {}, function(k, args)
  local name, e = sched_name_arg(args)
  if not name then
    return err(e)
  end
  if zset_kind(k.sched) == WRONG then
    return err(E_WRONGTYPE)
  end
  local key = k.schedp .. name
  local hk = hash_kind(key)
  if hk == WRONG then
    return err(E_WRONGTYPE)
  end
  local in_set = redis.call('ZSCORE', k.sched, name)
  if hk == ABSENT and not in_set then
    return 0
  end
  if hk == OK then
    redis.call('DEL', key)
  end
  if in_set then
    redis.call('ZREM', k.sched, name)
  end
  return 1
end)

local function pause_resume(k, args, pause)
  local name, e = sched_name_arg(args)
  if not name then
    return err(e)
  end
  if zset_kind(k.sched) == WRONG then
    return err(E_WRONGTYPE)
  end
  local s
  s, e = read_sched(k.schedp .. name, name)
  if s == nil then
    return err(e)
  end
  if not s then
    return err(E_NO_SCHED)
  end
  if pause and s.state == 'active' then
    s.state = 'paused'
  elseif not pause and s.state == 'paused' then
    s.state = 'active'
    local now = now_ms()
    if s.next < now then
      set_next(s, slot_after(s, now - 1))
    end
  else
    return redis.status_reply('OK')
  end
  write_progress(k, s)
  return redis.status_reply('OK')
end

verb('emq_schedule_pause', 'emq.schedule.pause', 3, {}, function(k, args)
  return pause_resume(k, args, true)
end)

verb('emq_schedule_resume', 'emq.schedule.resume', 3, {}, function(k, args)
  return pause_resume(k, args, false)
end)

-- EMQ.SCHEDULE.FIRE q [limit] (docs/verbs.md §4.22.4, §4.22.5).
verb('emq_schedule_fire', 'emq.schedule.fire', -2, { 'allow-oom' }, function(k, args)
  -- limit_arg is the validated text for ZRANGEBYSCORE: tonumber turns
  -- 9223372036854775807 into a double, which the server refuses as LIMIT.
  local limit, limit_arg = 100, '100'
  if #args == 1 then
    local v, e = int_arg(args[1], 1, 'limit')
    if not v then
      return err(e)
    end
    limit, limit_arg = tonumber(v), v
  elseif #args > 1 then
    return err(E_SYNTAX)
  end
  if zset_kind(k.sched) == WRONG then
    return err(E_WRONGTYPE)
  end
  local now = now_ms()
  local due = redis.call('ZRANGEBYSCORE', k.sched, '-inf', score_str(now), 'LIMIT', 0, limit_arg)
  if #due == 0 then
    return 0
  end
  local live, touched, orphans = {}, {}, {}
  for _, name in ipairs(due) do
    local s, e = read_sched(k.schedp .. name, name)
    if s == nil then
      return err(e)
    end
    if not s or s.state ~= 'active' then
      orphans[#orphans + 1] = { name, s }
    else
      touched[#touched + 1] = s
      if s.next <= now then
        live[#live + 1] = s
      end
    end
  end
  if zset_kind(k.pending) == WRONG then
    return err(E_WRONGTYPE)
  end
  -- The occurrences enter the default lane through seam 1 (docs/verbs.md
  -- §4.26): the lane is read before the first write.
  local lt, le = lanes_read(k, now)
  if not lt then
    return err(le)
  end
  if lt.on then
    local _, e = lt_lane(lt, DEFAULT_LANE)
    if e then
      return err(e)
    end
  end
  local fired_ids, n_fired = {}, 0
  local function running(id)
    if fired_ids[id] then
      return true
    end
    local st = redis.pcall('HGET', k.job .. id, 'state')
    return st == 'pending' or st == 'active' or st == 'scheduled'
  end
  local budget = limit
  while budget > 0 and #live > 0 do
    local bi = 1
    for j = 2, #live do
      local a, b = live[j], live[bi]
      if a.next < b.next or (a.next == b.next and bytes_lt(a.name, b.name)) then
        bi = j
      end
    end
    local s = table.remove(live, bi)
    local slot = s.next
    budget = budget - 1
    local again = false
    if slot > MAX_SLOT or (s.end_ and slot > s.end_) or (s.limit and s.fired >= s.limit) then
      set_next(s, nil)
    else
      local fire = true
      if now - slot >= LATE_MS and s.catchup ~= 'all' then
        local last_late = now - LATE_MS
        if s.end_ and s.end_ < last_late then
          last_late = s.end_
        end
        local cnt = math.floor((last_late - slot) / s.every)
        local L = slot + cnt * s.every
        s.missed = s.missed + cnt
        if s.catchup == 'none' then
          s.missed = s.missed + 1
          set_next(s, slot_after(s, L))
          again = s.next and s.next <= now
          fire = false
        else
          slot = L
        end
      end
      if fire then
        local id = occ_id(s.sid, slot)
        if s.skip and s.last and running(s.last_id) then
          s.skipped = s.skipped + 1
        else
          local row = k.job .. id
          if redis.call('EXISTS', row) == 0 and not fired_ids[id] then
            redis.call('HSET', row, 'state', 'pending', 'attempts', '0', 'payload', s.payload,
              'enqueued_at', score_str(now), 'schedule', s.name, 'slot_ms', score_str(slot))
            redis.call('ZADD', lane_into(lt, k, id, nil, 0), 0, id)
            event(k, 'enqueued', id)
          end
          fired_ids[id] = true
          s.fired = s.fired + 1
          n_fired = n_fired + 1
          s.last, s.last_id = slot, id
        end
        set_next(s, slot_after(s, slot))
        again = s.next and s.next <= now
      end
    end
    if again then
      live[#live + 1] = s
    end
  end
  for _, s in ipairs(touched) do
    write_progress(k, s)
  end
  for _, o in ipairs(orphans) do
    if not o[2] then
      redis.call('ZREM', k.sched, o[1])
    else
      redis.call('ZADD', k.sched, score_str(sched_score(o[2])), o[1])
    end
  end
  -- Only the default lane changed (loaded before the first write), so the
  -- lane writes are computed here from the state the call read.
  lanes_apply(lanes_plan(lt))
  return n_fired
end)

-- ---------------------------------------------------------------------------
-- EMQ.DEBUG HELP, answered whether or not the clock may move (docs/verbs.md
-- §4.19): Valkey's container HELP layout.
local DEBUG_HELP = {
  'EMQ.DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
  'CLOCK ADVANCE <ms>',
  '    Move the server clock forward by <ms> milliseconds (leases, due times,',
  '    minted ids and BLOCK timeouts follow it). Needs enable-debug-command yes.',
  'HELP',
  '    Print this help.',
}

-- EMQ.DEBUG CLOCK ADVANCE ms (and, test-only, CLOCK SET ms): refused as
-- Valkey refuses DEBUG when enable-debug-command is off, unless the library
-- was loaded for tests (cluster.DebugClock). The clock is this node's.

redis.register_function {
  function_name = 'emq_debug',
  flags = { 'no-writes' },
  callback = function(keys_, args)
    local all = {}
    for _, v in ipairs(keys_) do
      all[#all + 1] = v
    end
    for _, v in ipairs(args) do
      all[#all + 1] = v
    end
    if #all < 1 then
      return err(e_arity('emq.debug'))
    end
    local sub1 = string.upper(all[1])
    if sub1 == 'HELP' then
      if #all ~= 1 then
        return err(e_arity('emq.debug|help'))
      end
      local out = {}
      for i, line in ipairs(DEBUG_HELP) do
        out[i] = redis.status_reply(line)
      end
      return out
    end
    if sub1 ~= 'CLOCK' then
      return err('ERR unknown subcommand \'' .. all[1] .. '\'. Try EMQ.DEBUG HELP.')
    end
    if #all ~= 3 then
      return err(e_arity('emq.debug|clock'))
    end
    if not DEBUG_CLOCK then
      return err(E_DEBUG_OFF)
    end
    local sub = string.upper(all[2])
    if sub ~= 'ADVANCE' and sub ~= 'SET' then
      return err(E_SYNTAX)
    end
    local v, e = int_arg(all[3], 0, 'ms')
    if not v then
      return err(e)
    end
    local ms = tonumber(v)
    if sub == 'ADVANCE' and ms > MAX_SCORE - math.max(now_ms(), 0) then
      return err('ERR ms is out of range')
    end
    if sub == 'SET' then
      clock_pin = ms
    elseif clock_pin then
      clock_pin = clock_pin + ms
    else
      clock_offset = clock_offset + ms
    end
    return redis.status_reply('OK')
  end,
}
