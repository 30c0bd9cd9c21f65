-- Close an event's queue (sold out): only if the event exists.
-- KEYS: settings
-- Reply: 1 closed | 0 no such event
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'closed')
return 1
