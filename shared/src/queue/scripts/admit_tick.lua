-- One admission tick for one event: the whole check-and-change, atomically, so any number of
-- admitters running at once (EventBridge delivers at least once) exceed neither cap nor rate.
-- KEYS: settings, queue, active, admission
-- ARGV: now_ms, forget_lapsed_after_ms
-- Reply: {admitted, active_after, waiting_after} | {"no_event"}
local settings = redis.call('HMGET', KEYS[1], 'state', 'opens_at_ms', 'max_active', 'admit_per_sec', 'session_ms')
local state = settings[1]
if not state then return {'no_event'} end
local opens_at, max_active = tonumber(settings[2]), tonumber(settings[3])
local rate, session = tonumber(settings[4]), tonumber(settings[5])
local now, forget_after = tonumber(ARGV[1]), tonumber(ARGV[2])

-- Lapsed admissions stay a while so their owner's poll can say "expired"; then they go.
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. (now - forget_after))
local active = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf')

local admitted = 0
if state == 'open' and now >= opens_at then
  -- The rate budget: a token bucket holding at most one second's admissions, refilled here by
  -- the time elapsed. Several admitters share it; a clock behind the last refill adds nothing.
  local bucket = redis.call('HMGET', KEYS[4], 'tokens', 'refilled_at_ms')
  local tokens, refilled_at = tonumber(bucket[1]), tonumber(bucket[2])
  if not tokens then
    tokens, refilled_at = rate, now
  elseif now > refilled_at then
    tokens = math.min(rate, tokens + (now - refilled_at) * rate / 1000)
    refilled_at = now
  end
  local budget = math.min(max_active - active, math.floor(tokens))

  if budget > 0 then
    local popped = redis.call('ZPOPMIN', KEYS[2], budget)
    local expires = now + session
    local batch = {}
    for i = 1, #popped, 2 do
      batch[#batch + 1] = expires
      batch[#batch + 1] = popped[i]
      if #batch >= 1000 then -- stay far below Lua's unpack() limit
        redis.call('ZADD', KEYS[3], unpack(batch))
        batch = {}
      end
    end
    if #batch > 0 then redis.call('ZADD', KEYS[3], unpack(batch)) end
    admitted = #popped / 2
  end

  redis.call('HSET', KEYS[4], 'tokens', tostring(tokens - admitted), 'refilled_at_ms', tostring(refilled_at))

  -- Measure the admission rate for ETAs, over windows of at least 10 s, only while a backlog
  -- remains (an empty queue admits slowly for lack of customers, which says nothing of the pace).
  local waiting = redis.call('ZCARD', KEYS[2])
  local window = redis.call('HMGET', KEYS[4], 'window_start_ms', 'window_admitted', 'measured_rate')
  local window_start, window_admitted = tonumber(window[1]), tonumber(window[2]) or 0
  if waiting == 0 or not window_start or window_start > now then
    redis.call('HSET', KEYS[4], 'window_start_ms', now, 'window_admitted', 0)
  else
    window_admitted = window_admitted + admitted
    if now - window_start >= 10000 then
      local measured = window_admitted * 1000 / (now - window_start)
      if window[3] then measured = (tonumber(window[3]) + measured) / 2 end
      redis.call('HSET', KEYS[4], 'measured_rate', tostring(measured),
        'window_start_ms', now, 'window_admitted', 0)
    else
      redis.call('HSET', KEYS[4], 'window_admitted', window_admitted)
    end
  end
end

return {admitted, active + admitted, redis.call('ZCARD', KEYS[2])}
