-- The seat map as shoppers see it: the layout summary and the available bitset, in one read.
-- KEYS: layout, seats_available
-- Reply: {summary JSON or false, bitset or false}
local summary = redis.call('HGET', KEYS[1], 'summary')
if not summary then return {false, false} end
return {summary, redis.call('GET', KEYS[2])}
