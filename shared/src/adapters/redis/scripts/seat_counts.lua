-- How many seats are available and sold (the rest are held), for the sold-out check.
-- KEYS: layout, seats_available, seats_sold
-- Reply: {summary JSON or false, 1 if the bitsets exist else 0, available, sold}
local summary = redis.call('HGET', KEYS[1], 'summary')
if not summary then return {false, 0, 0, 0} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {summary, 0, 0, 0} end
return {summary, 1, redis.call('BITCOUNT', KEYS[2]), redis.call('BITCOUNT', KEYS[3])}
