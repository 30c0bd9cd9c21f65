-- Store an event's public status, unless a newer one is stored: the admitter's ticks, the
-- expiry sweep's and an operator's change may publish at once, and an older status written last
-- would show a closed event as open for good (nobody ticks a closed event again).
-- KEYS: status, admission
-- ARGV: status JSON, its time (Unix ms)
-- Reply: 1 stored | 0 a newer one is there
local stored_at = tonumber(redis.call('HGET', KEYS[2], 'status_at_ms'))
if stored_at and stored_at > tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'status_at_ms', ARGV[2])
return 1
