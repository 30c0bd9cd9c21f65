-- One admission tick for one event: the whole check-and-change, atomically, so any number of
-- admitters running at once (EventBridge delivers at least once) exceed neither cap nor rate.
-- KEYS: settings, queue, active, admission, rate_window
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
  -- The rate budget: admissions in the last second, from the ticks recorded in that second.
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - 1000)
  local recent = 0
  for _, tick in ipairs(redis.call('ZRANGE', KEYS[5], 0, -1)) do
    recent = recent + tonumber(string.match(tick, ':(%d+)$'))
  end
  local budget = math.min(max_active - active, rate - recent)

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

  if admitted > 0 then
    local tick = redis.call('HINCRBY', KEYS[4], 'tick_seq', 1)
    redis.call('ZADD', KEYS[5], now, tick .. ':' .. admitted)
  end

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
