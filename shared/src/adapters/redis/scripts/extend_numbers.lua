-- Raise the numbers the queue may hand out to a ceiling the events table now holds (reserved
-- there first), and free the top-up lock. Only on an event that exists: after a loss the
-- restore sets the counter from the durable ceiling itself.
-- KEYS: settings, numbers_lock
-- ARGV: ceiling, now_ms, block
-- Reply: the ceiling in force | 0 (no such event)
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[2])
  return 0
end
local s = redis.call('HMGET', KEYS[1], 'number_ceiling', 'next_number')
local ceiling = math.max(tonumber(s[1]) or 0, tonumber(ARGV[1]))
redis.call('HSET', KEYS[1], 'number_ceiling', string.format('%.0f', ceiling),
  'number_block', ARGV[3], 'numbers_reserved_at_ms', ARGV[2],
  'numbers_reserved_from', s[2] or '0')
redis.call('DEL', KEYS[2])
return ceiling
