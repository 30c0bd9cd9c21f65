-- Apply seat changes from the seats table's stream, in order. A change for another layout
-- version than the current one is stale (the event was re-seeded) and ignored. While the
-- bitsets are missing (lost with the cache, being rebuilt) the changes are kept aside, newest
-- per seat, for the rebuild to lay over what it read.
-- KEYS: layout, seats_available, seats_sold, seats_pending
-- ARGV: version, then pairs of (seat index, status code A | H | S)
-- Reply: changes applied | kept aside (negative) | 0 for a stale version
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
local count = (#ARGV - 1) / 2
if redis.call('EXISTS', KEYS[2]) == 0 then
  for i = 2, #ARGV, 2 do
    redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
  end
  redis.call('EXPIRE', KEYS[4], 86400)
  return -count
end
for i = 2, #ARGV, 2 do
  local index = tonumber(ARGV[i])
  local code = ARGV[i + 1]
  redis.call('SETBIT', KEYS[2], index, code == 'A' and 1 or 0)
  redis.call('SETBIT', KEYS[3], index, code == 'S' and 1 or 0)
end
return count
