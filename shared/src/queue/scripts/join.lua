-- Join an event's queue, or keep the place already held. One atomic step.
-- KEYS: settings, queue, active, admission
-- ARGV: customer, now_ms
-- Reply: {"no_event"} | {"closed"} | {"no_draw_seed"} | {"admitted", expires_ms}
--      | {"waiting", position, newly_queued (0|1), measured_rate|"", admit_per_sec, opens_at_ms}
local settings = redis.call('HMGET', KEYS[1], 'state', 'opens_at_ms', 'admit_per_sec')
local state, opens_at_ms, rate = settings[1], settings[2], settings[3]
if not state then return {'no_event'} end

local customer, now = ARGV[1], tonumber(ARGV[2])

-- Already admitted and still shopping: joining again changes nothing.
local admitted_until = redis.call('ZSCORE', KEYS[3], customer)
if admitted_until and tonumber(admitted_until) > now then
  return {'admitted', admitted_until}
end

if state ~= 'open' then return {'closed'} end

local newly_queued = 0
local position = redis.call('ZRANK', KEYS[2], customer)
if not position then
  if now < tonumber(opens_at_ms) then
    -- Before opening: the pre-queue draw, a pure function of the event's secret seed and the
    -- customer, so leaving and joining again lands on exactly the same score (trying again
    -- cannot improve a place). The first 13 hex digits of the SHA-1 are a 52-bit integer, exact
    -- in a double; negated and minus 1 it lies in [-2^52, -1], below every sequence number.
    local seed = redis.call('HGET', KEYS[1], 'draw_seed')
    if not seed then return {'no_draw_seed'} end
    local draw = tonumber(string.sub(redis.sha1hex(seed .. '\n' .. customer), 1, 13), 16)
    -- '%.0f' writes the integer in full (tostring would round it to 14 digits).
    redis.call('ZADD', KEYS[2], 'NX', string.format('%.0f', -draw - 1), customer)
    position = redis.call('ZRANK', KEYS[2], customer)
  else
    -- After: the next sequence number, so arrival order is kept even within one millisecond.
    -- The newest sequence number is the highest score: the new entry is last.
    redis.call('ZADD', KEYS[2], 'NX', redis.call('HINCRBY', KEYS[1], 'seq', 1), customer)
    position = redis.call('ZCARD', KEYS[2]) - 1
  end
  -- A lapsed admission is replaced by the new place in the queue.
  if admitted_until then redis.call('ZREM', KEYS[3], customer) end
  newly_queued = 1
end

local measured = redis.call('HGET', KEYS[4], 'measured_rate') or ''
return {'waiting', tostring(position), tostring(newly_queued), measured, rate, opens_at_ms}
