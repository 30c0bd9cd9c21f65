-- Where a customer stands: admitted, waiting (number and position), in the pre-queue, expired,
-- closed, or unknown. An admitted customer who has not claimed yet claims here: this is the
-- claim, and it starts the session.
-- KEYS: settings, queue, active, admission, offered, prequeue, entrants
-- ARGV: customer, now_ms
-- Reply: {"no_event"} | {"not_found", serving, restored_at_ms|""} | {"admitted", expires_ms}
--      | {"expired"} | {"closed"} | {"pre_queue", opens_at_ms, draw_seed}
--      | {"waiting", number, position, serving, advance_rate|"", admit_per_sec, opens_at_ms}
local s = redis.call('HMGET', KEYS[1], 'state', 'opens_at_ms', 'admit_per_sec', 'session_ms',
  'drawn', 'restored_at_ms', 'draw_seed')
local state = s[1]
if not state then return {'no_event'} end
local customer, now = ARGV[1], tonumber(ARGV[2])

local admitted_until = redis.call('ZSCORE', KEYS[3], customer)
if admitted_until and tonumber(admitted_until) > now then return {'admitted', admitted_until} end
local offer = redis.call('ZSCORE', KEYS[5], customer)
if offer and tonumber(offer) > now then
  local expires = string.format('%.0f', now + tonumber(s[4]))
  redis.call('ZREM', KEYS[5], customer)
  redis.call('ZADD', KEYS[3], expires, customer)
  return {'admitted', expires}
end

local admission = redis.call('HMGET', KEYS[4], 'serving', 'advance_rate')
local number = redis.call('ZSCORE', KEYS[2], customer)
if number then
  if state == 'closed' then return {'closed'} end
  return {'waiting', number, tostring(redis.call('ZRANK', KEYS[2], customer)),
    admission[1] or '0', admission[2] or '', s[3], s[2]}
end
if redis.call('SISMEMBER', KEYS[6], customer) == 1
    or (not s[5] and redis.call('SISMEMBER', KEYS[7], customer) == 1) then
  if state == 'closed' then return {'closed'} end
  return {'pre_queue', s[2], s[7] or ''}
end

if admitted_until or offer then return {'expired'} end
return {'not_found', admission[1] or '0', s[6] or ''}
