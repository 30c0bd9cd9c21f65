-- Where a customer stands: admitted, waiting (with position), expired, closed, or unknown.
-- The position is the rank in the queue, pre-queue or not; the HTTP answers withhold it before
-- opening (see shared/src/http/queue_api.rs), and tests read it with a clock past opening.
-- KEYS: settings, queue, active, admission
-- ARGV: customer, now_ms
-- Reply: {"no_event"} | {"not_found"} | {"admitted", expires_ms} | {"expired"} | {"closed"}
--      | {"waiting", position, measured_rate|"", admit_per_sec, opens_at_ms}
local settings = redis.call('HMGET', KEYS[1], 'state', 'opens_at_ms', 'admit_per_sec')
local state, opens_at, rate = settings[1], settings[2], settings[3]
if not state then return {'no_event'} end

local customer, now = ARGV[1], tonumber(ARGV[2])

local admitted_until = redis.call('ZSCORE', KEYS[3], customer)
if admitted_until and tonumber(admitted_until) > now then
  return {'admitted', admitted_until}
end

local position = redis.call('ZRANK', KEYS[2], customer)
if position then
  if state ~= 'open' then return {'closed'} end
  local measured = redis.call('HGET', KEYS[4], 'measured_rate') or ''
  return {'waiting', tostring(position), measured, rate, opens_at}
end

if admitted_until then return {'expired'} end
return {'not_found'}
