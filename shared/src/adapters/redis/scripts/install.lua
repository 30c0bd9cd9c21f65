-- Install rebuilt bitsets, then lay over them the changes the stream brought meanwhile (they
-- are newer than, or as new as, what the rebuild read). Only if the bitsets are still missing
-- and the layout is still the one they were built for.
-- KEYS: layout, seats_available, seats_sold, seats_pending
-- ARGV: version, available bitset, sold bitset
-- Reply: 1 installed | 0 the bitsets existed already | -1 the layout changed meanwhile
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return -1 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[3], ARGV[3])
local pending = redis.call('HGETALL', KEYS[4])
for i = 1, #pending, 2 do
  local index = tonumber(pending[i])
  local code = pending[i + 1]
  redis.call('SETBIT', KEYS[2], index, code == 'A' and 1 or 0)
  redis.call('SETBIT', KEYS[3], index, code == 'S' and 1 or 0)
end
redis.call('DEL', KEYS[4])
return 1
